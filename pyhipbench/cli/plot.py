"""`pyhipbench plot`: pictures of results, of a sweep by its tags, of two runs side by side."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from .._results import report
from .._results.comparison import DEFAULT_THRESHOLD, compare, why_unmatched
from .._results.report import ACROSS
from .._textfile import write_whole
from ..errors import BenchError
from . import values
from .command import add_command
from .files import check_output


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "plot", "pictures of results: distributions, a ranking, a sweep by its tags, A against B",
        "JSON reports: each result's samples (violin), median and 95 % CI, outliers, fastest first. A sweep "
        "database: its --best fastest so, or with --x and --y its candidates by two tags, coloured by median, "
        "failures marked with their reason; -o FILE.html writes one self-contained page of the sweep (its "
        "table, plots and environment). --compare A B: the two sides' samples next to each other, with "
        "compare's verdicts. Results and sides are named by their files' names. Needs matplotlib (the plot "
        "extra).",
        ["pyhipbench plot run.json -o run.png",
         "pyhipbench plot results.db --x BLOCK_M --y num_warps -o space.svg",
         "pyhipbench plot results.db -o sweep.html",
         "pyhipbench plot --compare before.json after.json -o compare.png"])
    parser.add_argument("inputs", type=Path, nargs="+", metavar="RESULTS",
                        help="JSON reports (run --out R.json) or sweep databases")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="the picture to write: .png or .svg (checked before anything is read), or .html "
                             "for a sweep database's page")
    parser.add_argument("--x", metavar="TAG", help="a sweep database: the tag along the horizontal axis")
    parser.add_argument("--y", metavar="TAG", help="a sweep database: the tag along the vertical axis")
    parser.add_argument("--best", type=values.integer, default=20,
                        help="a sweep database: how many of the fastest to show as distributions")
    parser.add_argument("--compare", action="store_true", help="two inputs, A and B: side by side")
    parser.add_argument("--threshold", type=values.fraction, default=DEFAULT_THRESHOLD, metavar="FRACTION",
                        help="--compare: the smallest difference that counts, as 0.02 or 2%%")
    parser.add_argument("--across", choices=ACROSS, action="append", default=[],
                        help="--compare: pair results whatever their cache state (cache) or timer (timer) too, "
                             "as compare does; repeatable")
    parser.set_defaults(handler=run)


def _read(path: Path) -> tuple[list[dict], list[dict], dict | None, bool]:
    """(results, failures, environment, whether it is a sweep database) of `path`, checked."""
    from .._results.store import is_results_db, load_failures, read_database
    if is_results_db(path):
        results, environment = read_database(path)
        # A sweep's candidates may share a kernel and launch (their tags tell them apart): no uniqueness.
        return report.check_results(results, str(path), unique=False), load_failures(path), environment, True
    read = report.read(path)
    return read.results, [], read.environment, False


def file_names(paths: list[Path]) -> list[str]:
    """Each file's name in a picture: its stem; where other files have that stem too, the stem under the fewest
    of its folders that none of them shares, or where they share all of those (only the suffixes differ), its
    whole name. The same file twice is named alike."""
    absolute = [Path(os.path.abspath(path)) for path in paths]
    return [_file_name(path, [other for other in absolute if other != path and other.stem == path.stem])
            for path in absolute]


def _file_name(path: Path, namesakes: list[Path]) -> str:
    """`path`'s name beside `namesakes`, the other files of its stem (`file_names`)."""
    for depth in range(len(path.parts)):
        if all(_folders(other, depth) != _folders(path, depth) for other in namesakes):
            return "/".join((*_folders(path, depth), path.stem))
    return path.name


def _folders(path: Path, depth: int) -> tuple[str, ...]:
    """The last `depth` folders `path` is in, the root left out."""
    folders = path.parent.parts[1:]
    return folders[max(0, len(folders) - depth):]


def run(args: argparse.Namespace) -> int:
    from .._results import plot
    from .._values import integer
    best = integer("--best", args.best, 1)
    html = args.output.suffix.lower() == ".html"
    if not html:
        plot.check_output(args.output)
    for path in args.inputs:  # a picture written over a report it was drawn from would lose the report
        check_output("-o", args.output, path)
    if (args.x is None) != (args.y is None):
        raise BenchError("--x and --y go together: the two tags the sweep's candidates are placed by")
    if args.compare and len(args.inputs) != 2:
        raise BenchError(f"--compare takes two inputs, A and B; got {len(args.inputs)}")
    if args.across and not args.compare:
        raise BenchError(f"--across {args.across[0]}: pairs the two sides of --compare; expected --compare A B")
    read = [_read(path) for path in args.inputs]
    databases = [path for path, (_, _, _, is_db) in zip(args.inputs, read) if is_db]
    if (html or args.x is not None) and (len(args.inputs) != 1 or not databases):
        what = "-o FILE.html" if html else "--x and --y"
        raise BenchError(f"{what} plot one sweep database; got {', '.join(map(str, args.inputs))}")
    plot.figure_module()  # matplotlib's absence said before any drawing
    if html:
        results, failures, environment, _ = read[0]
        write_whole(args.output, plot.sweep_html(results, failures, environment, str(args.inputs[0]), best))
    elif args.compare:
        (a, *_), (b, *_) = read
        across = tuple(dict.fromkeys(args.across))
        comparisons = compare(a, b, args.threshold, across)
        if not comparisons:
            raise BenchError(f"{args.inputs[0]} and {args.inputs[1]} have no kernel and launch in common (matched "
                             f"by kernel name, grid, block, cache state and timer): {why_unmatched(a, b)}")
        names = file_names(args.inputs)
        plot.save(plot.side_by_side(a, b, comparisons, (names[0], names[1]), across), args.output)
    elif args.x is not None:
        results, failures, _, _ = read[0]
        plot.save(plot.sweep_map(results, failures, args.x, args.y), args.output)
    else:
        several = len(args.inputs) > 1  # then each result is labelled with its file's name too
        results = [{**r, "kernel": f"{name}: {r['kernel']}"} if several else r
                   for name, (results, _, _, is_db) in zip(file_names(args.inputs), read)
                   for r in (results[:best] if is_db else results)]
        plot.save(plot.distributions(results), args.output)
    print(f"wrote {args.output}")
    return 0
