"""The compile queue: each source's code for the sweep's GPUs, made once, ahead of the GPUs.

Nothing compiles before the first worker says what the GPUs are (the
target). Then a code object is ready at once; LLVM IR, CUDA / HIP C++ and
Triton (`needs_compiler`) compile in the compile pool (pyhipbench._compile),
each source once (a Triton source once per argument list it specialises
on: the candidates' `code_key`), while the GPUs measure what is ready. A
compile error fails the source's candidates (bad input: retrying cannot
help), as does a compile that kills its process or runs past the compile
timeout; only that compile's candidates are lost.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .._compile.pool import TaskOutcome, shared_pool, unexpected
from .._launch.arg_spec import ArgSpec
from .._sources.code import Code, CompileTarget
from .._sources.source import Source
from ..errors import Error
from .candidate import Candidate
from .worker import DIED, INVALID, TIMEOUT

__all__ = ["CompileQueue", "Compiled", "COMPILE_TIMEOUT_S"]

COMPILE_TIMEOUT_S = 600.0  # one source's compile in the pool; past it, its candidates fail (timeout)
_REASONS = {"raised": INVALID, "timeout": TIMEOUT, "died": DIED, "unsent": INVALID, "closed": DIED}


def _compile(source: Source, target: CompileTarget, args: tuple[ArgSpec, ...]) -> tuple[str, Any]:
    """In the compile pool: ("ok", Code) or ("error", message) (exceptions may not unpickle)."""
    try:
        return "ok", source.compile(target, args)
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
    compiles_ended: int = 0  # the pool's compiles that ended


class CompileQueue:
    """The code of `candidates`' sources, compiled by up to `compile_workers` processes."""

    def __init__(self, candidates: list[Candidate], compile_workers: int) -> None:
        self.compile_workers = compile_workers
        self.target: CompileTarget | None = None  # the sweep's GPUs, once the first worker is up
        self.waiting: dict[str, list[Candidate]] = {}  # a code key -> the candidates waiting for its compile
        self.code: dict[str, Code] = {}  # by code key
        self.compiling: dict[Future, str] = {}  # the pool's compiles -> the code key they make
        for c in candidates:
            self.waiting.setdefault(c.code_key, []).append(c)

    def start(self, target: CompileTarget) -> Compiled:
        """Code for `target`: what needs no compiler at once, the rest submitted to the pool."""
        self.target = target
        news = Compiled()
        for key in list(self.waiting):
            first = self.waiting[key][0]
            try:
                if first.source.needs_compiler:
                    pool = shared_pool(self.compile_workers)
                    future = pool.submit(_compile, first.source, target, first.args, timeout_s=COMPILE_TIMEOUT_S)
                    self.compiling[future] = key
                else:
                    self._compiled(key, TaskOutcome(value=("ok", first.source.compile(target, first.args))), news)
            except Error as e:
                self._compiled(key, TaskOutcome(error=f"{type(e).__name__}: {e}", ended="raised"), news)
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

    def _compiled(self, key: str, outcome: TaskOutcome, news: Compiled) -> None:
        waiting = self.waiting.pop(key)
        status, value = outcome.value if outcome.ok else ("error", outcome.error)
        if status == "ok":
            self.code[key] = value
            news.ready += waiting
        else:
            news.failed += [(c, _REASONS.get(outcome.ended, INVALID), value) for c in waiting]
