"""ChoiceRace: a list of Inductor's choices raced, and its finalists held, through the tuning engine.

Inductor's `AlgorithmSelectorCache.benchmark_choices` measures each choice of
an op (GEMM templates, extern cuBLAS calls, Triton templates) in turn and
keeps the fastest. Wrapped (`race_choices`), it still measures each choice
by its own code, one at a time, so its handling of a failing choice (inf)
stands; what changes is that each measurement (gpu_benchmark.py) races the
lowest CI upper bound so far (the engine's RaceBound): a choice surely slower
than the best stops after a few samples. Then the finalists, the choices tied
with the fastest, are measured again under sustained load (the engine's tie
round) and ranked as hb.tune ranks them. Each hold goes through Inductor's
own code for that one choice again, as its screen did: Inductor makes the
callable, measures it (gpu_benchmark.py, with the hold's options) and cleans
up after it (a CUTLASS choice's library is closed after each benchmark), and
a choice that fails there loses its hold, not the compile.

The numbers Inductor gets back keep that ranking: a choice that is not a
finalist keeps its screen median; the finalists' numbers are the fastest
screen median scaled by each one's sustained median over the winner's, so
the winner's is the lowest and the others keep their measured ratios.
"""
from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._device.device import Device
from .._measure.options import BenchOptions
from .._measure.result import Result
from .._tuning.engine import Policy
from .._tuning.racing import RaceBound
from .._tuning.ranking import reported_us
from .._tuning.ties import hold_ties
from .._tuning.trial import Trial
from ..errors import BenchError, Error
from ._ledger import Ledger

__all__ = ["ChoiceRace", "race_choices"]

log = logging.getLogger(__name__)
_active = threading.local()  # the race open on this thread: Inductor benchmarks a list on the calling thread


class ChoiceRace:
    """One list of choices: racing's bound, and each choice's measurements (the callable and its result).
    While a finalist is held, `holding` is the hold's options and `held` its result."""

    def __init__(self, policy: Policy, device: Device | None) -> None:
        self.policy, self.device = policy, device
        self.bound = RaceBound(policy.race)
        self.label = ""
        self.calls: dict[str, list[tuple[Callable[[], object], Result]]] = {}
        self.holding: BenchOptions | None = None
        self.held: Result | None = None
        self.listing: set[str] = set()  # choices whose benchmark measured a list of their own (a subgraph's)

    @staticmethod
    def current() -> ChoiceRace | None:
        """The race open on this thread, if any."""
        return getattr(_active, "race", None)

    @staticmethod
    def in_whole_list() -> bool:
        """A list Inductor measures whole (not raced) is being measured on this thread: its calls are choices."""
        return bool(getattr(_active, "whole_list", False))

    @contextmanager
    def choice(self, label: str, keep: bool = False) -> Iterator[None]:
        """The race open on this thread while `label` is measured (`keep`: its screen measurements kept, as
        while it is held)."""
        self.label = label
        if not keep:
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

    def record_hold(self, result: Result) -> None:
        self.held = result

    def finalists_held(self, timings_ms: dict[str, float],
                       benchmark_again: dict[str, Callable[[], float]]) -> dict[str, float]:
        """The tie round over the choices measured once each by pyhipbench, each hold made by
        `benchmark_again[label]()` (Inductor's benchmark of that choice); `timings_ms` with the finalists'
        numbers set (the module's docstring says how)."""
        measured = [label for label, calls in self.calls.items()
                    if len(calls) == 1 and math.isfinite(timings_ms.get(label, math.inf))]
        trials = []
        for label in measured:
            trial = Trial(label, _HeldChoice(self, label, benchmark_again[label]))
            trial.result = self.calls[label][0][1]
            trials.append(trial)
        hold_ties(trials, self.policy.options, self.policy.tie_hold_s, self.policy.race)
        out = dict(timings_ms)
        for trial, reported in zip(trials, reported_us(trials)):
            if trial.sustained is not None:
                out[trial.label] = reported / 1000
        return out


