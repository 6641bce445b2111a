"""bench(): the measurement policy, in one screen.

1. Check everything on the CPU: the kernel, launch limits, the arguments
   against the code object's parameters, the timer, the cache state, the
   stopping targets. Bad input raises BenchError; nothing has been launched.
2. Cache state (cache.py): warm = one argument set; dirty-cold = R sets
   spanning the last-level cache (rotation.py); clean-cold = one set and a
   clean step before each timed launch, outside its timing.
3. Make the R - 1 copies (argument_sets.py) and pack the R sets into one
   LaunchPlan; the timer (timers.py) runs it in the C++ core with the GIL
   released, chunk by chunk, each chunk continuing the rotation.
4. Warm up until two chunk medians agree (or `warmup` samples); then take
   chunks until the stopping rule (stopping.py) is met: the median's 95 %
   CI within ±`precision`, or `max_time_s`, or the sample cap; `iterations`
   fixes the count instead.
5. Free the copies; return the samples with what made them (result.py).
"""
from __future__ import annotations

import time

import numpy as np

from . import _core
from .args import Argument, check_args
from .argument_sets import ArgumentSets, rotated_arrays
from .backends.base import DeviceProperties
from .cache import DEFAULT_CACHE_STATE, check_cache_state
from .errors import BenchError
from .launch_config import Dims, LaunchConfig
from .module import Kernel
from .result import Result
from .rotation import plan_rotation
from .stats import summarize
from .stopping import StopRule
from .stream import Stream
from .timers import PER_KERNEL_TIMERS, check_timer, default_timer, timer_for
from .values import integer, show

# Every launch of a chunk holds its driver events until the chunk's one
# synchronisation, so a chunk, and a fixed count, is bounded.
MAX_LAUNCHES = 1_000_000


def bench(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], *,
          timer: str = "auto", cache: str = "auto", precision: float = 0.01, max_time_s: float = 1.0,
          iterations: int | None = None, warmup: int | None = None, rotate: int | str = "auto",
          shared_bytes: int = 0, stream: Stream | None = None) -> Result:
    """Times `kernel` (µs per launch) until its median is known to ±`precision` (95 % CI).

    `timer`: "cupti", "events", "graph", "batched", or "auto" (cupti where it
    loads, else events). `cache`: "warm", "dirty-cold", "clean-cold", or
    "auto" (warm when rotate=1, dirty-cold when rotate > 1, else clean-cold).
    `max_time_s`: wall-time cap of the timed samples, seconds. `iterations`:
    take exactly this many samples instead (no precision target).
    `warmup`: untimed samples first; None warms up until the times settle.
    `rotate`: dirty-cold's set count R ("auto": from the last-level cache and
    free memory; 1 = warm). Arrays wrapped in `shared()` never rotate.
    `stream`: a `Device.stream()` (None = the default stream).
    """
    device, config, args = _checked_launch(kernel, grid, block, args, shared_bytes, stream)
    timer, cache = check_timer(timer), check_cache_state(cache)
    rule = _stop_rule(precision, max_time_s, iterations)
    warmup = None if warmup is None else integer("warmup", warmup, 0, MAX_LAUNCHES)
    rotate = _checked_rotate(rotate)
    if cache == "auto":
        cache = DEFAULT_CACHE_STATE if rotate == "auto" else "warm" if rotate == 1 else "dirty-cold"
    if rotate != "auto" and (cache == "dirty-cold") != (rotate > 1):
        raise BenchError(f"rotate={rotate} with cache={cache!r}: only dirty-cold rotates argument sets "
                         "(rotate > 1); rotate=1 is warm")
    timer = default_timer(device) if timer == "auto" else timer
    if cache == "clean-cold" and timer not in PER_KERNEL_TIMERS:
        raise BenchError(f"cache='clean-cold' with timer={timer!r}: a {timer} sample spans several "
                         "launches, so it would time the clean step too; use timer='cupti' or 'events'")
    free, total = device.memory_info()
    launches = (rule.max_warmup_samples if warmup is None else warmup) + rule.max_samples
    rotation = plan_rotation(sum(a.nbytes for a in rotated_arrays(args)), device.properties.llc_bytes,
                             free, total, rotate if cache == "dirty-cold" else 1, max(launches, 2))
    core_timer = timer_for(device, timer, rotation.sets)

    started = time.perf_counter()
    with ArgumentSets(device, kernel.params, args, rotation.sets) as sets:
        plan = make_plan(kernel, config, sets, stream.handle if stream else 0)
        if cache == "clean-cold":
            device.clean_step().attach(plan)
        chunks = _Chunks(core_timer, plan)
        warmed = _warm_up(chunks, rule, warmup)
        times_us, stop_reason = _measure(chunks, rule)
    return Result(kernel.name, _device_facts(device.properties), config, rotation, times_us,
                  timer=timer, cache_state="warm" if rotation.sets == 1 and cache == "dirty-cold" else cache,
                  stop_reason="iterations" if iterations is not None else stop_reason,
                  precision=rule.precision, warmup=warmed, launches_per_sample=chunks.launches_per_sample,
                  host_us_per_kernel=chunks.host_us / chunks.launches,
                  wall_s=time.perf_counter() - started, target=kernel.module.target)


