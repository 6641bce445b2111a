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
pyhipbench, and launches the winner through Triton. Triton's own Autotuner
takes a `do_bench` hook instead, but the hook is handed a Python closure that
launches the kernel, and a closure cannot run inside the C++ loop: the
decorator compiles each config itself and hands the core the kernel.

Triton is an optional dependency (`pip install triton`); without it every
call raises ToolchainError saying so.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._codeobject import image as codeobject
from ._device.device import Device
from ._device.memory import DeviceArray
from ._device.module import Kernel, Module
from ._launch.args import Argument, Pointer, Scalar, Shared, shared
from ._launch.launch import Launch
from ._launch.launch_config import dims
from ._measure.bench import bench_with as _bench
from ._measure.options import BenchOptions
from ._measure.result import Result
from ._values import icache_flush as checked_icache_flush
from ._values import show
from .codegen import compile_ir
from .errors import BenchError, CodegenError, Error, ToolchainError

_IMPORT_ERROR = ""
try:
    import triton as _triton
    from triton import knobs as _knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend
    from triton.runtime.jit import JITFunction, create_function_from_signature
    # Triton's JIT launcher's own packing of signature, constants and attributes (private, so
    # a Triton without it is refused here rather than failing inside compile).
    _pack_args = JITFunction._pack_args
except (ImportError, AttributeError) as error:  # the optional extra: every entry point says how to get it
    _triton = None
    _IMPORT_ERROR = f"{type(error).__name__}: {error}"

__all__ = ["TritonKernel", "compile", "bench", "bench_compiled", "bench_compiled_with", "autotune", "Autotuner",
           "Tuning", "ConfigResult", "target_of"]

# Triton's scalar parameter types (its launchers' ty_to_cpp) -> pyhipbench scalar dtypes.
SCALAR_DTYPES = {
    "i1": "int8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u1": "uint8", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp16": "float16", "fp32": "float32", "f32": "float32", "fp64": "float64",
}
# Triton 3.x appends these pointer parameters to every kernel, after the user's.
SCRATCH_PARAMS = ("global_scratch", "profile_scratch")
# bench()'s keywords beside the measurement's options (BenchOptions): told apart from meta-parameters by name.
LAUNCH_OPTIONS = ("stream", "expect", "atol", "rtol")
BENCH_OPTIONS = BenchOptions.field_names() + LAUNCH_OPTIONS


def _split_options(options: dict[str, Any]) -> tuple[BenchOptions, dict[str, Any]]:
    """(the measurement's options, checked; bench()'s launch keywords) from bench()-style keywords."""
    launch = {k: options[k] for k in LAUNCH_OPTIONS if k in options}
    return BenchOptions(**{k: v for k, v in options.items() if k not in launch}), launch


def _require_triton() -> None:
    if _triton is None:
        raise ToolchainError(f"Triton is not installed or cannot be imported ({_IMPORT_ERROR}): "
                             "pip install triton (pyhipbench is tested with triton 3.6)")


def target_of(device: Device) -> "GPUTarget":
    """Triton's target for `device`: ("cuda", 90, 32) for sm_90; ("hip", "gfx942", 64) for gfx942.
    AMD's wave size is 64 on gfx9 (CDNA) and 32 on gfx10 and later (RDNA), as Triton uses them."""
    _require_triton()
    return GPUTarget(*device.backend.triton_target(device.arch))


class _PointerView:
    """What Triton's binder reads of a pointer argument: its address, element type and
    size (bytes; on AMD a buffer under 2 GiB lets Triton use buffer loads, as for a tensor)."""

    def __init__(self, address: int, dtype: np.dtype, nbytes: int) -> None:
        self.address, self.dtype, self.nbytes = address, dtype, nbytes

    def data_ptr(self) -> int:
        return self.address

    def ptr_range(self) -> int:
        return self.nbytes


