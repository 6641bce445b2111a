"""The compile queue: each source's code for the sweep's GPUs, made once, ahead of the GPUs.

Nothing compiles before the first worker says what the GPUs are (the
target). Then a code object is ready at once; LLVM IR and CUDA / HIP C++
(`needs_compiler`) compile in the compile pool (pyhipbench._compile), each
source once, while the GPUs measure what is ready. A Triton source
(`compiled_in_worker`) is compiled ahead too, once per argument
specialisation, into Triton's cache: its GPU worker's own compile then comes
from that cache. A compile error fails the source's candidates (bad input:
retrying cannot help), as does a compile that kills its process or runs past
the compile timeout; only that compile's candidates are lost.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .._compile.pool import TaskOutcome, shared_pool, unexpected
from ..errors import Error
from .candidate import Candidate
from .sources import Code, CompileTarget, Source
from .worker import DIED, INVALID, TIMEOUT

__all__ = ["CompileQueue", "Compiled", "COMPILE_TIMEOUT_S"]

COMPILE_TIMEOUT_S = 600.0  # one source's compile in the pool; past it, its candidates fail (timeout)
_REASONS = {"raised": INVALID, "timeout": TIMEOUT, "died": DIED, "unsent": INVALID, "closed": DIED}


def _compile(source: Source, target: CompileTarget) -> tuple[str, Any]:
    """In the compile pool: ("ok", Code) or ("error", message) (exceptions may not unpickle)."""
    try:
        return "ok", source.compile(target)
    except Error as e:
        return "error", f"{type(e).__name__}: {e}"
    except Exception as e:  # a compiler's own exception, or a bug: its candidates fail, not the sweep
        return "error", unexpected(e)


@dataclass
class Compiled:
    """News from the queue: candidates whose code is ready, and candidates failed as (candidate, reason,
    error) because their source did not compile."""
    ready: list[Candidate] = field(default_factory=list)
    failed: list[tuple[Candidate, str, str]] = field(default_factory=list)
    compiles_ended: int = 0  # the pool's compiles that ended (a source's, or a Triton specialisation's)


class CompileQueue:
    """The code of `candidates`' sources, compiled by up to `compile_workers` processes."""

    def __init__(self, candidates: list[Candidate], compile_workers: int) -> None:
        self.compile_workers = compile_workers
        self.target: CompileTarget | None = None  # the sweep's GPUs, once the first worker is up
        # What waits for one compile: a source's digest (or, for Triton, its digest and the candidates' args).
        self.waiting: dict[tuple, list[Candidate]] = {}
        self.sources: dict[str, Source] = {}
        self.code: dict[str, Code] = {}
        self.compiling: dict[Future, tuple] = {}  # the pool's compiles -> what waits for them
        self.aheads: dict[tuple, Any] = {}  # a Triton group's compile ahead (pyhipbench.triton's Ahead)
        for c in candidates:
            group = (c.source.digest, c.args) if c.source.compiled_in_worker else (c.source.digest,)
            self.waiting.setdefault(group, []).append(c)
            self.sources[c.source.digest] = c.source

    def start(self, target: CompileTarget) -> Compiled:
        """Code for `target`: what needs no compiler at once, the rest submitted to the pool."""
        self.target = target
        news = Compiled()
        for group in list(self.waiting):
            source = self.sources[group[0]]
            try:
                if source.compiled_in_worker:
                    ahead = source.compile_ahead(target, group[1], self.compile_workers, COMPILE_TIMEOUT_S)
                    if ahead.future is None:  # in Triton's cache, or one its worker must compile itself
                        news.ready += self.waiting.pop(group)
                    else:
                        self.compiling[ahead.future] = group
                        self.aheads[group] = ahead
                elif source.needs_compiler:
                    pool = shared_pool(self.compile_workers)
                    self.compiling[pool.submit(_compile, source, target, timeout_s=COMPILE_TIMEOUT_S)] = group
                else:
                    self._compiled(group, TaskOutcome(value=("ok", source.compile(target))), news)
            except Error as e:
                self._compiled(group, TaskOutcome(error=f"{type(e).__name__}: {e}", ended="raised"), news)
        return news

    def collect(self) -> Compiled:
        """The compiles that have finished since the last look."""
        news = Compiled()
        for future in [f for f in self.compiling if f.done()]:
            self._compiled(self.compiling.pop(future), future.result(), news)
            news.compiles_ended += 1
        return news

    def close(self) -> None:
        """Ends the compiles still running (Ctrl-C, an error): the pool's processes are killed."""
        if self.compiling:
            shared_pool(self.compile_workers).close()
            self.compiling.clear()

    def _compiled(self, group: tuple, outcome: TaskOutcome, news: Compiled) -> None:
        waiting = self.waiting.pop(group)
        ahead = self.aheads.pop(group, None)
        if ahead is not None and outcome.ok:
            news.ready += waiting  # Triton's cache holds it now
            return
        status, value = outcome.value if outcome.ok else ("error", outcome.error if ahead is None
                                                          else ahead.failure(outcome))
        if status == "ok":
            self.code[group[0]] = value
            news.ready += waiting
        else:
            news.failed += [(c, _REASONS.get(outcome.ended, INVALID), value) for c in waiting]