class _HeldChoice:
    """A finalist as the tie round measures it: Inductor's benchmark of the choice run again, the race
    holding the options it is given."""

    def __init__(self, race: ChoiceRace, label: str, benchmark: Callable[[], float]) -> None:
        self.race, self.label, self.benchmark = race, label, benchmark

    def start_compile(self) -> None:
        """Nothing: Inductor compiled it."""

    def finish_compile(self) -> str | None:
        return None

    def prepare(self) -> None:
        """Nothing ahead: Inductor makes the callable each time."""

    def measure(self, options: BenchOptions) -> Result:
        """The choice benchmarked by Inductor again, measured with `options`; BenchError where Inductor
        scored it a failure or pyhipbench did not measure it (the hold is lost, the screen's reading stays)."""
        self.race.holding, self.race.held = options, None
        try:
            with self.race.choice(self.label, keep=True):
                ms = self.benchmark()
        except Exception as e:  # as Inductor scores a failing choice: it loses the hold, not the compile
            raise BenchError(f"Inductor's benchmark of {self.label} raised {type(e).__name__}: {e}") from None
        finally:
            self.race.holding = None
        if self.race.held is None or not math.isfinite(ms):
            raise BenchError(f"Inductor's benchmark of {self.label} gave {ms} ms without a pyhipbench measurement")
        return self.race.held

    def release(self) -> None:
        """Nothing: Inductor cleaned up after its benchmark."""


def race_choices(original: Callable[..., dict[Any, float]], policy: Policy, device: Device | None,
                 ledger: Ledger) -> Callable[..., dict[Any, float]]:
    """`benchmark_choices(cls, choices, autotune_args, is_collective=False)` raced: `original` (Inductor's,
    unbound) called for one choice at a time, each raced list counted into `ledger`. Collective choices (timed
    across ranks by Inductor itself), a list inside a list and a list holding a compiled library's choice
    (CUTLASS, ROCm CK) go to `original` as they are, each choice still measured by pyhipbench, not raced."""

    def benchmark_choices(cls: type, choices: Sequence[Any], autotune_args: Any,
                          is_collective: bool = False) -> dict[Any, float]:
        if (is_collective or ChoiceRace.current() is not None or ChoiceRace.in_whole_list()
                or any(_native_library(c) for c in choices)):
            outer = ChoiceRace.current()
            if outer is not None:
                outer.listing.add(outer.label)
            with _whole_list():
                return original(cls, choices, autotune_args, is_collective)
        race = ChoiceRace(policy, device)
        ledger.choice_lists += 1
        labels = _labels(choices)
        timings_ms: dict[str, float] = {}
        for label, choice in zip(labels, choices):
            with race.choice(label):
                try:
                    timings_ms[label] = _benchmark_one(original, cls, choice, autotune_args, is_collective)
                except Error as e:  # pyhipbench's refusal of a choice (one that launches nothing): inf, as
                    # Inductor scores a choice that fails, the others kept
                    log.warning("choice %s: %s: %s; it is ignored (inf)", label, type(e).__name__, e)
                    timings_ms[label] = math.inf
        unmeasured = [label for label in labels if not race.calls[label] and label not in race.listing
                      and math.isfinite(timings_ms[label])]
        if unmeasured:
            log.warning("choices %s were timed by torch's benchmarker, not pyhipbench (a path the hook does not "
                        "reach); their numbers come from another clock", ", ".join(unmeasured))
        again = {label: functools.partial(_benchmark_one, original, cls, choice, autotune_args, is_collective)
                 for label, choice in zip(labels, choices)}
        held = race.finalists_held(timings_ms, again)
        return {choice: held[label] for label, choice in zip(labels, choices)}
    return benchmark_choices


@contextmanager
def _whole_list() -> Iterator[None]:
    """Inductor's own loop over a list, on this thread: no race open (an outer race neither bounds nor records
    its choices), each call a choice."""
    outer = getattr(_active, "race", None), getattr(_active, "whole_list", False)
    _active.race, _active.whole_list = None, True
    try:
        yield
    finally:
        _active.race, _active.whole_list = outer


def _native_library(choice: Any) -> bool:
    """A choice run from a compiled library (CUTLASS, ROCm CK): Inductor orders such a list and stops at the
    first such failure to keep the CUDA context sound, which it can do only over the whole list."""
    return any(type(choice).__name__.startswith(prefix) for prefix in ("CUTLASS", "ROCm"))


def _benchmark_one(original: Callable[..., dict[Any, float]], cls: type, choice: Any, autotune_args: Any,
                   is_collective: bool) -> float:
    return original(cls, [choice], autotune_args, is_collective)[choice]


def _labels(choices: Sequence[Any]) -> list[str]:
    """A label per choice, unique: its name, numbered where two share one."""
    names = [str(getattr(choice, "name", None) or type(choice).__name__) for choice in choices]
    return [f"{name}#{i}" if names.count(name) > 1 else name for i, name in enumerate(names)]