def _binder_view(name: str, value: Any) -> Any:
    """`value` as Triton's binder can specialise it: pyhipbench arrays and
    `__cuda_array_interface__` objects as pointers with an element type,
    typed scalars and numpy numbers as Python numbers, anything else as is
    (torch tensors, Python numbers, None)."""
    array = value.array if isinstance(value, Shared) else value
    if isinstance(array, DeviceArray):
        return _PointerView(array.address, array.dtype, array.nbytes)
    if isinstance(value, Pointer):
        raise BenchError(f"argument {name}={show(value)}: a Triton pointer parameter is typed by its "
                         "element type, which a bare address lacks; expected a DeviceArray or a tensor")
    if isinstance(value, Scalar):
        return value.value
    if isinstance(value, np.generic):
        return value.item()
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None and not hasattr(value, "data_ptr"):
        dtype = np.dtype(interface["typestr"])
        return _PointerView(interface["data"][0], dtype, math.prod(interface["shape"]) * dtype.itemsize)
    return value


def _scalar_argument(kernel: str, name: str, triton_type: str, value: Any) -> Scalar:
    """A scalar argument packed as the type Triton compiled the parameter with."""
    dtype = SCALAR_DTYPES.get(triton_type)
    if dtype is None:
        raise BenchError(f"parameter {name} of Triton kernel {kernel!r} has type {triton_type}, which "
                         f"pyhipbench cannot pack; expected pointers or one of {', '.join(SCALAR_DTYPES)}")
    if isinstance(value, Scalar):
        if value.dtype != np.dtype(dtype):
            raise BenchError(f"argument {name}={value.dtype.name}({value.value!r}) of Triton kernel {kernel!r}: "
                             f"Triton compiled the parameter as {triton_type} ({dtype}); pass "
                             f"pyhipbench.{dtype}(...) or a plain Python number, as Triton's launcher takes")
        return value
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    elif isinstance(value, np.generic):
        value = value.item()
    return Scalar(value, np.dtype(dtype))


@dataclass
class TritonKernel:
    """A Triton kernel compiled for one device and one specialisation, loaded by pyhipbench.

    `kernel.params` are Triton's non-constant parameters, in order, then the
    two scratch pointers. `signature`: those parameters' Triton types
    (`*fp16`, `i32`, ...); `constants`: the values folded in (meta-parameters,
    and arguments Triton specialises such as integers equal to 1).
    `block`: num_warps x warp size threads; `shared_bytes`: dynamic shared
    memory (bytes, Triton's `metadata.shared`); `global_scratch_bytes`,
    `profile_scratch_bytes`: scratch per program (bytes; 0 passes a null
    pointer). `binary`: what was loaded, `code_object` its bytes.
    `compiled`: Triton's CompiledKernel (`.asm`, `.metadata`). `meta`: the
    arguments, meta-parameters and options by name, what a grid callable is given.
    """
    kernel: Kernel
    compiled: Any = field(repr=False)
    signature: dict[str, str]
    constants: dict[str, Any]
    block: tuple[int, int, int]
    shared_bytes: int
    num_warps: int
    num_stages: int
    global_scratch_bytes: int
    profile_scratch_bytes: int
    binary: str
    code_object: bytes = field(repr=False)
    meta: dict[str, Any] = field(repr=False)

    @property
    def name(self) -> str:
        return self.kernel.name

    def grid(self, grid: int | Sequence[int] | Callable[[dict[str, Any]], Any]) -> tuple[int, ...]:
        """The launch grid (programs per axis): `grid`, or `grid(meta)` for a callable, as Triton's launcher."""
        if callable(grid):
            grid = grid(dict(self.meta))
        return tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)

    def arguments(self) -> list[Argument]:
        """The caller's arguments for the kernel's own parameters: pointers passed unchanged
        (arrays rotate, tensors as bench takes them), numbers packed as Triton's types."""
        arguments: list[Argument] = []
        for name, triton_type in self.signature.items():
            value = self.meta[name]
            arguments.append(value if triton_type.startswith("*")
                             else _scalar_argument(self.name, name, triton_type, value))
        return arguments

    def scratch(self, grid: tuple[int, ...]) -> tuple[list[Argument], list[DeviceArray]]:
        """The two scratch arguments for a launch of `grid`: a buffer of per-program
        bytes x programs (never rotated) where Triton asks for one, else a null
        pointer; and the buffers, for the caller to free."""
        programs = math.prod(int(g) for g in grid)
        arguments: list[Argument] = []
        buffers: list[DeviceArray] = []
        for size in (self.global_scratch_bytes, self.profile_scratch_bytes):
            if size:
                buffers.append(self.kernel.device.empty(programs * size, np.uint8))
                arguments.append(shared(buffers[-1]))
            else:
                arguments.append(Pointer(0))
        return arguments, buffers

    def unload(self) -> None:
        self.kernel.module.unload()


