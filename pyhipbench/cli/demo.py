"""`pyhipbench demo`: the bundled copy and empty kernels in each cache state, or without a GPU the plan."""
from __future__ import annotations

import argparse
import functools

import numpy as np

from .._device import archs
from .._device.backends import backend_class
from .._device.device import Device
from .._launch.args import int64
from .._measure.bench import bench
from .._measure.cache import CACHE_STATES, CLEAN_BYTES_PER_LLC
from .._measure.result import Result
from .._measure.rotation import plan_rotation
from .._measure.timers import default_timer
from .._progress import Progress
from ..errors import NoDeviceError
from .command import OpenDevice, add_command, add_device_options, add_profile_option, chosen_profile, no_gpu_line

MiB = archs.MiB
GiB = 1 << 30
BLOCK = 256  # threads per block of the copy
# What the plan says of the timer a backend's default picks (timers.py describes each).
TIMER_WORDS = {"cupti": "kernel time from CUPTI activity records",
               "rocprofiler": "kernel time from rocprofiler-sdk dispatch records",
               "events": "an event pair around each launch"}


def add_parser(commands: argparse._SubParsersAction, open_device: OpenDevice) -> None:
    parser = add_command(
        commands, "demo", "time the bundled kernels in each cache state",
        "On a GPU: the bundled copy kernel at a size below and one above the last-level cache, warm, "
        "dirty-cold and clean-cold, then the empty kernel, each to a ±1 % 95 % CI. Without a GPU: the plan "
        "for --profile's device (sizes, rotation, timer), with nothing run.",
        ["pyhipbench demo", "pyhipbench demo --device 1", "pyhipbench demo --profile mi300x   # without a GPU"])
    add_device_options(parser)
    add_profile_option(parser, "plan for")
    parser.set_defaults(handler=functools.partial(run, open_device=open_device))


def run(args: argparse.Namespace, open_device: OpenDevice) -> int:
    profile_name = chosen_profile(args)  # a --profile of the other vendor than --backend: refused before any device
    try:
        device = open_device(args.backend, args.device)
    except NoDeviceError as e:  # no GPU is no failure here: the plan is what the demo shows
        print_plan(no_gpu_line(e, args.verbose), profile_name)
        return 0
    measure(device)
    return 0


def copy_sizes(llc_bytes: int) -> list[int]:
    """Copy sizes (bytes per buffer) well below and well above the last-level cache."""
    return [llc_bytes // 8, llc_bytes * 4]


def print_plan(why: str, profile_name: str) -> None:
    """What the demo would run on the profile's device, without running anything, under `why` there is no GPU."""
    profile = archs.PROFILES[profile_name]
    print(f"no GPU here: the plan for {profile.name} (--profile {profile_name}), nothing is run")
    print(f"  why no GPU: {why}")
    print(f"  L2 {profile.l2_bytes / MiB:.0f} MiB, last-level cache {profile.llc_bytes / MiB:.0f} MiB, "
          f"memory {profile.total_bytes / GiB:.1f} GiB")
    print(f"  the copy kernel in each cache state: warm (one argument set), dirty-cold (rotated sets), "
          f"clean-cold (one set, a {CLEAN_BYTES_PER_LLC * profile.llc_bytes / MiB:.0f} MiB read before each launch)")
    print(f"  {'copy size':>12} {'set (src+dst)':>14} {'dirty-cold sets':>16}  why")
    for size in copy_sizes(profile.llc_bytes):
        r = plan_rotation(2 * size, profile.llc_bytes, profile.total_bytes, profile.total_bytes)
        print(f"  {size / MiB:>9.1f} MiB {2 * size / MiB:>10.1f} MiB {r.sets:>16}  {r.reason}")
    timer = f"events ({TIMER_WORDS['events']})"
    kernel_timer = backend_class(profile.backend).kernel_timer  # what timer="auto" tries first
    if kernel_timer is not None:
        timer = f"{kernel_timer} ({TIMER_WORDS.get(kernel_timer, 'the kernel itself')}) where it loads, else {timer}"
    print(f"  timer: {timer}; each run stops once the median's 95 % CI is within ±1 %")
    print("  plus an empty kernel, warm, with the default timer and with per-launch events")


def measure(device: Device) -> None:
    """Times the copy at each size in each cache state, then the empty kernel, a table row each."""
    copy, empty = device.bundled_kernel("copy"), device.bundled_kernel("empty")
    p = device.properties
    print(f"{p.name} ({p.arch}), last-level cache {p.llc_bytes / MiB:.0f} MiB; medians to a ±1 % 95 % CI")
    print(f"{'kernel':<7} {'size':>10} {'cache':<11} {'timer':<7} {'sets':>5} {'median µs':>10} {'CI ±':>7} "
          f"{'samples':>7} {'GB/s':>7} {'wall ms':>8}")
    sizes, timers = copy_sizes(p.llc_bytes), list(dict.fromkeys((default_timer(device), "events")))
    progress = Progress(len(sizes) * len(CACHE_STATES) + len(timers), unit="run", desc="demo")
    try:
        for size in sizes:
            n = size // 4
            src = device.array(np.arange(n, dtype=np.float32))
            dst = device.empty_like(src)
            grid = min(-(-n // BLOCK), p.compute_units * 8)
            for cache in CACHE_STATES:
                r = bench(copy, grid, BLOCK, [src, dst, int64(n)], cache=cache)
                progress.write(_row("copy", f"{size / MiB:.1f} MiB", r, f"{2 * size / (r.median_us * 1e3):.0f}"))
                progress.done()
            src.free()
            dst.free()
        for timer in timers:
            progress.write(_row("empty", "-", bench(empty, 1, 1, [], cache="warm", timer=timer), "-"))
            progress.done()
    finally:
        progress.close()
    print("warm: one argument set; dirty-cold: rotated sets (earlier outputs still in the cache, written back "
          "during the kernel); clean-cold: one set, the cache cleaned by a read before each launch (untimed)")


def _row(kernel: str, size: str, r: Result, gbps: str) -> str:
    return (f"{kernel:<7} {size:>10} {r.cache_state:<11} {r.timer:<7} {r.rotation.sets:>5} {r.median_us:>10.3f} "
            f"{100 * r.stats.rel_ci:>6.2f}% {r.samples:>7} {gbps:>7} {1e3 * r.wall_s:>8.1f}")
