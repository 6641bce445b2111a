"""What a number carries beyond itself: the environment, compare's verdicts, and energy.

  environment  environment([device]): its cost (first call, with NVML's start, and again), every field
               and every field it could not read; a JSON report written, then read in a fresh process
               (the environment must come back equal); nvidia-smi's driver version and UUID beside it
  compare      per case, 20 pairs of runs of one kernel (bench() defaults) and 20 pairs of the kernel
               against a variant doing 5 % more work, each pair judged by compare at its 2 % default:
               how often "same" and "slower"; cases: fma (a dependent FMA chain per thread, compute
               bound) at two lengths, the bundled copy at 16 MiB and 256 MiB (5 % more elements)
  energy       energy=True on the long fma kernel (warm): mean W, mJ per sample, the counter's step;
               beside it NVML's instant power (nvmlDeviceGetPowerUsage) polled every 10 ms over 2 s of
               the same kernel back to back

Writes trust.json in --out and prints a summary.

    python bench/trust.py [--out DIR]

Needs an NVIDIA GPU and libnvidia-ml.so.1.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

import pyhipbench as hb
from pyhipbench._results import report
from pyhipbench._results.comparison import compare
from pyhipbench._results.environment import environment, finish

HERE = Path(__file__).resolve().parent
PAIRS = 20


def smi(field: str) -> str:
    return subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"], capture_output=True,
                          text=True).stdout.strip()


def environment_case(device: hb.Device, out: Path) -> dict:
    started = time.perf_counter()
    env = environment([device])
    first_s = time.perf_counter() - started
    started = time.perf_counter()
    environment([device])
    again_s = time.perf_counter() - started
    kernel = device.bundled_kernel("copy")
    n = 1 << 18
    a, b = device.empty(n), device.empty(n)
    res = hb.bench(kernel, n // 256, 256, [a, b, hb.int64(n)], cache="warm")
    finish(env)
    path = out / "report.json"
    path.write_text(report.render(path, [res.to_dict()], env))
    fresh = subprocess.run([sys.executable, "-c", "import json, sys; from pyhipbench._results import report; "
                            "print(json.dumps(report.read(sys.argv[1]).environment))", str(path)],
                           capture_output=True, text=True, check=True)
    [record] = env["devices"]
    return {"first_call_s": first_s, "again_s": again_s, "device": record,
            "fresh_process_equal": json.loads(fresh.stdout) == json.loads(json.dumps(env)),
            "nvidia_smi": {"driver_version": smi("driver_version"), "uuid": smi("uuid"),
                           "clocks.default_applications.sm": smi("clocks.default_applications.sm"),
                           "power.limit": smi("power.limit"), "temperature.gpu": smi("temperature.gpu")}}


def compare_case(name: str, run_base, run_slower) -> dict:
    same, slower = Counter(), Counter()
    ratios_same, ratios_slower = [], []
    for i in range(PAIRS):
        a, b = run_base(), run_base()
        [c] = compare([a], [b])
        same[c.verdict] += 1
        ratios_same.append(c.ratio)
        if i % 2:  # alternate which runs first, so a drift does not side with either
            a, b = run_base(), run_slower()
        else:
            b = run_slower()
            a = run_base()
        [c] = compare([a], [b])
        slower[c.verdict] += 1
        ratios_slower.append(c.ratio)
    return {"case": name, "same_pairs": dict(same), "slower_pairs": dict(slower),
            "same_ratio_range": [min(ratios_same), max(ratios_same)],
            "slower_ratio_range": [min(ratios_slower), max(ratios_slower)], "median_us": a["stats_us"]["median"]}


def compare_cases(device: hb.Device) -> list[dict]:
    fma = device.load_module(HERE / "kernels" / "fma.ptx").kernel("fma")
    out = device.empty(1056 * 256)
    copy = device.bundled_kernel("copy")
    cases = []
    for iterations in (200, 4000):
        def fma_run(k: int):
            return lambda: hb.bench(fma, 1056, 256, [out, hb.uint32(k)]).to_dict()
        cases.append(compare_case(f"fma {iterations} iterations", fma_run(iterations),
                                  fma_run(round(iterations * 1.05))))
    for mib in (16, 256):
        n = mib << 18
        src, dst = device.empty(round(n * 1.05)), device.empty(round(n * 1.05))

        def copy_run(count: int):
            # Each as the base case's launch, so compare pairs the variant with it.
            return lambda: {**hb.bench(copy, -(-count // 256), 256, [src, dst, hb.int64(count)]).to_dict(),
                            "grid": [-(-n // 256), 1, 1]}
        cases.append(compare_case(f"copy {mib} MiB", copy_run(n), copy_run(round(n * 1.05))))
        src.free()
        dst.free()
    return cases


def energy_case(device: hb.Device) -> dict:
    fma = device.load_module(HERE / "kernels" / "fma.ptx").kernel("fma")
    out = device.empty(1056 * 256)
    res = hb.bench(fma, 1056, 256, [out, hb.uint32(20000)], cache="warm", energy=True)
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    nvml.nvmlInit_v2()
    handle = ctypes.c_void_p()
    nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle))
    readings: list[int] = []
    running = threading.Event()
    running.set()

    def poll() -> None:
        milliwatts = ctypes.c_uint()
        while running.is_set():
            nvml.nvmlDeviceGetPowerUsage(handle, ctypes.byref(milliwatts))
            readings.append(milliwatts.value)
            time.sleep(0.01)

    launches = max(1, round(2.0 / (res.median_us * 1e-6)))  # 2 s of the kernel, back to back
    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    hb.bench(fma, 1056, 256, [out, hb.uint32(20000)], cache="warm", iterations=launches, warmup=0)
    running.clear()
    poller.join()
    steady = readings[len(readings) // 5:]  # past the first 20 %: the power settled
    return {"kernel_median_us": res.median_us, "energy": res.energy.to_dict(),
            "nvml_power_usage_w": {"mean": float(np.mean(steady)) / 1e3, "min": min(steady) / 1e3,
                                   "max": max(steady) / 1e3, "readings": len(steady)},
            "summary": res.summary()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    device = hb.Device("cuda")
    results = {"environment": environment_case(device, args.out), "compare": compare_cases(device),
               "energy": energy_case(device)}
    (args.out / "trust.json").write_text(json.dumps(results, indent=2))
    env = results["environment"]
    print(f"environment: first call {env['first_call_s'] * 1e3:.1f} ms, again {env['again_s'] * 1e3:.2f} ms; "
          f"fresh process equal: {env['fresh_process_equal']}; unreadable: {env['device']['unreadable']}")
    print(f"  driver {env['device']['driver_version']} (nvidia-smi {env['nvidia_smi']['driver_version']}), "
          f"uuid match: {env['device']['uuid'] == env['nvidia_smi']['uuid']}")
    for c in results["compare"]:
        print(f"compare {c['case']} ({c['median_us']:.2f} µs): same pairs {c['same_pairs']}, 5 % slower pairs "
              f"{c['slower_pairs']}; B/A same {c['same_ratio_range'][0]:.4f}–{c['same_ratio_range'][1]:.4f}, "
              f"slower {c['slower_ratio_range'][0]:.4f}–{c['slower_ratio_range'][1]:.4f}")
    e = results["energy"]
    print(f"energy: {e['energy']['mean_w']:.1f} W, {e['energy']['mj_per_sample']:.4f} mJ per sample, counter "
          f"step {e['energy']['counter_step_ms']:.1f} ms; NVML power usage {e['nvml_power_usage_w']['mean']:.1f} W "
          f"({e['nvml_power_usage_w']['min']:.0f}–{e['nvml_power_usage_w']['max']:.0f})")


if __name__ == "__main__":
    main()
