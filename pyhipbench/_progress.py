"""The progress bar of long work (a sweep, an autotune, the demo): done / total, rate, ETA, failures
so far, the best so far; and `elapsed`, the seconds one long measurement has run against its time limit.

tqdm (always installed with pyhipbench) draws it on stderr when stderr is a
terminal, once the work has lasted DELAY_S (shorter work shows no bar);
otherwise (a log file, a pipe, CI) the work is quiet and says its totals once
at the end.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Progress", "DELAY_S", "elapsed"]

DELAY_S = 1.0  # seconds of work before a bar appears
TICK_S = 0.1   # how often `elapsed` redraws


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


@contextmanager
def elapsed(limit_s: float | None, desc: str, *, show: bool | None = None,
            stream: TextIO | None = None) -> Iterator[None]:
    """A bar of the seconds the work inside has run, against `limit_s` (a measurement's max_time_s, which it
    may stop before, at its precision; None: no limit, as for a fixed iteration count). Drawn by a thread,
    since the measurement runs in the core with the GIL released; as Progress: on a terminal, after DELAY_S
    (so work capped at DELAY_S or less starts no thread)."""
    stream = stream or sys.stderr
    if limit_s is not None and limit_s <= DELAY_S or not (stream.isatty() if show is None else show):
        yield
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield
        return
    bar = tqdm(total=limit_s, file=stream, unit="s", desc=desc, delay=DELAY_S, dynamic_ncols=True, leave=False,
               bar_format="{desc}: {n:.1f}" + ("/{total:.1f}" if limit_s else "") + " s {bar}")
    stop = threading.Event()
    started = time.perf_counter()

    def tick() -> None:
        while not stop.wait(TICK_S):
            ran_s = time.perf_counter() - started
            if ran_s >= DELAY_S:  # shorter work shows no bar
                bar.n = ran_s if limit_s is None else min(ran_s, limit_s)
                bar.refresh()
    ticker = threading.Thread(target=tick, name="pyhipbench elapsed", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        bar.close()
