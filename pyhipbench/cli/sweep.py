"""`pyhipbench sweep`: a search space of candidates measured on every GPU (or a Ray cluster) into a database."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from .._device.backends import BACKEND_NAMES
from .._results.report import check_format
from .._results.store import Store, export_best, refuse_non_database
from .._results.tags import tags_text
from .._sweep import SweepInterrupted, SweepSummary, load_space, sweep
from .._sweep.scheduler import TIMEOUT_FLOOR_S
from .._sweep.worker import INVALID
from .._values import integer
from ..errors import BenchError
from . import values
from .command import add_command
from .files import check_output, kept_stdout, write_reports

MAX_FAILURES_LISTED = 20  # the summary lists this many failures; the database holds them all
MAX_DUPLICATES_LISTED = 20  # and this many candidates the space lists more than once


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "sweep", "measure a search space of candidates on every GPU (or a Ray cluster) into a database",
        "Every candidate of SPACE (JSON, or YAML with pyyaml) is measured on every GPU, a worker process per "
        "GPU (or a Ray actor per GPU with --ray); faults, hangs and crashes cost one candidate. Each result is "
        "committed to the SQLite database --out as it arrives; Ctrl-C or kill -9 loses only what was running.",
        ["pyhipbench sweep space.json --out results.db --export best.md",
         "pyhipbench sweep space.json --out results.db --resume --gpus 0,1 --race"])
    parser.add_argument("space", type=Path, help="the search space: a JSON (or YAML) file of candidates")
    parser.add_argument("--out", type=Path, required=True, help="the results database (SQLite) to write")
    parser.add_argument("--resume", action="store_true",
                        help="continue a database that holds results, skipping the candidates recorded there")
    parser.add_argument("--gpus", type=values.integers,
                        help="device indices to use, e.g. 0,1 (default: all); with --ray, how many GPUs: the "
                             "count of indices given")
    parser.add_argument("--ray", metavar="ADDRESS",
                        help="run on a Ray cluster: an actor per GPU (ray://host:10001, or auto); needs ray")
    parser.add_argument("--backend", choices=BACKEND_NAMES,
                        help="the GPUs' API: hip or cuda (default: the first that finds a GPU, hip then cuda)")
    parser.add_argument("--timeout-floor", type=values.number, default=TIMEOUT_FLOOR_S,
                        help="the watchdog's least limit per candidate, s")
    parser.add_argument("--race", action="store_true",
                        help="racing: stop each candidate once its median's 95%% CI lies wholly above the lowest "
                             "CI upper bound measured so far (stop reason 'slower'); for candidates solving one "
                             "problem: the best is measured to the precision, the others' medians less precisely")
    parser.add_argument("--best", type=values.integer, default=10,
                        help="how many of the fastest to list and export")
    parser.add_argument("--export", type=Path, action="append", default=[],
                        help="write the fastest candidates as JSON, CSV or a markdown table by the suffix "
                             "(.json, .csv, .md); repeatable")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # --best is the command's own (how much of the database to show), so it is checked here;
    # --gpus, --timeout-floor and the rest are sweep()'s, which checks them before any worker starts.
    best = integer("--best", args.best, 1)
    check_output("--out", args.out, args.space)
    refuse_non_database(args.out, "--out ")
    for path in args.export:
        check_output("--export", path, args.space)
        if path.resolve() == args.out.resolve():
            raise BenchError(f"--export {path}: is the --out database; writing it would overwrite the results")
        check_format(path)  # an unknown format is refused before any work
    try:
        candidates = load_space(args.space)
        summary = sweep(candidates, args.out, resume=args.resume, gpus=args.gpus, backend=args.backend,
                        cluster=args.ray, timeout_floor_s=args.timeout_floor, race=args.race)
    except SweepInterrupted as e:  # main() prints it and exits 130
        held = f"{e.recorded} result{'' if e.recorded == 1 else 's'}"
        raise SweepInterrupted(f"interrupted; {args.out} holds {held}, each committed as it finished (none is "
                               f"lost); resume with: {command_line(args, resume=True)}", e.database, e.recorded,
                               e.summary) from None
    except KeyboardInterrupt:  # reading the space, or opening the database: the sweep had not started
        raise KeyboardInterrupt(f"interrupted before the sweep started (nothing was measured); run it with: "
                                f"{command_line(args, resume=args.resume)}") from None
    store = Store(args.out, resume=True)
    try:
        with kept_stdout() as stdout:  # a closed pipe or a full disk there: the exports are still written
            print_summary(summary, store, args.out, best)
            exports = [(path, export_best(store, path, best)) for path in args.export]
            return write_reports("sweep", exports, stdout, stdout)
    finally:
        store.close()


def command_line(args: argparse.Namespace, resume: bool) -> str:
    """The command line of the sweep `args` asked for, with its options; with --resume if `resume`."""
    words = ["pyhipbench", "sweep", str(args.space), "--out", str(args.out)] + (["--resume"] if resume else [])
    if args.gpus is not None:
        words += ["--gpus", ",".join(map(str, args.gpus))]
    if args.ray is not None:
        words += ["--ray", args.ray]
    if args.backend is not None:
        words += ["--backend", args.backend]
    if args.timeout_floor != TIMEOUT_FLOOR_S:
        words += ["--timeout-floor", f"{args.timeout_floor:g}"]
    if args.race:
        words.append("--race")
    if args.best != 10:
        words += ["--best", str(args.best)]
    for path in args.export:
        words += ["--export", str(path)]
    return shlex.join(words)


def print_summary(summary: SweepSummary, store: Store, out: Path, best: int) -> None:
    """The counts and the time, the candidates listed more than once and the database's failures (up to
    MAX_DUPLICATES_LISTED and MAX_FAILURES_LISTED), and its `best` fastest."""
    repeated = f", {len(summary.duplicates)} listed more than once in the space" if summary.duplicates else ""
    ran = (f"{summary.wall_s:.1f} s wall on {summary.gpus} GPU(s), GPU busy {summary.busy_s:.1f} s "
           f"({100 * summary.utilisation:.0f} %)" if summary.gpus else "nothing left to run")
    print(f"{summary.measured} measured, {summary.failed} failed, {summary.already_recorded} already in {out}"
          f"{repeated}; {ran}")
    for candidate, times in summary.duplicates[:MAX_DUPLICATES_LISTED]:
        print(f"listed {'twice' if times == 2 else f'{times} times'}: {candidate.describe()}; recorded once")
    if len(summary.duplicates) > MAX_DUPLICATES_LISTED:
        print(f"... and {len(summary.duplicates) - MAX_DUPLICATES_LISTED} more listed more than once")
    failures = store.failures()
    if len(failures) > summary.failed:  # a resumed database's: the failures listed are all it holds
        print(f"{out} holds {len(failures)} failed, {len(failures) - summary.failed} of them recorded before this "
              "sweep:")
    for candidate_id, kernel, reason, error in failures[:MAX_FAILURES_LISTED]:
        retried = "" if reason == INVALID else " (after a retry)"  # invalid input is not retried
        print(f"failed {candidate_id[:12]} {kernel}: {reason}{retried}: {error}")
    if len(failures) > MAX_FAILURES_LISTED:
        print(f"... and {len(failures) - MAX_FAILURES_LISTED} more failed (the database's results table has "
              "each, with status 'failed')")
    for r in store.best(best):
        raced = " (raced: stopped as slower, a less precise median)" if r.get("stop_reason") == "slower" else ""
        launch = "" if r["grid"] is None else \
            f" grid {'x'.join(map(str, r['grid']))} block {'x'.join(map(str, r['block']))}"
        print(f"best {r['candidate_id'][:12]} {r['kernel']}{launch}{tags_text(r['tags'])}: median "
              f"{r['stats_us']['median']:.3f} µs{raced}")

