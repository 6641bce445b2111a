"""Candidate: a Helion candidate's call, as the engine measures it, whose exception fails only itself."""
from __future__ import annotations

from collections.abc import Callable

from ..errors import BenchError

__all__ = ["Candidate"]


class Candidate:
    """`fn` (a compiled config's call on its arguments) under `label`: an exception it raises becomes a
    BenchError, which the engine keeps as this candidate's error while the others go on; the exception
    itself stays in `raised` (Helion tells a fault that poisons the GPU context by it)."""

    def __init__(self, fn: Callable[[], object], label: str) -> None:
        self.fn, self.label = fn, label
        self.raised: BaseException | None = None
        self.__qualname__ = label  # bench_callable's name for the result

    def __call__(self) -> object:
        try:
            return self.fn()
        except Exception as e:
            self.raised = e
            raise BenchError(f"{self.label} raised {type(e).__name__}: {e}") from e
