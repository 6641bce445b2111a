"""A sweep of >= 500 candidates on 1 GPU, then on 2: wall time, the ratio, GPU utilisation, failures.

    python bench/sweep_scaling.py --out /tmp/sweep-scaling [--gpus 0,1] [--max-time 0.1] [--orders listed,shuffled]

Candidates (GPU, NVIDIA): the copy kernel (pyhipbench/kernels/copy.ptx) over
256 Ki, 1, 4 and 16 Mi floats and the compute-bound fma kernel (bench/kernels/fma.ptx)
at 4 chain lengths, each over many grids; three out-of-bounds copies (n far
beyond the arrays: an illegal address) and one spin kernel (bench/spin.ptx)
asked to spin for an hour, which the watchdog kills after --hang-timeout s
(twice: it is retried once). Two orders of the same space: `listed`, the bad
candidates last (the worst case: they form a serial tail on one GPU while
the others have finished), and `shuffled`: the bad candidates at random
places among the good ones (a fixed seed: a tuner's space does not put its
bad candidates last; the good ones keep their order, grouped by argument
specs). For each order, each run writes its
own database (listed-1gpu.db, listed-2gpu.db, ...) under --out; a summary
(summary.json) says for each: wall s, GPU busy s (sum of the candidates'
measurement wall times), utilisation (busy / (wall x GPUs)), measured and
failed counts, every failure with its reason, per GPU the candidates it ran
and its busy s (of the recorded attempts), and the serial tail (wall time after the last good candidate
finished); then per order the ratio 2-GPU wall / 1-GPU wall (target <= 0.6).
"""
from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
from datetime import datetime, timezone
from pathlib import Path

from pyhipbench import BenchOptions, Candidate, CodeObjectSource, sweep

HERE = Path(__file__).resolve().parent
COPY = HERE.parent / "pyhipbench" / "kernels" / "copy.ptx"
FMA = HERE / "kernels" / "fma.ptx"
SPIN = HERE / "spin.ptx"
GRIDS = [1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2112, 4224, 8448, 16896, 33792]
COPY_GRIDS = GRIDS[6:]  # a copy over a few blocks takes tens of ms a launch: slower than this sweep wants
BLOCKS = [64, 128, 256, 512, 1024]
ORDERS = ("listed", "shuffled")
SHUFFLE_SEED = 2024


def candidates(max_time_s: float, hang_timeout_s: float) -> list[Candidate]:
    copy, fma, spin = (CodeObjectSource.from_file(p) for p in (COPY, FMA, SPIN))
    options = BenchOptions(max_time_s=max_time_s)
    out = []
    for n in (1 << 18, 1 << 20, 1 << 22, 1 << 24):  # grouped by argument specs: a worker makes each set once
        args = (f"array:float32:{n}", f"array:float32:{n}", f"int64:{n}")
        out += [Candidate(copy, "copy", grid, block, args, bench=options, tags={"n": n})
                for grid in COPY_GRIDS for block in BLOCKS]
    fma_out = "array:float32:{}".format(max(GRIDS) * max(BLOCKS))
    for iterations in (16, 256, 4096, 16384):  # 16384 x 34.6 M threads: about 20 ms a launch on an H200
        out += [Candidate(fma, "fma", grid, block, (fma_out, f"uint32:{iterations}"), bench=options,
                          tags={"iterations": iterations}) for grid in GRIDS for block in BLOCKS]
    # Faults: a grid-stride copy told its 1024-float arrays hold 2**36 floats reads far outside them.
    out += [Candidate(copy, "copy", 1056, 256, ("array:float32:1024", "array:float32:1024", "int64:68719476736"),
                      bench=options, tags={"fault": i}) for i in range(3)]
    # A hang: one thread spinning for an hour; the watchdog kills it (twice: it is retried once).
    out.append(Candidate(spin, "spin", 1, 1, ("uint64:3600000000000",), bench=options, timeout_s=hang_timeout_s))
    return out


def ordered(space: list[Candidate], order: str) -> list[Candidate]:
    """The space as listed (the bad candidates last), or shuffled: the bad candidates moved to random
    places (a fixed seed) among the good ones, which keep their order, so that candidates sharing argument
    specs stay together as a tuner's space of one problem size would have them."""
    if order == "listed":
        return list(space)
    bad = [c for c in space if c.kernel == "spin" or "fault" in c.tags]
    shuffled = [c for c in space if c not in bad]
    chosen = random.Random(SHUFFLE_SEED)
    for candidate in bad:
        shuffled.insert(chosen.randrange(len(shuffled)), candidate)
    return shuffled


