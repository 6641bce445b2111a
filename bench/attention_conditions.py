"""bench/attention_kernel.py's 36 configs timed under each condition a tuner might use, side by side.

For each config, the same cubin (Triton's compile), in one process:

  ours-clean   pyhipbench.triton.bench_compiled, cupti, clean-cold (autotune's default)
  ours-warm    the same, warm
  ours-events  pyhipbench, the events timer, clean-cold
  zero-flush   a loop as triton.testing.do_bench runs it: a 256 MB buffer zeroed (torch), then an event
               pair around Triton's launch; the median of 200
  read-flush   the same with the 256 MB buffer read (summed) instead of written: a clean, not dirty, cache
  no-flush     the same without a flush
  do_bench     triton.testing.do_bench(rep=100), its median

Then the three fastest configs without a flush for 1000 launches back to back (~0.4 s), NVML's SM clock
and clock-event reasons (bit 0x4: software power cap) read every 5 ms in a thread: whether a sustained run
slows the kernel through its clock.

Prints each config's medians (µs) and each condition's pick; writes attention_conditions.json in --out.

    python bench/attention_conditions.py [--out DIR]

Needs an NVIDIA GPU, torch and triton 3.x.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import torch
import triton
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_kernel import attention_forward, configs  # noqa: E402
from clock_reading import Nvml  # noqa: E402
from compile_ahead import HEAD_DIM, attention_args, attention_grid, attention_tensors  # noqa: E402

import pyhipbench as hb  # noqa: E402
import pyhipbench.triton as ht  # noqa: E402


def loop_us(launch, flush, n: int = 200) -> float:
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for _ in range(10):
        launch()
    for i in range(n):
        if flush is not None:
            flush()
        starts[i].record()
        launch()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def sustained(launch, nvml: Nvml, n: int = 1000) -> dict:
    """`n` launches back to back, event-timed in groups of 50, with NVML read every 5 ms meanwhile."""
    readings, done = [], threading.Event()

    def watch() -> None:
        while not done.is_set():
            readings.append((nvml.sm_mhz(), nvml.reasons()))
            time.sleep(0.005)
    groups = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n // 50)]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for start, end in groups:
        start.record()
        for _ in range(50):
            launch()
        end.record()
    torch.cuda.synchronize()
    done.set()
    watcher.join()
    return {"group_us": [round(s.elapsed_time(e) * 1e3 / 50, 1) for s, e in groups],
            "sm_mhz": sorted({r[0] for r in readings}), "reasons": sorted({r[1] for r in readings})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    options = parser.parse_args()
    device = hb.Device()
    tensors = attention_tensors()
    args = attention_args(*tensors)
    flush_buffer = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    flushes = {"zero-flush": flush_buffer.zero_, "read-flush": flush_buffer.sum,
               "no-flush": None}
    rows = {}
    for config in configs():
        meta = config.all_kwargs()
        name = str(config)
        try:
            kernel = ht.compile(attention_forward, args, device, HEAD_DIM=HEAD_DIM, **meta)
        except hb.Error as e:
            rows[name] = {"error": str(e)}
            continue
        row = {}
        for label, opts in (("ours-clean", {"cache": "clean-cold"}), ("ours-warm", {"cache": "warm"}),
                            ("ours-events", {"cache": "clean-cold", "timer": "events"})):
            row[label] = ht.bench_compiled(kernel, attention_grid, **opts).median_us
        kernel.unload()

        def launch(meta=meta) -> None:
            attention_forward[attention_grid](*args, HEAD_DIM=HEAD_DIM, **meta)
        for label, flush in flushes.items():
            row[label] = loop_us(launch, flush)
        row["do_bench"] = triton.testing.do_bench(launch, rep=100) * 1e3
        rows[name] = row
        print(name[:44], " ".join(f"{k}={v:.1f}" for k, v in row.items()), flush=True)
    measured = {k: v for k, v in rows.items() if "error" not in v}
    conditions = next(iter(measured.values())).keys()
    picks = {c: min(measured, key=lambda k: measured[k][c]) for c in conditions}
    for c, pick in picks.items():
        print(f"{c}: pick {pick}, {measured[pick][c]:.1f} µs")
    nvml = Nvml()
    runs = {}
    for config in sorted(configs(), key=lambda c: measured.get(str(c), {}).get("ours-clean", 1e9))[:3]:
        def launch(meta=config.all_kwargs()) -> None:
            attention_forward[attention_grid](*args, HEAD_DIM=HEAD_DIM, **meta)
        time.sleep(0.5)
        runs[str(config)] = sustained(launch, nvml)
        print("sustained", str(config)[:44], json.dumps(runs[str(config)]))
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "attention_conditions.json").write_text(json.dumps({"rows": rows, "picks": picks,
                                                                                 "sustained": runs}, indent=1))


if __name__ == "__main__":
    main()
