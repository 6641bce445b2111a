"""Timing a Triton kernel with bench(): compiled here or already, scratch buffers made per launch."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._device.device import Device
from .._device.memory import DeviceArray
from .._launch.args import Argument, adopt_tensors
from .._launch.launch import Launch
from .._launch.launch_config import dims
from .._measure.bench import bench_with
from .._measure.options import BenchOptions
from .._measure.result import Result
from .._values import show
from ..errors import BenchError
from ._kernel import TritonKernel, _require_triton, compile

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

__all__ = ["bench", "bench_compiled", "bench_compiled_with", "BENCH_OPTIONS", "LAUNCH_OPTIONS", "split_options",
           "kernel_launch"]

LAUNCH_OPTIONS = ("stream", "expect", "atol", "rtol")
BENCH_OPTIONS = BenchOptions.field_names() + LAUNCH_OPTIONS


def split_options(options: dict[str, Any]) -> tuple[BenchOptions, dict[str, Any]]:
    """(the measurement's options, checked; bench()'s launch keywords) from bench()-style keywords."""
    launch = {k: options[k] for k in LAUNCH_OPTIONS if k in options}
    return BenchOptions(**{k: v for k, v in options.items() if k not in launch}), launch



def bench(fn: "JITFunction", grid: int | Sequence[int] | Callable[[dict[str, Any]], Any], args: Sequence[Any], *,
          device: Device | None = None, **meta_and_options: Any) -> Result:
    """Compiles `fn` (see `compile`) and times it with bench() (µs per launch).

    `grid`: programs per axis, or a callable of the meta-parameters (a dict
    of the arguments and meta-parameters by name), like Triton's grid lambdas.
    Keywords named like bench()'s options (timer, cache, precision,
    max_time_s, iterations, warmup, rotate, stream) go to it, unless the kernel
    has a parameter of that name; the rest are the kernel's meta-parameters and
    Triton's compile options (num_warps=4, num_stages=3, BLOCK=128, ...).
    `shared_bytes` is Triton's (metadata.shared), not an option. `device`:
    None opens `Device()`.
    """
    _require_triton()
    if "shared_bytes" in meta_and_options:
        raise BenchError(f"shared_bytes={show(meta_and_options['shared_bytes'])}: a Triton kernel's dynamic "
                         "shared memory is what Triton compiled it for (metadata.shared); leave it out")
    names = getattr(fn, "arg_names", ())
    bench_options = {k: v for k, v in meta_and_options.items() if k in BENCH_OPTIONS and k not in names}
    meta = {k: v for k, v in meta_and_options.items() if k not in bench_options}
    triton_kernel = compile(fn, args, Device() if device is None else device, **meta)
    try:
        return bench_compiled(triton_kernel, grid, **bench_options)
    finally:
        triton_kernel.unload()


def bench_compiled(kernel: TritonKernel, grid: int | Sequence[int] | Callable[[dict[str, Any]], Any],
                   **bench_options: Any) -> Result:
    """Times an already compiled TritonKernel with bench() (µs per launch); `bench_options`: bench()'s
    keywords (the measurement's options, `BenchOptions`, and stream, expect, atol, rtol)."""
    options, launch = split_options(bench_options)
    return bench_compiled_with(kernel, grid, options, **launch)


def bench_compiled_with(kernel: TritonKernel, grid: int | Sequence[int] | Callable[[dict[str, Any]], Any],
                        options: BenchOptions, *, reset_to_zero: Sequence[str] = (),
                        restore_value: Sequence[str] = (), views: dict[int, DeviceArray] | None = None,
                        **launch: Any) -> Result:
    """bench_compiled with the measurement's options already checked (autotune, a sweep's Triton candidate);
    `reset_to_zero`, `restore_value`: names of the kernel's array arguments zeroed, or given back their
    contents, before each sample, outside its timing (triton.autotune's); `views`: the tensors' DeviceArray
    views by id(tensor), filled here and reused by later calls (autotune adopts each tensor once for all
    its configs); `launch`: stream, expect, atol, rtol."""
    launch_grid = dims("grid", kernel.grid(grid))  # programs per axis
    arguments = kernel.arguments()
    resets = {what: [kernel.meta[name] for name in names]
              for what, names in (("reset_to_zero", reset_to_zero), ("restore_value", restore_value))}
    if views is not None:  # the tensors as the views adopted before, each reset as its argument's view
        arguments = adopt_tensors(kernel.kernel.device.backend, kernel.kernel.name, kernel.kernel.params,
                                  arguments, views)
        resets = {what: [views.get(id(array), array) for array in arrays] for what, arrays in resets.items()}
    made, buffers = kernel_launch(kernel, launch_grid, arguments)
    try:
        return bench_with([made], options, **resets, **launch)
    finally:
        for buffer in buffers:
            buffer.free()


def kernel_launch(kernel: TritonKernel, launch_grid: tuple[int, ...], arguments: list[Argument]
                  ) -> tuple[Launch, list[DeviceArray]]:
    """The Launch of `kernel` over `launch_grid` (programs per axis) with `arguments` and Triton's two scratch
    pointers after them; the scratch buffers it made, for the caller to free after the last launch."""
    scratch, buffers = kernel.scratch(launch_grid)
    return Launch(kernel.kernel, launch_grid, kernel.block, arguments + scratch, kernel.shared_bytes), buffers