def run(space: list[Candidate], db: Path, gpus: list[int], floor_s: float) -> dict:
    db.unlink(missing_ok=True)
    summary = sweep(space, db, gpus=gpus, timeout_floor_s=floor_s)
    ended = datetime.now(timezone.utc).timestamp()
    with sqlite3.connect(db) as raw:
        failures = raw.execute("SELECT kernel, json_extract(candidate, '$.tags'), reason, attempts, error "
                               "FROM results WHERE status = 'failed'").fetchall()
        per_gpu = raw.execute("SELECT device, COUNT(*), TOTAL(busy_s) FROM results GROUP BY device "
                              "ORDER BY device").fetchall()
        last_good = raw.execute("SELECT MAX(finished_at) FROM results WHERE status = 'ok'").fetchone()[0]
    tail_s = ended - datetime.fromisoformat(last_good).timestamp() if last_good else summary.wall_s
    report = {"gpus": gpus, "candidates": summary.total, "measured": summary.measured, "failed": summary.failed,
              "wall_s": summary.wall_s, "busy_s": summary.busy_s, "utilisation": summary.utilisation,
              "serial_tail_s": tail_s,
              "per_gpu": [{"device": d, "candidates": n, "busy_s": busy} for d, n, busy in per_gpu],
              "failures": [dict(zip(("kernel", "tags", "reason", "attempts", "error"), f)) for f in failures]}
    print(f"{len(gpus)} GPU(s): {summary.measured} measured, {summary.failed} failed, {summary.wall_s:.1f} s wall, "
          f"GPU busy {summary.busy_s:.1f} s, utilisation {100 * summary.utilisation:.0f} %, serial tail "
          f"{tail_s:.1f} s (after the last good candidate)", flush=True)
    for g in report["per_gpu"]:
        print(f"  {g['device']}: {g['candidates']} candidates, busy {g['busy_s']:.1f} s")
    for f in report["failures"]:
        print(f"  failed {f['kernel']} {f['tags']}: {f['reason']} ({f['attempts']} attempts): {f['error'][:160]}")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the databases and summary.json")
    parser.add_argument("--gpus", default="0,1", help="the GPUs of the multi-GPU run (default 0,1)")
    parser.add_argument("--max-time", type=float, default=0.1, help="each candidate's max_time_s (default 0.1)")
    parser.add_argument("--watchdog-floor", type=float, default=20.0, help="the watchdog's floor, s (default 20)")
    parser.add_argument("--hang-timeout", type=float, default=5.0,
                        help="the spinning candidate's own watchdog limit, s (default 5)")
    parser.add_argument("--orders", default=",".join(ORDERS),
                        help="the space's orders to run, comma-separated: listed (the bad candidates last), "
                             f"shuffled (seed {SHUFFLE_SEED}); default both")
    args = parser.parse_args()
    orders = args.orders.split(",")
    if not orders or any(o not in ORDERS for o in orders) or len(set(orders)) != len(orders):
        parser.error(f"--orders {args.orders!r}: expected {' and/or '.join(ORDERS)}, comma-separated, each once")
    gpus = args.gpus.split(",")
    if len(gpus) < 2 or not all(g.isascii() and g.isdigit() for g in gpus) or len(set(gpus)) != len(gpus):
        # one GPU would write ORDER-1gpu.db twice, the second run deleting the first's; the ratio would mean nothing
        parser.error(f"--gpus {args.gpus!r}: expected two or more device indices, each once, such as 0,1")
    gpus = [int(g) for g in gpus]
    args.out.mkdir(parents=True, exist_ok=True)
    space = candidates(args.max_time, args.hang_timeout)
    print(f"{len(space)} candidates", flush=True)
    results, ratios = {}, {}
    for order in orders:
        print(f"-- order: {order}", flush=True)
        one = run(ordered(space, order), args.out / f"{order}-1gpu.db", gpus[:1], args.watchdog_floor)
        many = run(ordered(space, order), args.out / f"{order}-{len(gpus)}gpu.db", gpus, args.watchdog_floor)
        results[order] = {"one": one, "many": many, "ratio": many["wall_s"] / one["wall_s"]}
        ratios[order] = results[order]["ratio"]
    print(f"wall {len(gpus)} GPUs / 1 GPU: " + ", ".join(f"{o} {r:.2f}" for o, r in ratios.items())
          + " (target <= 0.6)")
    (args.out / "summary.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
