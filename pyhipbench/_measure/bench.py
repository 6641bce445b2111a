"""bench(): the measurement policy, in one screen.

1. Check everything on the CPU: the kernel, launch limits, the arguments
   against the code object's parameters, the timer, the cache state, the
   stopping targets. Bad input raises BenchError; nothing has been launched.
2. Cache state (cache.py): warm = one argument set; dirty-cold = R sets
   spanning the last-level cache (rotation.py); clean-cold = one set and a
   clean step before each timed launch, outside its timing.
3. Make the R - 1 copies (argument_sets.py) and pack the R sets into one
   LaunchPlan; with `expect`, launch it once on each set and check the
   outputs (expect.py); the C++ core's `measure` runs the timer (timers.py)
   on it with the GIL released, chunk by chunk, each chunk continuing the
   rotation.
4. There, warm up until two chunk medians agree (or `warmup` samples); then
   take runs, each sized to reach the precision, until the stopping rule
   (stopping.py) is met: the median's 95 % CI within ±`precision`, or
   (racing) wholly above `slower_than_us`, or `max_time_s`, or the sample
   cap; `iterations` fixes the count instead.
5. Free the copies; return the samples with what made them (result.py).
"""
from __future__ import annotations

import time

from .. import _core
from .._device.backends.base import DeviceProperties
from .._device.device import Device
from .._device.module import Kernel
from .._device.stream import Stream
from .._launch.args import Argument, adopt_tensors, check_args
from .._launch.argument_sets import ArgumentSets, rotated_arrays
from .._launch.launch_config import Dims, LaunchConfig
from .._values import show
from ..errors import BenchError
from .cache import clean_step
from .expect import Expect, Expectation
from .options import BenchOptions
from .result import Result
from .rotation import plan_rotation
from .timers import default_timer, min_launches_per_sample, timer_for


def bench(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], *,
          timer: str = "auto", cache: str = "auto", precision: float = 0.01, max_time_s: float = 1.0,
          iterations: int | None = None, warmup: int | None = None, rotate: int | str = "auto",
          slower_than_us: float | None = None, shared_bytes: int = 0, stream: Stream | None = None,
          expect: Expect = None, atol: float | None = None, rtol: float | None = None) -> Result:
    """Times `kernel` (µs per launch) until its median is known to ±`precision` (95 % CI).

    `timer`, `cache`, `precision`, `max_time_s` (s), `iterations`, `warmup`,
    `rotate` and `slower_than_us` (µs) are the measurement's options
    (`BenchOptions` documents each). Arrays wrapped in `shared()` never rotate.
    `shared_bytes`: dynamic shared memory, bytes.
    `stream`: a `Device.stream()` (None = the default stream).
    `expect`: reference outputs (a list aligned with `args`, or a dict
    {argument index: host array}) or a callable check(outputs) -> bool; the
    kernel is launched once on every argument set and its outputs checked
    (`atol`, `rtol`: numpy.isclose's tolerances) before anything is timed,
    raising OutputMismatch if wrong (expect.py).
    """
    options = BenchOptions(timer=timer, cache=cache, precision=precision, max_time_s=max_time_s,
                           iterations=iterations, warmup=warmup, rotate=rotate, slower_than_us=slower_than_us)
    return bench_with(kernel, grid, block, args, options, shared_bytes=shared_bytes, stream=stream,
                      expect=expect, atol=atol, rtol=rtol)


def bench_with(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], options: BenchOptions, *,
               shared_bytes: int = 0, stream: Stream | None = None, expect: Expect = None,
               atol: float | None = None, rtol: float | None = None) -> Result:
    """bench() with its measurement options already checked (a sweep's candidate, autotune, the CLI)."""
    device, config, args = _checked_launch(kernel, grid, block, args, shared_bytes, stream)
    expectation = _expectation(expect, args, kernel.name, atol, rtol)
    rule, cache, rotate = options.stop_rule(), options.cache_state, options.rotate
    timer = default_timer(device) if options.timer == "auto" else options.timer
    free, total = device.memory_info()
    samples = (rule.max_warmup_samples if options.warmup is None else options.warmup) + rule.max_samples
    launches = samples * min_launches_per_sample(timer)  # a graph or batched sample spans several
    rotation = plan_rotation(sum(a.nbytes for a in rotated_arrays(args)), device.properties.llc_bytes,
                             free, total, rotate if cache == "dirty-cold" else 1, max(launches, 2))
    core_timer = timer_for(device, timer, rotation.sets)

    started = time.perf_counter()
    with ArgumentSets(device, kernel.params, args, rotation.sets) as sets:
        plan = make_plan(kernel, config, sets, stream.handle if stream else 0)
        if expectation is not None:
            expectation.verify(device, plan, sets)
        if cache == "clean-cold":
            clean_step(device).attach(plan)
        taken = _core.measure(core_timer, plan, rule.core, options.warmup)
    times_us = taken.times_us
    return Result(kernel.name, _device_facts(device.properties), config, rotation, times_us,
                  timer=timer, cache_state="warm" if rotation.sets == 1 and cache == "dirty-cold" else cache,
                  stop_reason="iterations" if options.iterations is not None else taken.stop_reason,
                  precision=rule.precision, warmup=taken.warmup_samples,
                  launches_per_sample=taken.launches_per_sample,
                  host_us_per_kernel=taken.host_us / (len(times_us) * taken.launches_per_sample),
                  wall_s=time.perf_counter() - started, verified=expectation is not None,
                  target=kernel.module.target, slower_than_us=options.slower_than_us)


def _expectation(expect: Expect, args: list[Argument], kernel_name: str, atol: float | None,
                 rtol: float | None) -> Expectation | None:
    if expect is None:
        if atol is not None or rtol is not None:
            raise BenchError(f"atol={show(atol)}, rtol={show(rtol)} without expect: the tolerances apply to "
                             "expect's reference arrays; expected expect=... with them, or neither")
        return None
    tolerances = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
    return Expectation(expect, args, kernel_name, **tolerances)


def _checked_launch(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], shared_bytes: int,
                    stream: Stream | None) -> tuple[Device, LaunchConfig, list[Argument]]:
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
    args = check_args(kernel.name, kernel.params,
                      adopt_tensors(kernel.device.backend, kernel.name, kernel.params, list(args)))
    kernel.prepare(config)
    return kernel.device, config, args


def make_plan(kernel: Kernel, config: LaunchConfig, sets: ArgumentSets, stream: int = 0) -> _core.LaunchPlan:
    """The C++ core's launch plan: `kernel` with `config`, one packed buffer per set."""
    return _core.LaunchPlan(kernel.handle, kernel.name, config.grid, config.block, config.shared_bytes,
                            stream, sets.packed(), [p.offset for p in kernel.params])


def _device_facts(props: DeviceProperties) -> dict[str, str | int]:
    return {"backend": props.backend, "index": props.index, "name": props.name, "arch": props.arch,
            "l2_bytes": props.l2_bytes, "llc_bytes": props.llc_bytes}
