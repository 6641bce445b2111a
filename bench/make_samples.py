"""The sample results shipped in pyhipbench/samples/, measured on the GPU this runs on.

    copy-clean-cold.json        the bundled copy kernel at 4 MiB, 64 MiB and 512 MiB (float32, block 256)
                                and the empty kernel, clean-cold, each to a ±1 % 95 % CI
    copy-clean-cold-rerun.json  the same launches measured again in the same process
    copy-warm.json              the same launches, warm
    copy-sweep.db               a sweep of the copy kernel at 64 MiB over the block size (32 to 1024)
                                and the elements each thread copies (1, 2, 4: the grid shrinks), clean-cold
    README.md                   where and how they were measured

So `compare`, `plot` and `plot --compare` can be tried without a GPU:

    pyhipbench compare copy-clean-cold.json copy-clean-cold-rerun.json    # the same, within noise
    pyhipbench compare copy-clean-cold.json copy-warm.json --across cache  # what the cache state does
    pyhipbench plot copy-sweep.db --x block --y per_thread

    python bench/make_samples.py --out pyhipbench/samples

Needs a GPU; writes each file whole (temporary file, then rename) and README.md last.
"""
from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import pyhipbench as hb
from pyhipbench._results.environment import environment, finish
from pyhipbench._results.report import render
from pyhipbench._textfile import write_whole

SIZES_BYTES = (4 << 20, 64 << 20, 512 << 20)
BLOCK = 256
SWEEP_BYTES = 64 << 20


def measure(device: hb.Device, cache: str) -> list[dict]:
    """The copy kernel at each size and the empty kernel in `cache`, as Result.to_dict()s."""
    copy, empty = device.bundled_kernel("copy"), device.bundled_kernel("empty")
    results = []
    for size in SIZES_BYTES:
        n = size // 4
        src = device.array(np.random.default_rng(0).random(n, dtype=np.float32))
        dst = device.empty_like(src)
        results.append(hb.bench(copy, grid=n // BLOCK, block=BLOCK, args=[src, dst, hb.int64(n)],
                                cache=cache).to_dict())
        src.free()
        dst.free()
    results.append(hb.bench(empty, grid=1, block=1, args=[], cache=cache).to_dict())
    return results


def write_report(path: Path, device: hb.Device, cache: str) -> None:
    started = environment([device])
    results = measure(device, cache)
    write_whole(path, render(path, results, finish(started)))
    print(f"wrote {path}: {len(results)} results, {cache}")


def sweep_space() -> list[hb.Candidate]:
    """The copy kernel over block size and elements per thread (a grid-stride loop: fewer blocks)."""
    copy = hb.CodeObjectSource.from_file(Path(hb.__file__).parent / "kernels" / "copy.ptx")
    n = SWEEP_BYTES // 4
    args = [f"array:float32:{n}:random", f"array:float32:{n}", f"int64:{n}"]
    return [hb.Candidate(copy, "copy", grid=n // (block * per_thread), block=block, args=args,
                         tags={"block": block, "per_thread": per_thread})
            for block in (32, 64, 128, 256, 512, 1024) for per_thread in (1, 2, 4)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the folder to write the samples in")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = hb.Device()
    for name, cache in (("copy-clean-cold", "clean-cold"), ("copy-clean-cold-rerun", "clean-cold"),
                        ("copy-warm", "warm")):
        write_report(args.out / f"{name}.json", device, cache)
    db = args.out / "copy-sweep.db"
    db.unlink(missing_ok=True)
    summary = hb.sweep(sweep_space(), db=db, gpus=[device.properties.index], progress=False)
    # A rollback journal, not the sweep's write-ahead log: a reader then needs no -shm file beside the database,
    # which a read-only install could not create.
    with sqlite3.connect(db) as connection:
        connection.execute("PRAGMA journal_mode=DELETE")
    Path(f"{db}.lock").unlink(missing_ok=True)
    print(f"wrote {db}: {summary}")
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip() or "not read"
    (args.out / "README.md").write_text(
        "# Sample results\n\n"
        f"Measured on an {device.name} (driver {driver}) on {time.strftime('%Y-%m-%d', time.gmtime())} with "
        f"pyhipbench {hb.__version__}, Python {sys.version.split()[0]}, by `python bench/make_samples.py "
        "--out pyhipbench/samples` (its docstring says what each file holds). Real measurements, for trying "
        "`pyhipbench compare` and `pyhipbench plot` without a GPU; each report's environment records the "
        "machine in full.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
