"""What a source's compile takes (CompileTarget) and gives (Code; CompiledLaunch where it fixed the launch)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .._codeobject.code_object import CodeObject
from .._launch.arg_spec import ArgSpec, ArraySpec, ScalarSpec

__all__ = ["CompileTarget", "CompiledLaunch", "Code", "scratch_sizes"]


@dataclass(frozen=True)
class CompileTarget:
    """What a compiler needs to know of the GPUs it compiles for (a sweep's, or `pyhipbench run`'s):
    the processor (gfx942, sm_90), on NVIDIA the CUDA driver version (the newest PTX it loads), and
    Triton's GPUTarget fields for it (backend, capability or processor, warp size)."""
    arch: str
    driver_version: int | None = None
    triton_target: tuple[str, int | str, int] | None = None

    def __str__(self) -> str:
        return self.arch if self.driver_version is None else f"{self.arch} (CUDA driver {self.driver_version})"


def scratch_sizes(per_program: Sequence[int], grid: Sequence[int]) -> tuple[int, ...]:
    """Each scratch pointer's buffer for a launch of `grid`: its per-program bytes x the programs
    (0: a null pointer is passed)."""
    programs = math.prod(int(g) for g in grid)
    return tuple(programs * size for size in per_program)


@dataclass(frozen=True)
class CompiledLaunch:
    """What a compile fixed of its kernel's launch (Triton's): the kernel's name, its block (num_warps x
    warp size threads), its dynamic shared memory (bytes), the parameters it keeps of the candidate's
    arguments as (index in the candidate's args, the scalar dtype Triton typed it as, or None for a
    pointer) (Triton folds some in as constants: integers equal to 1, None), and the scratch memory per
    program (bytes) of the pointers it takes after them (0: a null pointer)."""
    kernel: str
    block: tuple[int, int, int]
    shared_bytes: int
    params: tuple[tuple[int, str | None], ...]
    scratch_bytes: tuple[int, ...]

    def args(self, given: tuple[ArgSpec, ...], grid: tuple[int, ...]) -> tuple[ArgSpec, ...]:
        """The launch's arguments for a candidate's `given` ones and its `grid`: the kept ones (scalars as
        Triton typed them), then the scratch buffers (one for the whole grid, not rotated) or null pointers."""
        kept: list[ArgSpec] = []
        for index, dtype in self.params:
            spec = given[index]
            kept.append(spec if dtype is None or not isinstance(spec, ScalarSpec) else ScalarSpec(dtype, spec.value))
        return tuple(kept) + tuple(ArraySpec("uint8", size, shared=True) if size else ScalarSpec("uint64", 0)
                                   for size in scratch_sizes(self.scratch_bytes, grid))


@dataclass(frozen=True)
class Code:
    """A source compiled for a CompileTarget: the code object's bytes, `lowered_names`
    (a C++ name expression such as "scale<float>" -> the mangled name the module knows it by),
    `launch`, where the compile fixed the launch (Triton), else None, and `code_object`, where
    pyhipbench's code generator or NVRTC / hiprtc made the code, what it says of it (the target
    compiled for, the kernels, the AMD proof; its `data` is `data`), else None."""
    data: bytes
    lowered_names: dict[str, str] = field(default_factory=dict)
    launch: CompiledLaunch | None = None
    code_object: CodeObject | None = None

    def kernel_name(self, kernel: str) -> str:
        """The name to look `kernel` (a candidate's kernel field) up by in the loaded module."""
        return self.lowered_names.get(kernel, kernel)