class _Chunks:
    """Runs of the core timer that continue the rotation from one chunk to the next."""

    def __init__(self, timer: _core.Timer, plan: _core.LaunchPlan) -> None:
        self.timer, self.plan = timer, plan
        self.next_set = self.launches = 0
        self.host_us = 0.0
        self.launches_per_sample = 1

    def take(self, samples: int) -> np.ndarray:
        times, self.launches_per_sample, host_us = self.timer.run(self.plan, samples, self.next_set)
        self.next_set = (self.next_set + samples * self.launches_per_sample) % self.plan.sets
        self.launches += samples * self.launches_per_sample
        self.host_us += host_us
        return times


def _warm_up(chunks: _Chunks, rule: StopRule, warmup: int | None) -> int:
    """Untimed samples: `warmup` of them, or chunks until two medians agree; how many were run."""
    taken = warmup or 0
    if warmup:
        chunks.take(warmup)
    elif warmup is None:
        previous = float(np.median(chunks.take(rule.warmup_chunk)))
        taken = rule.warmup_chunk
        while taken < rule.max_warmup_samples:
            median = float(np.median(chunks.take(rule.warmup_chunk)))
            taken += rule.warmup_chunk
            if rule.settled(previous, median):
                break
            previous = median
    chunks.host_us, chunks.launches = 0.0, 0  # host cost counts the timed samples only
    return taken


def _measure(chunks: _Chunks, rule: StopRule) -> tuple[np.ndarray, str]:
    """Chunks until the stopping rule says stop: (samples in µs, why it stopped)."""
    parts: list[np.ndarray] = []
    started = time.perf_counter()
    while True:
        parts.append(chunks.take(rule.next_chunk(sum(len(p) for p in parts))))
        times = np.concatenate(parts)
        reason = rule.stop_reason(summarize(times), time.perf_counter() - started)
        if reason:
            return times, reason


def _stop_rule(precision: float, max_time_s: float, iterations: int | None) -> StopRule:
    if iterations is None:
        return StopRule(precision=precision, max_time_s=max_time_s)
    n = integer("iterations", iterations, 1, MAX_LAUNCHES)
    return StopRule(precision=0, min_samples=n, max_samples=n, first_chunk=n)


def _checked_rotate(rotate: object) -> int | str:
    if isinstance(rotate, str):
        if rotate != "auto":
            raise BenchError(f"rotate={rotate!r}: expected 'auto' or a set count >= 1")
        return rotate
    return integer("rotate", rotate, 1, unit="argument sets, or 'auto'")


def _checked_launch(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], shared_bytes: int,
                    stream: Stream | None):
    """(device, launch config, args as a list), each checked; BenchError naming what is wrong."""
    if not isinstance(kernel, Kernel):
        raise BenchError(f"bench() times a Kernel (device.load_module(...).kernel(name)), "
                         f"got {type(kernel).__name__}")
    if not kernel.module.handle:
        raise BenchError(f"kernel {kernel.name!r}: its {kernel.module.format} module has been unloaded")
    if not isinstance(args, (list, tuple)):
        raise BenchError(f"args={show(args)}: expected a list of kernel arguments")
    if stream is not None and not isinstance(stream, Stream):
        raise BenchError(f"stream={show(stream)}: expected a Device.stream() or None (the default stream)")
    if stream is not None and not stream.handle:
        raise BenchError("stream: this stream has been closed")
    config = LaunchConfig.checked(grid, block, shared_bytes, kernel.device.properties)
    args = list(args)
    check_args(kernel.name, kernel.params, args)
    kernel.prepare(config)
    return kernel.device, config, args


def make_plan(kernel: Kernel, config: LaunchConfig, sets: ArgumentSets, stream: int = 0) -> _core.LaunchPlan:
    """The C++ core's launch plan: `kernel` with `config`, one packed buffer per set."""
    return _core.LaunchPlan(kernel.handle, kernel.name, config.grid, config.block, config.shared_bytes,
                            stream, sets.packed(), [p.offset for p in kernel.params])


def _device_facts(props: DeviceProperties) -> dict:
    return {"backend": props.backend, "index": props.index, "name": props.name, "arch": props.arch,
            "l2_bytes": props.l2_bytes, "llc_bytes": props.llc_bytes}
