"""`pyhipbench compare`: B against A, kernel by kernel: faster, slower, the same, or can't tell."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._progress import elapsed
from .._results import report
from .._results.comparison import (
    DEFAULT_THRESHOLD,
    Comparison,
    clock_differences,
    compare,
    environment_differences,
    why_unmatched,
)
from .._results.report import ACROSS
from ..errors import BenchError
from . import values
from .command import add_command
from .files import kept_stdout


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "compare", "B against A, kernel by kernel: faster, slower, the same, or can't tell",
        "Results are paired by kernel, grid, block, cache state and timer. A verdict needs the 95 % CI of B/A "
        "(a bootstrap of the two sides' samples) clear of 1 and B/A beyond --threshold; within the threshold "
        "is 'same'. Where the two ran on different devices, drivers or clocks, a warning says so.",
        ["pyhipbench compare before.json after.json", "pyhipbench compare a.db b.db --threshold 5%"])
    parser.add_argument("a", type=Path, help="a JSON report (run --out A.json) or a sweep's database")
    parser.add_argument("b", type=Path, help="another JSON report or sweep database")
    parser.add_argument("--threshold", type=values.fraction, default=DEFAULT_THRESHOLD, metavar="FRACTION",
                        help="the smallest difference that counts, as 0.02 or 2%% (default "
                             f"{100 * DEFAULT_THRESHOLD:g}%%): within it is 'same'")
    parser.add_argument("--across", choices=ACROSS, action="append", default=[],
                        help="pair results whatever their cache state (cache) or timer (timer) too, e.g. a "
                             "clean-cold run with a warm one; repeatable")
    parser.set_defaults(handler=run)


def _load(path: Path) -> report.Report:
    """The results and environment of a sweep's database or a JSON report, whichever `path` is, checked
    alike (report.check_results: every field of every entry, no kernel and launch twice) before any comparing."""
    from .._results.store import is_results_db, read_database  # SQLite only for a database
    if is_results_db(path):
        results, environment = read_database(path)
        return report.Report(report.check_results(results, str(path)), environment)
    return report.read(path)


def run(args: argparse.Namespace) -> int:
    across = tuple(dict.fromkeys(args.across))
    with elapsed(None, "reading and comparing"):  # on a terminal, the seconds of a long one (big reports)
        a, b = _load(args.a), _load(args.b)
        comparisons = compare(a.results, b.results, args.threshold, across)
    if not comparisons:
        raise BenchError(f"{args.a} and {args.b} have no kernel and launch in common (matched by kernel "
                         f"name, grid, block, cache state and timer): {why_unmatched(a.results, b.results)}")
    with kept_stdout() as stdout:  # a closed pipe: one line naming standard output, not a traceback
        print_table(comparisons, args.threshold)
    matched = {c.key for c in comparisons}
    for line in environment_differences(a.environment, b.environment) + clock_differences(
            [r for r in a.results if report.match_key(r, across) in matched], b.results, args.threshold, across):
        print(f"pyhipbench compare: warning: {line}", file=sys.stderr)
    return stdout.status("compare")


def print_table(comparisons: list[Comparison], threshold: float) -> None:
    """A row per kernel and launch: both medians, B/A, its 95 % CI and the verdict."""
    print(f"B against A: 'same' within ±{100 * threshold:g} %, 'faster' or 'slower' by more and surely "
          "(95 % CI of B/A clear of 1), else 'can't tell'")
    print(f"{'kernel and launch':<60} {'A µs':>10} {'B µs':>10} {'B/A':>7} {'95 % CI of B/A':>15}  B is")
    for c in comparisons:
        interval = f"{c.ratio_low:.3f}–{c.ratio_high:.3f}"
        print(f"{c.key:<60} {c.a_median_us:>10.3f} {c.b_median_us:>10.3f} {c.ratio:>7.3f} {interval:>15}  "
              f"{c.verdict}" + ("" if c.method == "bootstrap" else " (from the CIs: no samples)"))