def _split_meta(fn: "JITFunction", meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(arguments given by name, Triton compile options such as num_warps)."""
    by_name = {k: v for k, v in meta.items() if k in fn.arg_names}
    return by_name, {k: v for k, v in meta.items() if k not in by_name}


def compile(fn: "JITFunction", args: Sequence[Any], device: Device, *, icache_flush: bool | None = None,
            **meta: Any) -> TritonKernel:
    """Compiles `fn` for `device` and these arguments and loads it.

    `args`: the kernel's arguments in order, as for `fn[grid](*args)`;
    `meta`: arguments by name (constexpr meta-parameters such as BLOCK=128)
    and Triton's compile options (num_warps, num_stages, num_ctas, maxnreg).
    `icache_flush` (AMD): None or True, Triton's LLVM IR through
    pyhipbench.codegen with the instruction-cache flush first; False,
    Triton's own HSACO, the exact code Triton launches (the two are built by
    different LLVMs, so their register use can differ). NVIDIA has no flush:
    None or False.
    Raises BenchError for arguments Triton's binder refuses, CodegenError
    when Triton cannot compile, ToolchainError without Triton.
    """
    _require_triton()
    if not isinstance(fn, JITFunction):
        raise BenchError(f"fn={show(fn)}: expected a @triton.jit function")
    if not isinstance(device, Device):
        raise BenchError(f"device={show(device)}: expected a pyhipbench Device")
    icache_flush = checked_icache_flush(icache_flush)
    if icache_flush and not device.backend.icache_invalidation:
        raise CodegenError(f"icache_flush=True on {device.arch}: NVIDIA GPUs have no instruction-cache "
                           "invalidation (neither PTX nor the driver exposes one); expected None or False")
    if not isinstance(args, (list, tuple)):
        raise BenchError(f"args={show(args)}: expected a list of the kernel's arguments")
    by_name, options = _split_meta(fn, meta)
    target = target_of(device)
    backend = make_backend(target)
    known = backend.parse_options({}).__dict__
    unknown = [k for k in options if k not in known]
    if unknown:
        raise BenchError(f"Triton kernel {fn.__name__!r}: keyword {unknown[0]}={show(options[unknown[0]])} is "
                         f"neither its parameter ({', '.join(fn.arg_names)}) nor a Triton compile option "
                         f"({', '.join(sorted(known))})")
    try:
        bound = fn.signature.bind(*args, **by_name)
    except TypeError as e:
        raise BenchError(f"Triton kernel {fn.__name__!r} takes ({', '.join(fn.arg_names)}): {e}") from None
    bound.apply_defaults()
    values = dict(bound.arguments)

    # As JITFunction.run: the debug and instrumentation options come from the function and Triton's knobs.
    compile_options = {"debug": fn.debug or _knobs.runtime.debug,
                       "instrumentation_mode": _knobs.compilation.instrumentation_mode, **options}
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    views = {name: _binder_view(name, value) for name, value in values.items()}
    try:
        bound_views, specialization, parsed = binder(**views, **compile_options)
        parsed, signature, constexprs, attrs = _pack_args(fn, backend, {**compile_options, **by_name},
                                                          bound_views, specialization, parsed)
    except TypeError as e:  # e.g. "failed to specialize argument of type: ..."
        raise BenchError(f"Triton kernel {fn.__name__!r}: {e}") from None
    except ModuleNotFoundError as e:  # Triton's AMD backend imports torch to size pointer arguments
        raise ToolchainError(f"Triton's {target.backend} backend needs {e.name} to specialise the arguments of "
                             f"{fn.__name__!r} ({e}): pip install {e.name}, or on AMD set "
                             "AMDGCN_USE_BUFFER_OPS=0 (Triton then compiles without buffer loads)") from None
    try:
        compiled = _triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target,
                                   options=parsed.__dict__)
    except Exception as e:  # Triton's compiler errors share no base class
        raise CodegenError(f"Triton could not compile {fn.__name__!r} for {device.arch} with "
                           f"{_describe(options, constexprs, fn)}: {type(e).__name__}: {e}") from e
    return _load(fn, compiled, device, signature, constexprs, values, options, icache_flush is not False)


def _constants(fn: "JITFunction", constexprs: dict) -> dict[str, Any]:
    """Triton's folded-in values (keyed by argument path) by parameter name."""
    return {fn.arg_names[path[0]]: value for path, value in constexprs.items()}


