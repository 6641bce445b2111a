"""One launch of a chain: a kernel, its grid, block, shared memory and arguments.

A chain is a list of launches run in order as one sample: a split-K GEMM and
its reduction, a zero-init kernel before an atomic one, every kernel of a
module (`module_launches`, the rocMLIR tuning driver's way: each kernel of the
module, in order, on one argument list).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from .._values import show
from ..errors import BenchError
from .args import Argument
from .launch_config import Dims

if TYPE_CHECKING:
    from .._device.module import Kernel, Module


@dataclass(frozen=True)
class Launch:
    """`kernel` launched with `grid` (blocks), `block` (threads per block), `args` and
    `shared_bytes` (dynamic shared memory, bytes). An array object passed to several
    launches of a chain is one array: the same buffer within each rotated set."""

    kernel: Kernel
    grid: Dims
    block: Dims
    args: Sequence[Argument] = field(default_factory=tuple)
    shared_bytes: int = 0


PerKernel = Union[Dims, Mapping[str, Dims]]  # one value for every kernel, or {kernel name: value}


def module_launches(module: Module, grid: PerKernel, block: PerKernel, args: Sequence[Argument], *,
                    names: Sequence[str] | None = None, shared_bytes: int = 0) -> list[Launch]:
    """Every kernel of `module` in order (`names`, else `module.kernel_names()`: sorted by name, so
    `__part_0`, `__part_1`, ... run in their order), each with `args`: a chain as the rocMLIR
    tuning driver runs a module. `grid` and `block`: one value for all, or {kernel name: value}."""
    from .._device.module import Module  # at run time: the module imports what a launch is
    if not isinstance(module, Module):
        raise BenchError(f"module_launches: module={show(module)}: expected a pyhipbench.Module "
                         "(device.load_module(...))")
    if not isinstance(args, (list, tuple)):
        raise BenchError(f"module_launches: args={show(args)}: expected a list of kernel arguments")
    if names is not None and (isinstance(names, str) or not isinstance(names, (list, tuple)) or not names
                              or not all(isinstance(n, str) for n in names)):
        raise BenchError(f"module_launches: names={show(names)}: expected a non-empty list of the module's "
                         f"kernel names ({', '.join(module.kernel_names())}) or None (all of them, in name order)")
    order = list(module.kernel_names() if names is None else names)
    if not order:
        raise BenchError("the module has no kernels to chain")
    launches = []
    for name in order:
        launches.append(Launch(module.kernel(name), _for(name, "grid", grid), _for(name, "block", block),
                               tuple(args), shared_bytes))
    return launches


def _for(name: str, what: str, value: PerKernel) -> Dims:
    if isinstance(value, Mapping):
        if name not in value:
            raise BenchError(f"{what}={show(value)} has no entry for kernel {name!r}; expected one per kernel "
                             f"of the chain, or a single {what}")
        return value[name]
    return value
