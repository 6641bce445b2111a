"""Triton kernels timed by the core: Triton compiles, pyhipbench loads and times.

`compile(fn, args, device, **meta)` compiles a `@triton.jit` function as
Triton's own launcher would for these arguments (Triton's binder makes the
same specialisation: pointers and integers divisible by 16 marked so, integers
equal to 1 and None folded in as constants) for the device's target, and
loads the binary. NVIDIA: Triton's cubin, the exact code Triton launches (its
parameter list read from Triton's PTX, so no driver query is needed). AMD:
Triton's LLVM IR through pyhipbench.codegen, so every kernel starts with the
instruction-cache flush (proven by disassembly). The launch facts come from
Triton's metadata: block = num_warps x warp size, dynamic shared memory,
the two scratch pointers Triton 3.x appends to every kernel.

`bench(fn, grid, args, **meta_and_bench_options)` times it with
`pyhipbench.bench` (the C++ loop, rotation, cache states, timers).
`autotune(configs, key)` tunes like `triton.autotune`, each config timed by
pyhipbench, and launches the winner through Triton. `TritonLaunch(fn, grid,
args, **meta)` is a candidate of `pyhipbench.tune()`, compiled ahead in its
compile pool beside the other candidates. Triton's own Autotuner
takes a `do_bench` hook instead, but the hook is handed a Python closure that
launches the kernel, and a closure cannot run inside the C++ loop: the
decorator compiles each config itself and hands the core the kernel.

Importing this package starts Triton's once-per-process costs on a thread
(_cache.prepare_triton_early). Triton is an optional dependency (`pip install
triton`); without it every call raises ToolchainError saying so.
"""
from .._compile import forkserver
from . import _kernel
from ._autotune import Autotuner, ConfigResult, Tuning, autotune
from ._bench import bench, bench_compiled, bench_compiled_with
from ._cache import prepare_triton_early
from ._kernel import TritonKernel, compile, target_of
from ._launch import TritonLaunch

if _kernel._triton is not None and not forkserver.serving:
    # Triton's installation hash and the specialiser's imports, on a thread, while the caller opens its
    # device and makes its tensors: a first tuning or compile would wait for them (a compile worker makes
    # neither).
    prepare_triton_early()

__all__ = ["TritonKernel", "compile", "bench", "bench_compiled", "bench_compiled_with", "autotune", "Autotuner",
           "Tuning", "ConfigResult", "target_of", "TritonLaunch"]