def _describe(options: dict[str, Any], constexprs: dict, fn: "JITFunction") -> str:
    return ", ".join(f"{k}={v!r}" for k, v in {**_constants(fn, constexprs), **options}.items()) or \
        "no meta-parameters"


def _load(fn: "JITFunction", compiled: Any, device: Device, signature: dict[str, str], constexprs: dict,
          values: dict[str, Any], options: dict[str, Any], icache_flush: bool) -> TritonKernel:
    metadata = compiled.metadata
    name = metadata.name
    if metadata.num_ctas != 1:
        raise BenchError(f"num_ctas={metadata.num_ctas}: Triton launches a cluster of {metadata.num_ctas} "
                         "CTAs, which needs cuLaunchKernelEx; pyhipbench's core launches without clusters, "
                         "expected num_ctas=1")
    for flag in ("launch_cooperative_grid", "launch_pdl"):
        if getattr(metadata, flag, False):
            raise BenchError(f"{flag}=True: pyhipbench's core launches without this attribute; expected False")
    if "cubin" in compiled.asm:
        # The cubin is the very code Triton launches; its PTX (same kernel) lists the parameters.
        ptx, image = compiled.asm["ptx"], compiled.asm["cubin"]
        module = Module(device, device.backend.load_module(image), "cubin",
                        codeobject.ptx_kernels(ptx), codeobject.target(ptx.encode()))
        binary = "cubin"
    elif icache_flush:
        image = compile_ir(compiled.asm["llir"].encode(), device.arch).data
        module = device.load_module(image)
        binary = "hsaco (Triton's LLVM IR through pyhipbench.codegen: icache flush first)"
    else:
        image = compiled.asm["hsaco"]
        module = device.load_module(image)
        binary = "hsaco (Triton's own, no icache flush)"
    kernel = module.kernel(name)
    own = {k: v for k, v in signature.items() if v != "constexpr"}
    expected = len(own) + len(SCRATCH_PARAMS)
    if len(kernel.params) != expected:
        module.unload()
        raise CodegenError(f"Triton kernel {name!r} has {len(kernel.params)} parameters; expected {expected}: "
                           f"{', '.join(own) or 'none'} and Triton 3.x's {' and '.join(SCRATCH_PARAMS)} "
                           f"(Triton {_triton.__version__})")
    warps = metadata.num_warps
    return TritonKernel(
        kernel=kernel, compiled=compiled, signature=own,
        constants=_constants(fn, constexprs),
        block=(warps * metadata.warp_size, 1, 1), shared_bytes=metadata.shared, num_warps=warps,
        num_stages=metadata.num_stages,
        global_scratch_bytes=getattr(metadata, "global_scratch_size", 0),  # AMD passes null: no field
        profile_scratch_bytes=metadata.profile_scratch_size, binary=binary, code_object=image,
        meta={**values, **options})


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
    options, launch = _split_options(bench_options)
    return bench_compiled_with(kernel, grid, options, **launch)


