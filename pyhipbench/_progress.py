"""The progress bar of long work (a sweep, an autotune, the demo): done / total, rate, ETA, failures
so far, the best so far.

tqdm (always installed with pyhipbench) draws it on stderr when stderr is a
terminal; otherwise (a log file, a pipe, CI) the work is quiet and says its
totals once at the end.
"""
from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts recorded candidates; `show` None: draw when `stream` is a terminal and tqdm is installed."""

    def __init__(self, total: int, already_done: int = 0, *, show: bool | None = None,
                 stream: TextIO | None = None, unit: str = "cand", desc: str | None = None) -> None:
        self.failed = 0
        self.best: tuple[float, str] | None = None  # (median µs, kernel and tags)
        stream = stream or sys.stderr
        if show is None:
            show = stream.isatty()
        self.bar = None
        if show:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, initial=already_done, file=stream, unit=unit, desc=desc,
                                dynamic_ncols=True, smoothing=0.1)

    def measured(self, median_us: float, label: str) -> None:
        if self.best is None or median_us < self.best[0]:
            self.best = (median_us, label)
        self._advance()

    def failure(self) -> None:
        self.failed += 1
        self._advance()

    def done(self) -> None:
        """One more done that is neither a measurement nor a failure (a compile)."""
        self._advance()

    def _advance(self) -> None:
        if self.bar is None:
            return
        postfix = {"failed": self.failed}
        if self.best is not None:
            postfix["best"] = f"{self.best[0]:.3f} µs {self.best[1]}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
