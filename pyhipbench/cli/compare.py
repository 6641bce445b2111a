"""`pyhipbench compare`: B against A, kernel by kernel: faster, slower or the same."""
from __future__ import annotations

import argparse
from pathlib import Path

from .._measure.report import compare, load
from ..errors import BenchError


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("compare", help="B against A, kernel by kernel: faster, slower or the "
                                                 "same (95%% CIs of the medians overlap)")
    parser.add_argument("a", type=Path, help="a JSON report (run --out A.json) or a sweep's database")
    parser.add_argument("b", type=Path, help="another JSON report or sweep database")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    comparisons = compare(load(args.a), load(args.b))
    if not comparisons:
        raise BenchError(f"{args.a} and {args.b} have no kernel and launch in common (matched by kernel "
                         "name, grid, block, cache state and timer)")
    print(f"{'kernel and launch':<60} {'A µs':>10} {'B µs':>10} {'B/A':>7}  B is")
    for c in comparisons:
        print(f"{c.key:<60} {c.a_median_us:>10.3f} {c.b_median_us:>10.3f} {c.ratio:>7.3f}  {c.verdict}")
    return 0