def bench_compiled_with(kernel: TritonKernel, grid: int | Sequence[int] | Callable[[dict[str, Any]], Any],
                        options: BenchOptions, *, reset_to_zero: Sequence[str] = (),
                        restore_value: Sequence[str] = (), **launch: Any) -> Result:
    """bench_compiled with the measurement's options already checked (autotune, a sweep's Triton candidate);
    `reset_to_zero`, `restore_value`: names of the kernel's array arguments zeroed, or given back their
    contents, before each sample, outside its timing (triton.autotune's); `launch`: stream, expect, atol, rtol."""
    launch_grid = dims("grid", kernel.grid(grid))  # programs per axis
    scratch, buffers = kernel.scratch(launch_grid)
    resets = {what: [kernel.meta[name] for name in names]
              for what, names in (("reset_to_zero", reset_to_zero), ("restore_value", restore_value))}
    try:
        return _bench([Launch(kernel.kernel, launch_grid, kernel.block, kernel.arguments() + scratch,
                              kernel.shared_bytes)], options, **resets, **launch)
    finally:
        for buffer in buffers:
            buffer.free()


@dataclass(frozen=True)
class ConfigResult:
    """One autotune candidate: its pyhipbench Result, or why it could not run."""
    config: Any              # the triton.Config
    result: Result | None    # None when it failed
    error: str | None = None  # the failure: a compile error, a limit it exceeds, a fault

    @property
    def median_us(self) -> float | None:
        return None if self.result is None else self.result.median_us

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: the config, and the median, CI (µs), timer, cache state, samples, why it
        stopped and the race's bound (µs; None: not raced), or the error."""
        out: dict[str, Any] = {"config": {**self.config.all_kwargs()}}
        if self.result is None:
            return {**out, "error": self.error}
        r = self.result
        return {**out, "median_us": r.median_us, "ci_us": list(r.ci_us), "timer": r.timer,
                "cache_state": r.cache_state, "samples": r.samples, "stop_reason": r.stop_reason,
                "slower_than_us": r.slower_than_us}


@dataclass(frozen=True)
class Tuning:
    """The outcome of tuning one key: every config's result, and the fastest (by median)."""
    key: tuple
    results: tuple[ConfigResult, ...]
    best: Any  # the winning triton.Config

    @property
    def failed(self) -> tuple[ConfigResult, ...]:
        return tuple(r for r in self.results if r.result is None)


