"""The progress bar of long work (a sweep, an autotune, the demo): done / total, rate, ETA, failures
so far, the best so far.

tqdm (always installed with pyhipbench) draws it on stderr when stderr is a
terminal, once the work has lasted DELAY_S (shorter work shows no bar);
otherwise (a log file, a pipe, CI) the work is quiet and says its totals once
at the end.
"""
from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress", "DELAY_S"]

DELAY_S = 1.0  # seconds of work before a bar appears


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
                                dynamic_ncols=True, smoothing=0.1, delay=DELAY_S)

    def measured(self, median_us: float, label: str) -> None:
        if self.best is None or median_us < self.best[0]:
            self.best = (median_us, label)
        self._advance()

    def failure(self) -> None:
        self.failed += 1
        self._advance()

    def done(self, count: int = 1) -> None:
        """`count` more done that are neither measurements nor failures (compiles)."""
        self._advance(count)

    def _advance(self, count: int = 1) -> None:
        if self.bar is None or count == 0:
            return
        postfix = {"failed": self.failed}
        if self.best is not None:
            postfix["best"] = f"{self.best[0]:.3f} µs {self.best[1]}"
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(count)

    def step(self, desc: str) -> None:
        """Starts the next step over the same total from zero (an autotune's compiling, then measuring)."""
        self.failed, self.best = 0, None
        if self.bar is not None:
            self.bar.reset()
            self.bar.set_description(desc, refresh=False)

    def write(self, line: str) -> None:
        """Prints `line` on stdout above the bar (a table row as it is measured)."""
        if self.bar is None:
            print(line, flush=True)
        else:
            self.bar.write(line, file=sys.stdout)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
