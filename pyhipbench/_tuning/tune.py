"""tune(): N candidates (kernel launches, chains, sources to compile, callables, a front end's kinds such as
Triton launches) through the tuning engine.

The same policy `pyhipbench.triton.autotune` gives Triton configs: the
sources compiled ahead in the compile pool, each candidate prepared ahead
while the GPU measures the one before, raced against the best so far, the
ties measured again under sustained load, the fastest there the winner; a
candidate that fails keeps its error and the rest go on. With `record`, the
tuning is added to a results database (record.py), as a sweep's candidates.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, Union

import numpy as np

from .._compile.pool import default_workers
from .._device.device import Device
from .._device.memory import DeviceArray
from .._device.module import Kernel
from .._device.stream import Stream
from .._launch.launch import Launch
from .._measure.callable import callable_device, check_call
from .._measure.expect import Expect
from .._measure.options import BenchOptions, takes_options
from .._progress import Progress
from .._values import integer, show
from ..errors import BenchError
from .contenders import CallContender, ChainContender, SourceContender, SourceLaunch
from .engine import Policy, compile_trials, run_trials
from .kind import CandidateKind
from .ties import TIE_HOLD_S
from .trial import Contender, Trial
from .tuning import CandidateResult, Tuning

if TYPE_CHECKING:  # SQLite and the results database load only for a tuning that records
    from .record import TuningRecord

__all__ = ["tune", "TuneCandidate", "open_record", "record_path"]

# What tune() measures: one launch, a chain of launches (one sample is the chain), a launch of a kernel compiled
# from a source, a front end's kind (a Triton launch), or a callable.
TuneCandidate = Union[Launch, Sequence[Launch], SourceLaunch, CandidateKind, Callable[[], object]]


@takes_options(leave_out=("slower_than_us",))  # racing sets it
def tune(candidates: Sequence[TuneCandidate] | Mapping[str, TuneCandidate], *, race: bool = True,
         tie_hold_s: float | None = TIE_HOLD_S, device: Device | None = None, progress: bool | None = None,
         stream: Stream | None = None, expect: Expect = None, atol: float | None = None, rtol: float | None = None,
         reset_to_zero: Sequence[DeviceArray] | None = None, restore_value: Sequence[DeviceArray] | None = None,
         compile_workers: int | None = None, record: str | os.PathLike[str] | None = None,
         **bench_options: Any) -> Tuning:
    """Measures every candidate and finds the fastest (µs per sample), as autotune does a Triton config.

    `candidates`: a list, or a dict by label, of `Launch` (one kernel), lists of `Launch` (a chain, timed
    as bench_chain() times it), `SourceLaunch` (a kernel compiled from a source, in the compile pool of
    `compile_workers` processes, None: the CPUs less one), a front end's kinds (`pyhipbench.triton.TritonLaunch`:
    a Triton kernel compiled in that pool too) or callables (timed as bench_callable() times them).
    `bench_options`:
    bench()'s options (`BenchOptions`) for every candidate, `slower_than_us` aside (racing sets it).
    `race`: stop each candidate once it is surely slower than the best so far (False measures each to
    the precision). `tie_hold_s`: the candidates tied with the fastest are measured again, twice each
    (fastest first, then in the reverse order), each run after running back to back untimed (the first
    for this long, s; every other for half as long), and the fastest there wins (None or 0: the
    fastest median wins; docs/measurement.md#ties-under-sustained-load). `device`: where the callables
    and the sources' kernels run (None: bench_callable's default). `stream`, `expect`, `atol`, `rtol`, `reset_to_zero`,
    `restore_value`: bench_chain()'s, for every launch and chain (the arrays and references each
    candidate takes). `progress`: a bar on stderr (None: when stderr is a terminal). `record`: a results
    database (SQLite; a new file, or one tunings were recorded into) this tuning is added to once ranked, a
    row per candidate as a sweep records it (docs/sweeps.md#tunings-in-a-results-database).
    Returns a Tuning; BenchError when no candidate ran, naming each one's error (recorded first). A callable
    that raises an Exception fails only itself (its error: "<label> raised RuntimeError: ...").
    """
    started = time.perf_counter()
    labelled = _labelled(candidates)
    calls = [c for _, c in labelled if _is_call(c)]
    if calls:  # a timer that times no call (graph, batched: auto's cache state under them is dirty-cold) by name
        check_call(calls[0], "auto", bench_options.get("timer", "auto"))
    # A callable's buffers are its own, so pyhipbench cannot rotate them: cache='dirty-cold' refused up front.
    policy = Policy.from_keywords("tune", bench_options, race, tie_hold_s, own_buffers=bool(calls))
    if progress is not None and not isinstance(progress, bool):
        raise BenchError(f"progress={show(progress)}: expected True, False or None (a bar when stderr is a terminal)")
    workers = default_workers() if compile_workers is None else integer("compile_workers", compile_workers, 1, 1024)
    recorded_in = record_path(record)
    tags = None if recorded_in is None else [_tags(label, c) for label, c in labelled]  # checked before it runs
    given = {"stream": stream, "expect": expect, "atol": atol, "rtol": rtol, "reset_to_zero": reset_to_zero,
             "restore_value": restore_value}
    chain_extra = {k: v for k, v in given.items() if v is not None}
    trials = [Trial(label, _contender(label, candidate, policy.options, chain_extra, device, workers))
              for label, candidate in labelled]
    measuring = _measuring_device(trials, device)
    compiled = [t for t, (_, c) in zip(trials, labelled) if isinstance(c, (SourceLaunch, CandidateKind))]
    recording = open_record(recorded_in)  # a bad file refused before anything runs
    try:
        bar = Progress(len(trials) + len(compiled), show=progress, unit="candidate", desc="tuning")
        try:
            compile_trials(compiled, bar)
            order = run_trials(trials, policy, measuring, bar)
        finally:
            bar.close()
        results = tuple(CandidateResult.of(t, c) for t, (_, c) in zip(trials, labelled))
        tuning = Tuning(results, tuple(order), time.perf_counter() - started)
        if recording is not None and tags is not None:
            recording.write(tuning, tags, measuring)
    finally:
        if recording is not None:
            recording.close()
    if not order:
        raise BenchError("tune: no candidate ran; " + "; ".join(f"{r.label}: {r.error}" for r in results))
    return tuning


def record_path(record: object) -> Path | None:
    """`tune`'s and autotune's `record=` checked: the results database's path, or None; BenchError for a value
    that is not a path."""
    if record is None:
        return None
    if not isinstance(record, (str, os.PathLike)) or not str(record):
        raise BenchError(f"record={show(record)}: expected the path of a results database (a new file, or one "
                         "tunings were recorded into)")
    return Path(record)


def open_record(record: object) -> TuningRecord | None:
    """The results database `record` names, opened and checked (BenchError for a value that is not a path, or
    a file that is not a tuning's database or a new one); None for None."""
    path = record_path(record)
    if path is None:
        return None
    from .record import TuningRecord  # SQLite and the results database load only for a tuning that records
    return TuningRecord(path)


def _tags(label: str, candidate: object) -> dict[str, Any]:
    """A candidate's tags in a recorded tuning: its label, and a front end's kind's own, as JSON values (a
    numpy scalar as its Python value). BenchError naming the candidate and the tag for a tag named "label"
    or a value that is not a JSON value."""
    own = candidate.tags if isinstance(candidate, CandidateKind) else {}
    if not isinstance(own, Mapping):
        raise BenchError(f"candidate {label!r}: tags={show(own)}: expected a dict of JSON values by name")
    tags: dict[str, Any] = {"label": label}
    for name, value in own.items():
        if not isinstance(name, str):
            raise BenchError(f"candidate {label!r}: tag name {show(name)}: expected a string")
        if name == "label":
            raise BenchError(f"candidate {label!r}: tag 'label'={show(value)}: 'label' is the candidate's label in "
                             "a recorded tuning; expected another name")
        tags[name] = _json_value(label, name, value)
    return tags


def _json_value(label: str, name: str, value: object) -> Any:
    """A tag's value as JSON takes it: a numpy scalar as its Python value (np.int64(4) is 4), a list or dict
    of them likewise; BenchError naming the candidate and the tag for anything else."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(label, name, v) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _json_value(label, name, v) for k, v in value.items()}
    raise BenchError(f"candidate {label!r}: tag {name!r}={show(value)} is a {type(value).__name__}; expected str, "
                     "int, float, bool or None (or a list or dict of them)")


def _labelled(candidates: object) -> list[tuple[str, Any]]:
    """(label, candidate) in order: a dict's keys, else each launch's kernel name (a chain's joined by '+'),
    each callable's name, numbered where two would share one."""
    if isinstance(candidates, Mapping):
        pairs = list(candidates.items())
        for label, _ in pairs:
            if not isinstance(label, str):
                raise BenchError(f"candidates: label {show(label)}: expected a string")
            if not label:
                raise BenchError("candidates: label '': expected a non-empty string (the candidate's name in the "
                                 "tuning)")
    elif isinstance(candidates, (list, tuple)):
        pairs = [(_label(c), c) for c in candidates]
        counts = {label: [p[0] for p in pairs].count(label) for label, _ in pairs}
        pairs = [(f"{label}#{i}" if counts[label] > 1 else label, c) for i, (label, c) in enumerate(pairs)]
    else:
        raise BenchError(f"candidates={show(candidates)}: expected a list, or a dict by label, of Launch, lists of "
                         "Launch (chains), SourceLaunch, TritonLaunch or callables")
    if not pairs:
        raise BenchError("candidates: empty; expected at least one Launch, chain or callable")
    return pairs


def _label(candidate: object) -> str:
    if isinstance(candidate, SourceLaunch):
        return candidate.kernel
    if isinstance(candidate, CandidateKind):
        return candidate.label
    if isinstance(candidate, Launch):
        return getattr(candidate.kernel, "name", "launch")
    if isinstance(candidate, (list, tuple)):
        return "+".join(getattr(getattr(c, "kernel", None), "name", "launch") for c in candidate)
    return getattr(candidate, "__qualname__", None) or type(candidate).__name__


def _is_call(candidate: object) -> TypeGuard[Callable[[], object]]:
    """Whether tune() measures `candidate` as a callable (bench_callable's)."""
    return callable(candidate) and not isinstance(candidate, (SourceLaunch, CandidateKind, Launch))


def _contender(label: str, candidate: object, options: BenchOptions, chain_extra: dict[str, Any],
               device: Device | None, compile_workers: int) -> Contender:
    if isinstance(candidate, SourceLaunch):
        return SourceContender(candidate.checked(), callable_device(device), options, chain_extra, compile_workers)
    if isinstance(candidate, CandidateKind):
        return candidate.contender(callable_device(device), options, chain_extra, compile_workers)
    if isinstance(candidate, Launch):
        return ChainContender([candidate], options, chain_extra)
    if isinstance(candidate, (list, tuple)) and candidate and all(isinstance(c, Launch) for c in candidate):
        return ChainContender(candidate, options, chain_extra)
    if _is_call(candidate):
        if chain_extra:
            raise BenchError(f"candidate {label!r} is a callable, and {', '.join(chain_extra)} apply to launches; "
                             "expected them only with launches and chains (a callable runs its own)")
        return CallContender(candidate, callable_device(device), label)
    raise BenchError(f"candidate {label!r}={show(candidate)}: expected a pyhipbench.Launch, a non-empty list of "
                     "Launch (a chain), a SourceLaunch, a pyhipbench.triton.TritonLaunch or a callable")


def _measuring_device(trials: list[Trial], device: Device | None) -> Device:
    """The device the measurements run on (its timer says whether host work may overlap them): the first
    launch's kernel's, or that of the callables and the kernels tune() loads (sources, a front end's kinds)."""
    for trial in trials:
        if isinstance(trial.contender, ChainContender):
            kernel = trial.contender.launches[0].kernel
            if isinstance(kernel, Kernel):
                return kernel.device
        elif trial.contender is not None:
            break
    return callable_device(device)