class Autotuner:
    """`triton.autotune`'s configs and key, each config timed by pyhipbench.

    Calling `kernel[grid](*args, **kwargs)` tunes once per distinct key (the
    values of the `key` arguments and every argument's dtype, as Triton's
    autotuner) and launches the fastest config through Triton. `tune` tunes
    without launching; `tunings` holds every key's Tuning. With `race`, each
    config after the first stops as soon as its median's CI lies wholly above
    the lowest CI upper bound so far (bench's `slower_than_us`, stop_reason
    "slower"): the winner is measured to the precision, a config surely
    slower only until that is sure.
    """

    def __init__(self, fn: "JITFunction", configs: Sequence[Any], key: Sequence[str], device: Device | None,
                 options: BenchOptions, launch_options: dict[str, Any], icache_flush: bool | None = None,
                 race: bool = True, prune_configs_by: dict[str, Any] | None = None,
                 reset_to_zero: Sequence[str] = (), restore_value: Sequence[str] = ()) -> None:
        self.fn, self.configs, self.keys = fn, list(configs), list(key)
        self.prune_configs_by = dict(prune_configs_by or {})
        self.resets = {"reset_to_zero": list(reset_to_zero), "restore_value": list(restore_value)}
        self.icache_flush, self.race = icache_flush, race
        self._device = device
        self.options, self.launch_options = options, launch_options
        self.tunings: dict[tuple, Tuning] = {}

    @property
    def device(self) -> Device:
        if self._device is None:
            self._device = Device()
        return self._device

    def key_of(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        named = {**dict(zip(self.fn.arg_names, args)), **kwargs}
        named = {k: v for k, v in named.items() if k in self.fn.arg_names}
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def tune(self, grid: int | Sequence[int] | Callable[[dict[str, Any]], Any], *args: Any,
             **kwargs: Any) -> Tuning:
        """The Tuning for these arguments' key: each config compiled and timed (once per key).
        A config that fails to compile, exceeds a limit or faults is recorded with the reason;
        BenchError if every config failed."""
        key = self.key_of(args, kwargs)
        if key in self.tunings:
            return self.tunings[key]
        results: list[ConfigResult] = []
        for config in self.pruned(args, kwargs):
            results.append(self._try(config, grid, args, kwargs, self._race_bound(results)))
        ran = [r for r in results if r.result is not None]
        if not ran:
            reasons = "; ".join(f"{r.config}: {r.error}" for r in results)
            raise BenchError(f"autotune of {self.fn.__name__!r} for key {key!r}: no config ran; {reasons}")
        tuning = Tuning(key, tuple(results), min(ran, key=lambda r: r.result.median_us).config)
        self.tunings[key] = tuning
        return tuning

    def pruned(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The configs to time, as Triton's autotuner prunes them, before anything is compiled:
        `early_config_prune(configs, named_args, **kwargs)`, then the `top_k` (a count, or a fraction
        of the configs) that `perf_model(**named_args, **kwargs, **config.all_kwargs())` ranks first."""
        named = dict(zip(self.fn.arg_names, args))
        configs = self.configs
        prune = self.prune_configs_by
        if prune.get("early_config_prune") is not None:
            configs = list(prune["early_config_prune"](configs, named, **kwargs))
            if not configs or not all(isinstance(c, _triton.Config) for c in configs):
                raise BenchError(f"early_config_prune returned {show(configs)}: expected a non-empty list of "
                                 "the triton.Config it was given")
        if prune.get("perf_model") is not None:
            top_k = prune.get("top_k", 10)
            if isinstance(top_k, float) and 0 < top_k <= 1:
                top_k = max(1, int(len(self.configs) * top_k))
            if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
                raise BenchError(f"prune_configs_by top_k={show(top_k)}: expected a count >= 1 or a fraction "
                                 "in (0, 1] of the configs")
            if len(configs) > top_k:
                model = prune["perf_model"]
                estimates = [model(**named, **kwargs, **c.all_kwargs()) for c in configs]
                order = sorted(range(len(configs)), key=lambda i: estimates[i])  # ties keep the configs' order
                configs = [configs[i] for i in order[:top_k]]
        return configs

    def _race_bound(self, results: list[ConfigResult]) -> float | None:
        """Racing's bound: the lowest CI upper bound so far, µs (None before a config ran,
        without racing, or with a fixed iteration count)."""
        bounds = [r.result.ci_us[1] for r in results if r.result is not None]
        if not (self.race and bounds) or self.options.iterations is not None:
            return None
        return min(bounds)

    def _try(self, config: Any, grid: Any, args: Sequence[Any], kwargs: dict[str, Any],
             bound_us: float | None) -> ConfigResult:
        if config.pre_hook is not None:
            return ConfigResult(config, None, "Config.pre_hook runs Python before each launch, "
                                "which the C++ loop cannot; tune this config with triton.autotune")
        clash = sorted(set(config.all_kwargs()) & set(kwargs))
        if clash:
            return ConfigResult(config, None, f"the call also passes {', '.join(clash)}, "
                                "which the config sets (Triton refuses this too)")
        kernel = None
        try:
            kernel = compile(self.fn, list(args), self.device, icache_flush=self.icache_flush, **kwargs,
                             **config.all_kwargs())
            options = self.options if bound_us is None else self.options.replace(slower_than_us=bound_us)
            return ConfigResult(config, bench_compiled_with(kernel, grid, options, **self.resets,
                                                            **self.launch_options))
        except Error as e:
            return ConfigResult(config, None, f"{type(e).__name__}: {e}")
        finally:
            if kernel is not None:
                kernel.unload()

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Tunes for these arguments' key if not yet, then launches the winner through Triton
        (pyhipbench arrays and typed scalars handed to it as it takes them)."""
        tuning = self.tune(grid, *args, **kwargs)
        views = [_binder_view(name, value) for name, value in zip(self.fn.arg_names, args)]
        return self.fn[grid](*views, **{k: _binder_view(k, v) for k, v in kwargs.items()},
                             **tuning.best.all_kwargs())

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


def autotune(configs: Sequence[Any], key: Sequence[str], *, device: Device | None = None,
             icache_flush: bool | None = None, race: bool = True, prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             **bench_options: Any) -> Callable[["JITFunction"], Autotuner]:
    """A decorator like `triton.autotune(configs, key)`, timing each config with pyhipbench.

    `bench_options`: bench()'s options for every candidate (timer,
    cache, precision, max_time_s, ...). `device`: None opens `Device()` on
    first use. `icache_flush`: as for `compile`. `race`: stop each config
    once it is surely slower than the best so far (Autotuner; False measures
    every config to the precision; a fixed `iterations` never races).
    Apply it above `@triton.jit`.
    `prune_configs_by`: as triton.autotune's ({"early_config_prune": f,
    "perf_model": g, "top_k": n}), run in Python before anything is compiled.
    `reset_to_zero`, `restore_value`: names of array arguments zeroed, or given
    back their contents, before each sample, outside its timing (untimed reset
    steps on the GPU, not Python hooks). `pre_hook`/`post_hook` (Python around
    each launch, which the C++ loop does not run) are not taken; `warmup`/`rep`
    are pyhipbench's stopping rule here (`precision`, `max_time_s`, `iterations`).
    """
    _require_triton()
    icache_flush = checked_icache_flush(icache_flush)
    configs = list(configs) if isinstance(configs, (list, tuple)) else configs
    if not isinstance(configs, list) or not configs or not all(isinstance(c, _triton.Config) for c in configs):
        raise BenchError(f"configs={show(configs)}: expected a non-empty list of triton.Config")
    if isinstance(key, str) or not isinstance(key, (list, tuple)) or not all(isinstance(k, str) for k in key):
        raise BenchError(f"key={show(key)}: expected a list of argument names")
    if "slower_than_us" in bench_options:
        raise BenchError(f"autotune option slower_than_us={show(bench_options['slower_than_us'])}: autotune sets "
                         "it to the best config's CI so far; expected race=True (the default) or race=False")
    unknown = sorted(set(bench_options) - set(BENCH_OPTIONS))
    if unknown:
        raise BenchError(f"autotune option {unknown[0]!r}: expected bench() options "
                         f"({', '.join(o for o in BENCH_OPTIONS if o != 'slower_than_us')})")
    options, launch_options = _split_options(bench_options)
    if not isinstance(race, bool):
        raise BenchError(f"race={show(race)}: expected True (the default) or False")
    prune = _checked_prune(prune_configs_by)
    resets = {what: _names(what, names) for what, names in (("reset_to_zero", reset_to_zero),
                                                               ("restore_value", restore_value))}

    def decorate(fn: "JITFunction") -> Autotuner:
        if not isinstance(fn, JITFunction):
            raise BenchError(f"autotune decorates a @triton.jit function, got {show(fn)}")
        for what, names in (("key", key), *resets.items()):
            missing = [k for k in names if k not in fn.arg_names]
            if missing:
                raise BenchError(f"{what} names {', '.join(missing)}, not parameters of {fn.__name__!r} "
                                 f"({', '.join(fn.arg_names)})")
        return Autotuner(fn, configs, key, device, options, launch_options, icache_flush, race, prune, **resets)

    return decorate


PRUNE_KEYS = ("early_config_prune", "perf_model", "top_k")


def _checked_prune(prune: object) -> dict[str, Any]:
    if prune is None:
        return {}
    if not isinstance(prune, dict) or set(prune) - set(PRUNE_KEYS):
        raise BenchError(f"prune_configs_by={show(prune)}: expected a dict of {', '.join(PRUNE_KEYS)}")
    for name in ("early_config_prune", "perf_model"):
        if prune.get(name) is not None and not callable(prune[name]):
            raise BenchError(f"prune_configs_by {name}={show(prune[name])}: expected a callable")
    return dict(prune)


def _names(what: str, names: object) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str) or not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise BenchError(f"{what}={show(names)}: expected a list of argument names")
    return list(names)
