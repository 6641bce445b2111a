"""`pyhipbench compare`: B against A, kernel by kernel: faster, slower or the same."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .._measure import report
from ..errors import BenchError


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compare", help="B against A, kernel by kernel: faster, slower or the "
                                                 "same (95%% CIs of the medians overlap)")
    parser.add_argument("a", type=Path, help="a JSON report (run --out A.json) or a sweep's database")
    parser.add_argument("b", type=Path, help="another JSON report or sweep database")
    parser.set_defaults(handler=run)


def _load(path: Path) -> list[dict[str, Any]]:
    """Results from a sweep's database or a JSON report, whichever `path` is, checked alike
    (report.check_results: every field of every entry, no kernel and launch twice) before any comparing."""
    from .._sweep.store import is_results_db, load_results  # SQLite and the sweep package only for a database
    if is_results_db(path):
        return report.check_results(load_results(path), str(path))
    return report.load(path)


def run(args: argparse.Namespace) -> int:
    comparisons = report.compare(_load(args.a), _load(args.b))
    if not comparisons:
        raise BenchError(f"{args.a} and {args.b} have no kernel and launch in common (matched by kernel "
                         "name, grid, block, cache state and timer)")
    print(f"{'kernel and launch':<60} {'A µs':>10} {'B µs':>10} {'B/A':>7}  B is")
    for c in comparisons:
        print(f"{c.key:<60} {c.a_median_us:>10.3f} {c.b_median_us:>10.3f} {c.ratio:>7.3f}  {c.verdict}")
    return 0
