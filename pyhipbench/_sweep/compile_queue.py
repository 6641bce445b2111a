"""The compile queue: each source's code for the sweep's GPUs, made once, ahead of the GPUs.

Nothing compiles before the first worker says what the GPUs are (the
target). Then a code object is ready at once; LLVM IR and CUDA / HIP C++
(`needs_compiler`) compile in a CPU process pool, each source once, while the
GPUs measure what is ready; a source compiled in the worker (Triton) needs
nothing here, and travels with each of its tasks. A compile error fails the
source's candidates (bad input: retrying cannot help). A compiler process that
dies breaks the pool: each compile the pool held is tried once more in a new
one, then its candidates fail.
"""
from __future__ import annotations

from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from ..errors import Error
from .candidate import Candidate
from .sources import Code, CompileTarget, Source
from .worker import DIED, INVALID, die_with_parent, unexpected

__all__ = ["CompileQueue", "Compiled", "COMPILE_TRIES"]

COMPILE_TRIES = 2  # a compile whose process died runs once more, then its candidates fail


def _compile(source: Source, target: CompileTarget) -> tuple[str, Any]:
    """In the CPU pool: ("ok", Code) or ("error", message) (exceptions may not unpickle)."""
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


class CompileQueue:
    """The code of `candidates`' sources, compiled by up to `compile_workers` processes."""

    def __init__(self, candidates: list[Candidate], compile_workers: int) -> None:
        self.compile_workers = compile_workers
        self.target: CompileTarget | None = None  # the sweep's GPUs, once the first worker is up
        self.waiting: dict[str, list[Candidate]] = {}  # source digest -> the candidates waiting for its code
        self.sources: dict[str, Source] = {}
        self.code: dict[str, Code] = {}
        self.compiling: dict[Future, str] = {}  # the pool's compiles -> their source's digest
        self.tries: dict[str, int] = {}
        self.pool: ProcessPoolExecutor | None = None
        for c in candidates:
            self.waiting.setdefault(c.source.digest, []).append(c)
            self.sources[c.source.digest] = c.source

    def start(self, target: CompileTarget) -> Compiled:
        """Code for `target`: what needs no compiler at once, the rest submitted to the pool."""
        self.target = target
        news = Compiled()
        for digest in list(self.waiting):
            source = self.sources[digest]
            if source.compiled_in_worker:
                news.ready += self.waiting.pop(digest)
            elif source.needs_compiler:
                self._submit(digest)
            else:
                try:
                    self._compiled(digest, "ok", source.compile(target), news)
                except Error as e:
                    self._compiled(digest, "error", f"{type(e).__name__}: {e}", news)
        return news

    def collect(self) -> Compiled:
        """The compiles that have finished since the last look."""
        news, broken = Compiled(), []
        for future in [f for f in self.compiling if f.done()]:
            digest = self.compiling.pop(future)
            try:
                status, value = future.result()
            except BrokenProcessPool:
                broken.append(digest)
                continue
            self._compiled(digest, status, value, news)
        if broken:  # a compiler process died (compile_ir survives LLVM aborts; this is rarer)
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
            # The dead pool's other compiles fail (or are cancelled) too, some only after this look: all are
            # resubmitted now, so no future of the dead pool is left to break the new one or raise here later.
            broken += self.compiling.values()
            self.compiling.clear()
            for digest in broken:
                if self.tries[digest] < COMPILE_TRIES:
                    self._submit(digest)
                else:
                    news.failed += [(c, DIED, "the compiler process died compiling it, twice")
                                    for c in self.waiting.pop(digest)]
        return news

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)

    def _submit(self, digest: str) -> None:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.compile_workers, mp_context=get_context("spawn"),
                                            initializer=die_with_parent)
        self.tries[digest] = self.tries.get(digest, 0) + 1
        self.compiling[self.pool.submit(_compile, self.sources[digest], self.target)] = digest

    def _compiled(self, digest: str, status: str, value: Any, news: Compiled) -> None:
        waiting = self.waiting.pop(digest)
        if status == "ok":
            self.code[digest] = value
            news.ready += waiting
        else:
            news.failed += [(c, INVALID, value) for c in waiting]
