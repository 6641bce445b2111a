"""Sweeps: many candidates across every GPU of a machine, or of a Ray cluster, each fault isolated,
results durable in SQLite, resumable after a kill. The public names are pyhipbench's own
(`pyhipbench.sweep`, `pyhipbench.Candidate`, ...), loaded on first use.

    candidate.py      Candidate (one launch, or a chain of pyhipbench._sources.chain), load_space (JSON / YAML
                      search spaces); its source a pyhipbench._sources kind, its options a pyhipbench.BenchOptions
    worker.py         one GPU's worker: Task in, Outcome out (which says the code objects it holds)
    scheduler.py      the sweep's loop: events from the workers to the parts below, faults retried once
    compile_queue.py  each source's code, compiled in a CPU pool ahead of the GPUs
    dispatch.py       which worker runs what next, in the space's order; one task sent ahead
    worker_slot.py    one worker's state: its attempt, the one sent ahead, its watchdog, its replacement
    recorder.py       each candidate's end: the store, the summary, the progress bar
    interrupts.py     Ctrl-C: seen between events, the processes shut down, SweepInterrupted
    local.py          a spawned process per local GPU
    ray_cluster.py    a Ray actor per GPU of a Ray cluster

The results database and its writer's lock are pyhipbench/_results/ (store.py, lock.py).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .._device.backends import BACKEND_NAMES
from .._progress import Progress
from .._results.store import Store
from .._values import integer, real, show
from ..errors import BenchError
from .candidate import Candidate, candidates_from_json, load_space
from .interrupts import SweepInterrupted
from .local import LocalPool
from .scheduler import TIMEOUT_FLOOR_S, SweepSummary, interrupted, run, watchdog_s

__all__ = ["sweep", "Candidate", "load_space", "candidates_from_json", "SweepSummary", "SweepInterrupted", "watchdog_s"]


def sweep(candidates: Iterable[Candidate], db: str | Path, *, resume: bool = False, gpus: list[int] | None = None,
          backend: str | None = None, cluster: str | None = None, progress: bool | None = None,
          timeout_floor_s: float = TIMEOUT_FLOOR_S, compile_workers: int = 2, standby: bool = True,
          race: bool = False) -> SweepSummary:
    """Measures every candidate on every GPU and records each in the SQLite database `db`.

    `resume`: continue a database that already holds results, skipping the
    candidates recorded there (without it such a database is refused).
    `gpus`: device indices (local) or, with a cluster, how many GPUs to use
    (its length); None: all. `backend`: "hip" or "cuda" (None: the first that works).
    `cluster`: a Ray address ("ray://host:10001", "auto"); None runs here.
    `progress`: draw a progress bar (None: when stderr is a terminal).
    `timeout_floor_s`: the watchdog's least limit per candidate, seconds (see watchdog_s).
    `compile_workers`: processes compiling IR and C++ source ahead of the GPUs.
    `standby`: (local sweeps) keep a spare worker process per GPU, its device open, to replace a worker
    after a fault, hang or death without waiting for a process to start (one more device context per GPU).
    `race`: racing, for a space of candidates solving one problem: each candidate's bench() gets
    `slower_than_us`, the lowest CI upper bound (µs) measured so far in `db` (resumed results included;
    none before the first result, nor for a fixed `iterations`; a candidate's own bound, if lower, stays),
    and stops (stop_reason "slower") once
    surely slower than that. The best candidate is still measured to its precision; the medians of those
    stopped as slower are less precise.

    Each result is committed as it finishes. One sweep at a time writes `db`: it is locked for the call
    (DB.lock beside it; the OS drops the lock when the process ends), and another sweep on it is refused
    (BenchError naming the holder's pid); reading it meanwhile (load_results, compare) works. A candidate
    listed twice runs once (the summary's `duplicates`). What stops the sweep shuts its worker and compiler
    processes down first: Ctrl-C raises SweepInterrupted, a KeyboardInterrupt saying how many results
    `db` holds (`recorded`); a failed write to `db` (a full disk) raises OSError naming it. Either way
    every committed result stays, and `resume=True` continues.
    """
    candidates = list(candidates)
    for i, c in enumerate(candidates):
        if not isinstance(c, Candidate):
            raise BenchError(f"candidates[{i}]={show(c)}: expected a pyhipbench.Candidate")
    if not candidates:
        raise BenchError("sweep() needs at least one candidate")
    if gpus is not None:
        if not isinstance(gpus, (list, tuple)) or not gpus:
            raise BenchError(f"gpus={show(gpus)}: expected a non-empty list of device indices, or None for all")
        gpus = [integer(f"gpus[{i}]", g, 0) for i, g in enumerate(gpus)]
        if len(set(gpus)) != len(gpus):
            raise BenchError(f"gpus={gpus}: a device is listed twice")
    if backend is not None and backend not in BACKEND_NAMES:  # else each worker would refuse it, one by one
        raise BenchError(f"backend={show(backend)}: expected one of {', '.join(BACKEND_NAMES)}, or None for the "
                         "first that works")
    timeout_floor_s = real("timeout_floor_s", timeout_floor_s, above=0)
    compile_workers = integer("compile_workers", compile_workers, 1, 256)
    if not isinstance(standby, bool):
        raise BenchError(f"standby={show(standby)}: expected True or False")
    if not isinstance(race, bool):
        raise BenchError(f"race={show(race)}: expected True or False")
    store = Store(Path(db), resume=resume, lock=True)
    try:
        if cluster is not None:
            from .ray_cluster import RayCluster
            executor = RayCluster(cluster, backend, None if gpus is None else len(gpus))
        else:
            executor = LocalPool(backend, gpus, standby=standby)
        done = len(store.done_ids() & {c.id for c in candidates})
        bar = Progress(len({c.id for c in candidates}), done, show=progress)
        summary = run(candidates, store, executor, progress=bar, timeout_floor_s=timeout_floor_s,
                      compile_workers=compile_workers, race=race)
        store.finish_environment(read_here=cluster is None)
        return summary
    except SweepInterrupted:
        raise
    except KeyboardInterrupt:  # before the scheduler ran (a Ray cluster connecting)
        raise interrupted(store) from None
    finally:
        store.close()

