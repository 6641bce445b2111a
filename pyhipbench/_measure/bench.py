"""bench() and bench_chain(): the measurement policy, in one screen.

1. Check everything on the CPU: each kernel, its launch limits, its arguments
   against the code object's parameters, the timer, the cache state, the
   stopping targets. Bad input raises BenchError; nothing has been launched.
2. Cache state (cache.py): warm = one argument set; dirty-cold = R sets
   spanning the last-level cache (rotation.py); clean-cold = one set and a
   clean step before each sample, outside its timing.
3. Make the R - 1 copies of every array the chain's kernels take
   (argument_sets.py) and pack the R sets into one LaunchPlan; with `expect`,
   run the chain once on each set and check the outputs (expect.py); with
   `reset_to_zero` / `restore_value`, add the untimed reset steps; the C++
   core's `measure` runs the timer (timers.py) on it with the GIL released,
   chunk by chunk, each chunk continuing the rotation.
4. There, warm up until two chunk medians agree (or `warmup` samples); then
   take runs, each sized to reach the precision, until the stopping rule
   (csrc/stopping.cpp) is met: the median's 95 % CI within ±`precision`, or
   (racing) wholly above `slower_than_us`, or `max_time_s`, or the sample
   cap; `iterations` fixes the count instead.
5. Free the copies; return the samples with what made them (result.py).
   On a terminal, a measurement that may run past a second shows its
   seconds so far (_progress.elapsed).

A sample is the whole chain: one kernel (bench), or several in order
(bench_chain), each on the same argument set.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _core
from .._device.backends.base import DeviceProperties
from .._device.device import Device
from .._device.memory import DeviceArray
from .._device.module import Kernel
from .._device.stream import Stream
from .._launch.args import Argument, Shared, adopt_tensors, check_args
from .._launch.argument_sets import ArgumentSets, rotated_arrays
from .._launch.launch import Launch
from .._launch.launch_config import Dims, LaunchConfig
from .._progress import elapsed
from .._values import show
from ..errors import BenchError
from .cache import clean_step
from .energy import energy_counter, measure_energy, sample_s
from .expect import Expect, Expectation
from .options import BenchOptions, fixed_count, takes_options
from .resolved import Resolved, resolve
from .result import Clock, KernelTime, Result
from .rotation import plan_rotation
from .timers import min_launches_per_sample, timer_for

log = logging.getLogger(__name__)


@takes_options()
def bench(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], *, shared_bytes: int = 0,
          stream: Stream | None = None, expect: Expect = None, atol: float | None = None, rtol: float | None = None,
          **options: Any) -> Result:
    """Times `kernel` (µs per launch) until its median is known to ±`precision` (95 % CI).

    `options`: the measurement's options, `BenchOptions`' fields as keywords (timer, cache, precision,
    max_time_s in s, iterations, warmup, rotate, slower_than_us in µs, throttle_threshold, energy, hold_s
    in s; `BenchOptions` documents each). Arrays wrapped in `shared()` never rotate.
    `shared_bytes`: dynamic shared memory, bytes.
    `stream`: a `Device.stream()` (None = the default stream).
    `expect`: reference outputs (a list aligned with `args`, or a dict
    {argument index: host array}) or a callable check(outputs) -> bool; the
    kernel is launched once on every argument set and its outputs checked
    (`atol`, `rtol`: numpy.isclose's tolerances) before anything is timed,
    raising OutputMismatch if wrong (expect.py).
    """
    checked = BenchOptions.from_keywords("bench", options)
    with elapsed(checked.limit_s, f"measuring {getattr(kernel, 'name', 'a kernel')}"):
        return bench_with([Launch(kernel, grid, block, args, shared_bytes)], checked, stream=stream,
                          expect=expect, atol=atol, rtol=rtol)


@takes_options()
def bench_chain(launches: Sequence[Launch], *, stream: Stream | None = None, expect: Expect = None,
                atol: float | None = None, rtol: float | None = None, reset_to_zero: Sequence[DeviceArray] = (),
                restore_value: Sequence[DeviceArray] = (), **options: Any) -> Result:
    """Times a chain of launches run in order as one sample (µs per chain), as bench() times one.

    `options`: bench()'s (`BenchOptions`). The chain's kernels rotate together: set s of every launch
    holds set s's copy of each array, so an array two launches share is one buffer within a set. The
    clean step (clean-cold) runs before the chain, not between its kernels. With the cupti timer a
    sample is the sum of the kernels' own times, and the result gives each kernel's median and the
    chain's span (first start to last end); the events timer brackets the whole chain. `expect` is
    aligned with the last launch's arguments. `reset_to_zero`, `restore_value`: arrays (arguments of
    the chain) zero-filled, or given back their contents at the call, before each sample, outside its
    timing, and once more after the last (the arrays end as a reset step leaves them).
    """
    checked = BenchOptions.from_keywords("bench_chain", options)
    with elapsed(checked.limit_s, "measuring a chain"):
        return bench_with(launches, checked, stream=stream, expect=expect, atol=atol, rtol=rtol,
                          reset_to_zero=reset_to_zero, restore_value=restore_value)


def bench_with(launches: Sequence[Launch], options: BenchOptions, *, stream: Stream | None = None,
               expect: Expect = None, atol: float | None = None, rtol: float | None = None,
               reset_to_zero: Sequence[DeviceArray] = (), restore_value: Sequence[DeviceArray] = ()) -> Result:
    """bench_chain() with its measurement options already checked (a sweep's candidate, autotune, the CLI)."""
    return prepare_bench(launches, options, stream=stream, expect=expect, atol=atol, rtol=rtol,
                         reset_to_zero=reset_to_zero, restore_value=restore_value).run()


def prepare_bench(launches: Sequence[Launch], options: BenchOptions, *, stream: Stream | None = None,
                  expect: Expect = None, atol: float | None = None, rtol: float | None = None,
                  reset_to_zero: Sequence[DeviceArray] = (), restore_value: Sequence[DeviceArray] = ()
                  ) -> "PreparedBench":
    """bench_with's checks, made now and run later (`run()`): a sweep worker prepares the next candidate
    while the GPU measures the one before. BenchError for bad input, as bench_with."""
    device, checked, views = _checked_chain(launches, stream)
    last = checked[-1]
    expectation = _expectation(expect, last[2], last[0].name, atol, rtol)
    all_args = [a for _, _, args in checked for a in args]
    resets = _checked_resets(all_args, reset_to_zero, restore_value, views)
    set_bytes = sum(a.nbytes for a in rotated_arrays(all_args))
    if set_bytes == 0 and isinstance(options.rotate, int) and options.rotate > 1:  # said in bench()'s terms
        raise BenchError(f"rotate={options.rotate}: no argument is a rotated device array, so there is nothing to "
                         "rotate; expected rotate=1, or device arrays among the args")
    return PreparedBench(device, checked, options, stream, expectation, resets, resolve(options, device), set_bytes)


@dataclasses.dataclass(frozen=True)
class PreparedBench:
    """A measurement checked and not yet run: its device, each launch's kernel, config and checked
    arguments, its options, stream, output check, reset steps (array, zero it?), the options resolved on the
    device and the bytes of one argument set."""
    device: Device
    checked: list[tuple[Kernel, LaunchConfig, list[Argument]]]
    options: BenchOptions
    stream: Stream | None
    expectation: Expectation | None
    resets: list[tuple[DeviceArray, bool]]
    resolved: Resolved
    set_bytes: int

    def run(self) -> Result:
        """The measurement: the rotation planned against the memory free now, the sets made, the core's
        loop run; the sets freed after."""
        device, checked, options, timer = self.device, self.checked, self.options, self.resolved.timer
        rule, cache, sets_asked = options.stop_rule(), self.resolved.cache_state, self.resolved.sets_asked
        # Free memory bounds only the copies a rotation makes: one set makes none (a driver call saved).
        free, total = (0, 0) if sets_asked == 1 else device.memory_info()
        samples = (rule.max_warmup_samples if options.warmup is None else options.warmup) + rule.max_samples
        launches_made = samples * min_launches_per_sample(timer)  # a graph or batched sample spans several
        rotation = plan_rotation(self.set_bytes, device.properties.llc_bytes, free, total, sets_asked,
                                 max(launches_made, 2))
        if cache != "dirty-cold" and options.rotate != 1:  # one set for the cache state, not a rotate=1 asked for
            rotation = dataclasses.replace(rotation, reason=f"one argument set: {cache} does not rotate")
        core_timer = timer_for(device, timer, rotation.sets)
        counter = energy_counter(device) if options.energy else None  # refused before anything runs

        started = time.perf_counter()
        saved: list[DeviceArray] = []
        try:
            with ArgumentSets(device, [(kernel.params, args) for kernel, _, args in checked], rotation.sets) as sets:
                plan = make_plan([(kernel, config) for kernel, config, _ in checked], sets,
                                 self.stream.handle if self.stream else 0)
                if self.expectation is not None:
                    self.expectation.verify(device, plan, sets)
                contents = []
                for array, zero in self.resets:
                    source = 0
                    # The contents as they are now (zeros for a zero fill): restored before each sample, and after.
                    contents.append(np.zeros(array.shape, array.dtype) if zero else array.to_numpy())
                    if not zero:
                        saved.append(device.array(contents[-1]))
                        source = saved[-1].address
                    plan.add_reset([sets.address(s, array) for s in range(len(sets))], source, array.nbytes)
                if self.resolved.clean_step:
                    clean_step(device).attach(plan)
                taken = _core.measure(core_timer, plan, rule, options.warmup)
                energy = None if counter is None else measure_energy(
                    counter, lambda n: _core.measure(core_timer, plan, fixed_count(n, 0), 0), sample_s(taken))
                for (array, _), values in zip(self.resets, contents):  # the arrays as a reset step leaves them
                    array.copy_from(values)
        finally:
            for array in saved:
                array.free()
        times_us = taken.times_us
        log.info("%s: timer %s%s, cache %s%s, %d set(s) (%s); %d samples, stopped: %s", plan.name, timer,
                 " (auto)" if options.timer == "auto" else "", cache, " (auto)" if options.cache == "auto" else "",
                 rotation.sets, rotation.reason, len(times_us), taken.stop_reason)
        first_kernel, first_config, _ = checked[0]
        return Result(plan.name, _device_facts(device.properties), first_config, rotation, times_us,
                      timer=timer, cache_state="warm" if rotation.sets == 1 and cache == "dirty-cold" else cache,
                      timer_note=self.resolved.timer_note,
                      stop_reason="iterations" if options.iterations is not None else taken.stop_reason,
                      precision=rule.precision, warmup=taken.warmup_samples,
                      launches_per_sample=taken.launches_per_sample,
                      host_us_per_kernel=taken.host_us / (len(times_us) * taken.launches_per_sample),
                      wall_s=time.perf_counter() - started, verified=self.expectation is not None,
                      target=first_kernel.module.target, slower_than_us=options.slower_than_us,
                      ran="chain" if len(checked) > 1 else "kernel",
                      kernels=_kernel_times(checked, taken.kernel_times_us),
                      span_us=taken.span_us if len(taken.span_us) else None,
                      clock=Clock.of(taken), throttled_samples=taken.throttled_samples, energy=energy)


def set_up(device: Device, options: BenchOptions) -> None:
    """What a first measurement on `device` with `options` makes once and the device keeps, made now:
    the auto timer's probe (a traced launch, as the options are resolved) and the clean step (its buffer,
    zeroed, and its kernel). A tuner calls it while its configs compile, so that its first measurement
    does not wait for them."""
    if resolve(options, device).clean_step:
        clean_step(device)


def _kernel_times(checked: list[tuple[Kernel, LaunchConfig, list[Argument]]],
                  kernel_times_us: np.ndarray) -> tuple[KernelTime, ...]:
    """A chain's kernels, each with its own median where the timer gave one (cupti)."""
    if len(checked) == 1:
        return ()
    has_times = kernel_times_us.shape[1] == len(checked)
    return tuple(KernelTime(kernel.name, "kernel", float(np.median(kernel_times_us[:, k])) if has_times else None,
                            grid=config.grid, block=config.block)
                 for k, (kernel, config, _) in enumerate(checked))


def _checked_resets(args: list[Argument], reset_to_zero: Sequence[DeviceArray],
                    restore_value: Sequence[DeviceArray], views: dict[int, DeviceArray]
                    ) -> list[tuple[DeviceArray, bool]]:
    """(array, zero it?) for each reset step (a tensor as the view the launches took it through, `views`);
    BenchError for an array the chain does not take."""
    arrays_taken = [a.array if isinstance(a, Shared) else a for a in args]  # a shared array is taken as it is
    taken = {id(a) for a in arrays_taken if isinstance(a, DeviceArray)}
    steps = []
    for what, arrays, zero in (("reset_to_zero", reset_to_zero, True), ("restore_value", restore_value, False)):
        if not isinstance(arrays, (list, tuple)):
            raise BenchError(f"{what}={show(arrays)}: expected a list of the chain's device arrays")
        for array in arrays:
            array = views.get(id(array), array)
            if not isinstance(array, DeviceArray) or id(array) not in taken:
                raise BenchError(f"{what}: {show(array)} is not a device array the kernels take; expected arrays "
                                 "passed in the launches' args")
            if array.nbytes > 0:
                steps.append((array, zero))
    return steps


def _expectation(expect: Expect, args: list[Argument], kernel_name: str, atol: float | None,
                 rtol: float | None) -> Expectation | None:
    if expect is None:
        if atol is not None or rtol is not None:
            raise BenchError(f"atol={show(atol)}, rtol={show(rtol)} without expect: the tolerances apply to "
                             "expect's reference arrays; expected expect=... with them, or neither")
        return None
    tolerances = {k: v for k, v in (("atol", atol), ("rtol", rtol)) if v is not None}
    return Expectation(expect, args, kernel_name, **tolerances)


def _checked_chain(launches: Sequence[Launch], stream: Stream | None
                   ) -> tuple[Device, list[tuple[Kernel, LaunchConfig, list[Argument]]], dict[int, DeviceArray]]:
    """(device, each launch's kernel, config and args, each checked, the DeviceArray views of the tensors
    among them by id(tensor): one view per tensor across the chain); BenchError naming what is wrong."""
    if not isinstance(launches, (list, tuple)) or not launches:
        raise BenchError(f"launches={show(launches)}: expected a non-empty list of pyhipbench.Launch")
    if stream is not None and not isinstance(stream, Stream):
        raise BenchError(f"stream={show(stream)}: expected a Device.stream() or None (the default stream)")
    if stream is not None and not stream.handle:
        raise BenchError("stream: this stream has been closed")
    checked = []
    views: dict[int, DeviceArray] = {}
    device = None
    for i, launch in enumerate(launches):
        if not isinstance(launch, Launch):
            raise BenchError(f"launches[{i}]={show(launch)}: expected a pyhipbench.Launch")
        kernel, args = launch.kernel, launch.args
        if not isinstance(kernel, Kernel):
            where = "kernel" if len(launches) == 1 else f"launches[{i}].kernel"
            raise BenchError(f"{where}={show(kernel)}: bench() times a Kernel (device.load_module(...).kernel(name)), "
                             f"got {type(kernel).__name__}")
        if not kernel.module.handle:
            raise BenchError(f"kernel {kernel.name!r}: its {kernel.module.format} module has been unloaded")
        if device is not None and kernel.device is not device:
            raise BenchError(f"kernel {kernel.name!r} is on another device than the chain's first kernel; "
                             "a chain runs on one device")
        device = kernel.device
        if not isinstance(args, (list, tuple)):
            raise BenchError(f"args={show(args)}: expected a list of kernel arguments")
        config = LaunchConfig.checked(launch.grid, launch.block, launch.shared_bytes, device.properties)
        args = check_args(kernel.name, kernel.params, adopt_tensors(device.backend, kernel.name, kernel.params,
                                                                    list(args), views))
        kernel.prepare(config)
        checked.append((kernel, config, args))
    assert device is not None
    return device, checked, views


def make_plan(kernels: Sequence[tuple[Kernel, LaunchConfig]], sets: ArgumentSets,
              stream: int = 0) -> _core.LaunchPlan:
    """The C++ core's launch plan: each kernel with its config, one packed buffer per set."""
    return _core.LaunchPlan.chain([(kernel.handle, kernel.name, config.grid, config.block, config.shared_bytes,
                                    stream, sets.packed(k), [p.offset for p in kernel.params])
                                   for k, (kernel, config) in enumerate(kernels)])


def _device_facts(props: DeviceProperties) -> dict[str, str | int]:
    return {"backend": props.backend, "index": props.index, "name": props.name, "arch": props.arch,
            "l2_bytes": props.l2_bytes, "llc_bytes": props.llc_bytes}
