"""bench(): the measurement policy, in one screen.

1. Check everything on the CPU: launch limits, argument count and sizes
   against the code object's parameter list, rotation vs free memory,
   iterations >= R. Bad input raises BenchError; nothing has been launched.
2. Make R - 1 copies of every rotated array (contents copied once, now).
3. Pack R argument sets into one LaunchPlan (pointer arrays built once).
4. The C++ loop runs `warmup` launches, then `iterations` timed ones, set
   (i mod R) each, each launch bracketed by its own event pair, with the GIL
   released and nothing allocated.
5. Free the copies; return per-iteration µs with the rotation that made them.
"""
from __future__ import annotations

from . import _core
from .backends.base import DeviceProperties
from .args import Argument, check_args
from .argument_sets import ArgumentSets, rotated_arrays
from .errors import BenchError
from .launch_config import Dims, LaunchConfig
from .module import Kernel
from .result import Result
from .rotation import plan_rotation
from .stream import Stream


def bench(kernel: Kernel, grid: Dims, block: Dims, args: list[Argument], *,
          iterations: int = 100, warmup: int = 10, rotate: int | str = "auto",
          shared_bytes: int = 0, stream: Stream | None = None) -> Result:
    """Times `iterations` launches of `kernel` (µs each) after `warmup` untimed ones.

    `rotate`: "auto" sizes R from the last-level cache and free memory; an int
    sets R (1 = warm). Arrays wrapped in `shared()` are not rotated. `stream`
    is a `Device.stream()` (None = the default stream).
    """
    device = kernel.device
    props = device.properties
    config = LaunchConfig.checked(grid, block, shared_bytes, props)
    check_args(kernel.name, kernel.params, args)
    for name, value, low in (("iterations", iterations, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise BenchError(f"{name}={value!r}: expected an integer >= {low}")

    rotated = rotated_arrays(args)
    free, total = device.memory_info()
    rotation = plan_rotation(sum(a.nbytes for a in rotated), props.llc_bytes, free, total, rotate)
    if iterations < rotation.sets:
        raise BenchError(f"iterations={iterations} is fewer than the {rotation.sets} rotated sets; "
                         f"every set must be used: ask for >= {rotation.sets} iterations or fewer sets")

    with ArgumentSets(device, kernel.params, args, rotation.sets) as sets:
        plan = make_plan(kernel, config, sets, stream.handle if stream else 0)
        device.timer.run(plan, warmup, 0)  # the timer makes the device's context current itself
        times_us, _, host_us = device.timer.run(plan, iterations, warmup % rotation.sets)
    return Result(kernel.name, _device_facts(props), config, rotation, times_us, warmup,
                  host_us / iterations)


def make_plan(kernel: Kernel, config: LaunchConfig, sets: ArgumentSets, stream: int = 0) -> _core.LaunchPlan:
    """The C++ core's launch plan: `kernel` with `config`, one packed buffer per set."""
    return _core.LaunchPlan(kernel.handle, kernel.name, config.grid, config.block, config.shared_bytes,
                            stream, sets.packed(), [p.offset for p in kernel.params])


def _device_facts(props: DeviceProperties) -> dict:
    return {"backend": props.backend, "index": props.index, "name": props.name, "arch": props.arch,
            "l2_bytes": props.l2_bytes, "llc_bytes": props.llc_bytes}
