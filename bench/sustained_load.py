"""How a sustained run changes bench/attention_kernel.py's fastest configs' times, and how fast it settles.

  burst     every config measured by pyhipbench.triton.bench_compiled with the defaults (a few ms each)
  switch    the three fastest, A, B and C, launched back to back without a pause: A 400 ms, B 400 ms,
            A 300 ms, C 300 ms, each launch event-timed; per segment the median of each 10 ms window,
            its settled time (the median of its last 100 ms) and how long after the switch the windows
            came within 1 % of it
  holds     the six fastest measured with hold_s = 0, 0.05, 0.1 and 0.2 s (throttle_threshold 0, one
            second idle before each round): each one's median and SM clock, and each round's pick
  do_bench  the same six by triton.testing.do_bench, rep = 100 and 300 ms, one second idle before each

Prints a summary; writes sustained_load.json in --out.

    python bench/sustained_load.py [--out DIR]

Needs an NVIDIA GPU, torch and triton 3.x.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_kernel import attention_forward, configs  # noqa: E402
from compile_ahead import HEAD_DIM, attention_args, attention_grid, attention_tensors  # noqa: E402

import pyhipbench as hb  # noqa: E402
import pyhipbench.triton as ht  # noqa: E402

HOLDS_S = (0.0, 0.05, 0.1, 0.2)
SEGMENTS = (("A", 400), ("B", 400), ("A", 300), ("C", 300))  # (config, ms), back to back


def short(config) -> str:
    kw = config.all_kwargs()
    return f"{kw['BLOCK_M']}x{kw['BLOCK_N']} w{kw['num_warps']} s{kw['num_stages']}"


def series(launchers: dict, burst_us: dict) -> list[dict]:
    """SEGMENTS launched back to back, each launch between two events; per segment its 10 ms windows."""
    torch.cuda.synchronize()
    time.sleep(1.0)
    base = torch.cuda.Event(enable_timing=True)
    base.record()
    marks = []
    for name, ms in SEGMENTS:
        count = int(ms * 1000 / burst_us[name])
        events = [torch.cuda.Event(enable_timing=True) for _ in range(count + 1)]
        for i in range(count):
            events[i].record()
            launchers[name]()
        events[count].record()
        marks.append((name, events))
    torch.cuda.synchronize()
    segments = []
    for name, events in marks:
        starts = [base.elapsed_time(e) for e in events]
        times = [(b - a) * 1e3 for a, b in zip(starts, starts[1:])]
        windows, window, opened = [], [], starts[0]
        for at, us in zip(starts, times):
            if at - opened >= 10:
                windows.append(statistics.median(window))
                window, opened = [], at
            window.append(us)
        settled = statistics.median(windows[-10:])
        late = [i for i, w in enumerate(windows) if abs(w / settled - 1) > 0.01]
        segments.append({"config": name, "windows_us": [round(w, 1) for w in windows], "settled_us": settled,
                         "settled_after_ms": 10 * (late[-1] + 1) if late else 0})
    return segments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    options = parser.parse_args()
    device = hb.Device()
    args = attention_args(*attention_tensors())
    kernels, burst = {}, {}
    for config in configs():
        try:
            kernel = ht.compile(attention_forward, args, device, HEAD_DIM=HEAD_DIM, **config.all_kwargs())
        except hb.Error:
            continue
        kernels[short(config)] = (config, kernel)
        burst[short(config)] = ht.bench_compiled(kernel, attention_grid).median_us
    top = sorted(burst, key=burst.get)[:6]
    print("burst (µs):", ", ".join(f"{n} {burst[n]:.1f}" for n in top))

    def launcher(name: str):
        meta = kernels[name][0].all_kwargs()
        return lambda: attention_forward[attention_grid](*args, HEAD_DIM=HEAD_DIM, **meta)
    roles = dict(zip("ABC", top))
    switch = series({r: launcher(n) for r, n in roles.items()}, {r: burst[n] for r, n in roles.items()})
    for segment in switch:
        print(f"switch {segment['config']} = {roles[segment['config']]}: settled {segment['settled_us']:.1f} µs "
              f"after {segment['settled_after_ms']} ms; 10 ms windows {segment['windows_us'][:12]} ...")
    holds = {}
    for hold_s in HOLDS_S:
        time.sleep(1.0)
        row = {}
        for name in top:
            r = ht.bench_compiled(kernels[name][1], attention_grid, hold_s=hold_s, throttle_threshold=0)
            row[name] = {"median_us": r.median_us, "clock_mhz": None if r.clock is None else r.clock.mean_mhz}
        holds[hold_s] = row
        print(f"hold {hold_s} s: pick {min(row, key=lambda n: row[n]['median_us'])}; "
              + ", ".join(f"{n} {v['median_us']:.1f} @ {v['clock_mhz'] or 0:.0f}" for n, v in row.items()))
    references = {}
    for rep in (100, 300):
        time.sleep(1.0)
        references[rep] = {n: triton.testing.do_bench(launcher(n), rep=rep) * 1e3 for n in top}
        print(f"do_bench rep={rep}: pick {min(references[rep], key=references[rep].get)}; "
              + ", ".join(f"{n} {v:.1f}" for n, v in references[rep].items()))
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "sustained_load.json").write_text(json.dumps(
        {"burst_us": burst, "top": top, "roles": roles, "switch": switch, "holds": holds,
         "do_bench_us": references}, indent=1))


if __name__ == "__main__":
    main()
