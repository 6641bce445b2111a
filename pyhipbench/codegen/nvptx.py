"""NVPTX: IR (with an optional user prologue in inline PTX) -> PTX text.

NVIDIA has no instruction-cache invalidation: neither PTX nor the CUDA driver
API exposes one, so there is no flush prologue here. Cold instruction caches
on NVIDIA need code rotation (several loaded copies of a module), which is
not built yet.

PTX ISA version (the ``.version`` line): ``ptx_version`` when given (e.g. 80
-> ``.version 8.0``); else the highest ``+ptxNN`` in the IR's functions'
"target-features" (clang-22 writes +ptx88), because functions may use what
that version offers and the header must allow it; else the lowest version
LLVM knows for the sm (7.8 for sm_90, 8.6 for sm_100), which every driver
able to run that GPU loads. The CUDA 13.0 driver (580) loads up to PTX 9.0;
an older driver rejects a newer version at load time, so pass a lower
``ptx_version`` for it.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from .. import ir

__all__ = ["TRIPLE", "compile_module", "max_ptx_version", "ptx_version_of"]

TRIPLE = "nvptx64-nvidia-cuda"
_VERSION = re.compile(r"^\.version (\d+)\.(\d+)$", re.MULTILINE)

# The first CUDA release whose driver loads each PTX ISA version (x10), from
# NVIDIA's PTX ISA release history.
FIRST_CUDA_FOR_PTX: dict[int, tuple[int, int]] = {
    70: (11, 0), 71: (11, 1), 72: (11, 2), 73: (11, 3), 74: (11, 4), 75: (11, 5), 76: (11, 6),
    77: (11, 7), 78: (11, 8), 80: (12, 0), 81: (12, 1), 82: (12, 2), 83: (12, 3), 84: (12, 4),
    85: (12, 5), 86: (12, 7), 87: (12, 8), 88: (12, 9), 90: (13, 0), 91: (13, 1),
}


def max_ptx_version(driver_version: int) -> int:
    """The newest PTX ISA version (x10) a driver loads; `driver_version` as
    cuDriverGetVersion reports it (13000 = CUDA 13.0)."""
    cuda = (driver_version // 1000, driver_version % 1000 // 10)
    loadable = [ptx for ptx, first in FIRST_CUDA_FOR_PTX.items() if first <= cuda]
    if not loadable:
        raise ValueError(f"CUDA driver {cuda[0]}.{cuda[1]} predates PTX ISA 7.0 (CUDA 11.0); "
                         "pyhipbench needs CUDA 11 or newer")
    return max(loadable)


def ptx_version_of(ptx: bytes) -> int:
    """The `.version` (x10) PTX text declares."""
    m = _VERSION.search(ptx.decode(errors="replace"))
    if m is None:
        raise ValueError("PTX text has no .version line")
    return int(m.group(1)) * 10 + int(m.group(2))


def compile_module(
    module: ir.Module, kernels: list[str], sm: str, *, prologue: str | None, ptx_version: int | None
) -> bytes:
    """PTX text (bytes, NUL-free) for ``sm`` (e.g. "sm_90") from a verified nvptx64 module.

    ``prologue`` is inline PTX injected first into every kernel; ``ptx_version``
    is the PTX ISA version times ten (78, 80, 90), or None for the IR's
    (its highest "+ptxNN" function feature), else LLVM's minimum for ``sm``.
    """
    if ptx_version is None:
        in_ir = [int(f[4:]) for f in module.target_features if re.fullmatch(r"\+ptx\d+", f)]
        ptx_version = max(in_ir, default=None)
    if prologue is not None:
        module = ir.inject_prologue(module, prologue, kernels)
    features = "" if ptx_version is None else f"+ptx{ptx_version}"
    machine = llvm.Target.from_triple(TRIPLE).create_target_machine(cpu=sm, features=features)
    ptx = machine.emit_assembly(module.clone())
    # LLVM ignores an unknown "+ptxNN" with only a warning on stderr, and never
    # writes a version below what `sm` needs: check what it wrote.
    m = _VERSION.search(ptx)
    written = int(m.group(1)) * 10 + int(m.group(2))
    if ptx_version is not None and written != ptx_version:
        raise ValueError(
            f"PTX ISA version {ptx_version / 10:.1f} was asked for but LLVM "
            f"{llvm.llvm_version_info[0]} wrote .version {m.group(1)}.{m.group(2)} for {sm}: "
            "use a version this LLVM knows, at least the one the GPU needs"
        )
    return ptx.encode()
