"""ChoiceRace: a list of Inductor's choices raced, and its finalists held, through the tuning engine.

Inductor's `AlgorithmSelectorCache.benchmark_choices` measures each choice of
an op (GEMM templates, extern cuBLAS calls, Triton templates) in turn and
keeps the fastest. Wrapped (`race_choices`), it still measures each choice
by its own code, one at a time, so its handling of a failing choice (inf)
stands; what changes is that each measurement (gpu_benchmark.py) races the
lowest CI upper bound so far (the engine's RaceBound): a choice surely slower
than the best stops after a few samples. Then the finalists, the choices tied
with the fastest, are measured again under sustained load (the engine's tie
round) and ranked as hb.tune ranks them.

The numbers Inductor gets back keep that ranking: a choice that is not a
finalist keeps its screen median; the finalists' numbers are the fastest
screen median scaled by each one's sustained median over the winner's, so
the winner's is the lowest and the others keep their measured ratios.
"""
from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._device.device import Device
from .._measure.callable import callable_device
from .._measure.result import Result
from .._tuning.contenders import CallContender
from .._tuning.engine import Policy
from .._tuning.racing import RaceBound
from .._tuning.ranking import ranked_indices
from .._tuning.ties import hold_ties
from .._tuning.trial import Trial
from ..errors import Error

__all__ = ["ChoiceRace", "race_choices"]

log = logging.getLogger(__name__)
_active = threading.local()  # the race open on this thread: Inductor benchmarks a list on the calling thread


class ChoiceRace:
    """One list of choices: racing's bound, and each choice's measurements (the callable and its result)."""

    def __init__(self, policy: Policy, device: Device | None) -> None:
        self.policy, self.device = policy, device
        self.bound = RaceBound(policy.race)
        self.label = ""
        self.calls: dict[str, list[tuple[Callable[[], object], Result]]] = {}

    @staticmethod
    def current() -> ChoiceRace | None:
        """The race open on this thread, if any."""
        return getattr(_active, "race", None)

    @contextmanager
    def choice(self, label: str) -> Iterator[None]:
        """The race open on this thread while `label` is measured."""
        self.label = label
        self.calls[label] = []
        _active.race = self
        try:
            yield
        finally:
            _active.race = None

    def record(self, call: Callable[[], object], result: Result) -> None:
        """One measurement of the current choice; its CI upper bound lowers the bound."""
        self.calls[self.label].append((call, result))
        self.bound.lower(result.ci_us[1])

    def finalists_held(self, timings_ms: dict[str, float]) -> dict[str, float]:
        """The tie round over the choices measured once each by pyhipbench; `timings_ms` with the finalists'
        numbers set (the module's docstring says how)."""
        measured = [label for label, calls in self.calls.items()
                    if len(calls) == 1 and math.isfinite(timings_ms.get(label, math.inf))]
        device = callable_device(self.device)
        trials = []
        for label in measured:
            call, result = self.calls[label][0]
            trial = Trial(label, CallContender(call, device, label, graph=False))
            trial.result = result
            trials.append(trial)
        hold_ties(trials, self.policy.options, self.policy.tie_hold_s, self.policy.race)
        order = ranked_indices(trials)
        held = [t for t in trials if t.sustained is not None]
        out = dict(timings_ms)
        if held:
            winner = trials[order[0]]
            assert winner.sustained is not None and all(t.result is not None for t in held)
            fastest_ms = min(t.result.median_us for t in held if t.result is not None) / 1000
            for trial in held:
                sustained = trial.sustained
                assert sustained is not None
                out[trial.label] = fastest_ms * sustained.median_us / winner.sustained.median_us
        return out


def race_choices(original: Callable[..., dict[Any, float]], policy: Policy,
                 device: Device | None) -> Callable[..., dict[Any, float]]:
    """`benchmark_choices(cls, choices, autotune_args, is_collective=False)` raced: `original` (Inductor's,
    unbound) called for one choice at a time. Collective choices (timed across ranks by Inductor itself) and a
    list inside a list go to `original` as they are."""

    def benchmark_choices(cls: type, choices: Sequence[Any], autotune_args: Any,
                          is_collective: bool = False) -> dict[Any, float]:
        if is_collective or ChoiceRace.current() is not None:
            return original(cls, choices, autotune_args, is_collective)
        race = ChoiceRace(policy, device)
        labels = _labels(choices)
        timings_ms: dict[str, float] = {}
        for label, choice in zip(labels, choices):
            with race.choice(label):
                try:
                    timings_ms[label] = original(cls, [choice], autotune_args, is_collective)[choice]
                except Error as e:  # pyhipbench's refusal of a choice (one that launches nothing): inf, as
                    # Inductor scores a choice that fails, the others kept
                    log.warning("choice %s: %s: %s; it is ignored (inf)", label, type(e).__name__, e)
                    timings_ms[label] = math.inf
        unmeasured = [label for label in labels if not race.calls[label] and math.isfinite(timings_ms[label])]
        if unmeasured:
            log.warning("choices %s were timed by torch's benchmarker, not pyhipbench (a path the hook does not "
                        "reach); their numbers come from another clock", ", ".join(unmeasured))
        held = race.finalists_held(timings_ms)
        return {choice: held[label] for label, choice in zip(labels, choices)}
    return benchmark_choices


def _labels(choices: Sequence[Any]) -> list[str]:
    """A label per choice, unique: its name, numbered where two share one."""
    names = [str(getattr(choice, "name", None) or type(choice).__name__) for choice in choices]
    return [f"{name}#{i}" if names.count(name) > 1 else name for i, name in enumerate(names)]
