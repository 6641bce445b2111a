"""A Triton kernel compiled by Triton for a pyhipbench device and loaded by the core: the binder's
specialisation, the compile, the launch facts from Triton's metadata."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._codeobject import image as codeobject
from .._device.device import Device
from .._device.memory import DeviceArray
from .._device.module import Kernel, Module
from .._launch.args import Argument, Pointer, Scalar, Shared, shared
from .._sources.code import scratch_sizes
from .._values import icache_flush as checked_icache_flush
from .._values import show
from ..codegen import compile_ir
from ..errors import BenchError, CodegenError, ToolchainError
from ._cache import backend_of, cached

_IMPORT_ERROR = ""
try:
    import triton as _triton
    from triton import knobs as _knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction, create_function_from_signature
    # Triton's JIT launcher's own packing of signature, constants and attributes (private, so
    # a Triton without it is refused here rather than failing inside compile).
    _pack_args = JITFunction._pack_args
except (ImportError, AttributeError) as error:  # the optional extra: every entry point says how to get it
    _triton = None
    _IMPORT_ERROR = f"{type(error).__name__}: {error}"

__all__ = ["TritonKernel", "compile", "target_of"]

# Triton's scalar parameter types (its launchers' ty_to_cpp) -> pyhipbench scalar dtypes.
SCALAR_DTYPES = {
    "i1": "int8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u1": "uint8", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "fp16": "float16", "fp32": "float32", "f32": "float32", "fp64": "float64",
}
# Triton 3.x appends these pointer parameters to every kernel, after the user's.
SCRATCH_PARAMS = ("global_scratch", "profile_scratch")
# bench()'s keywords beside the measurement's options (BenchOptions): told apart from meta-parameters by name.


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


def array_view(dtype: Any, nbytes: int) -> _PointerView:
    """What Triton's binder reads of an array not yet allocated: an address aligned as every allocation is
    (so specialised as divisible by 16, as the array will be), its element type and size."""
    return _PointerView(1 << 20, np.dtype(dtype), nbytes)


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


def scalar_dtype(kernel: str, name: str, triton_type: str) -> str:
    """The pyhipbench dtype a scalar parameter of Triton type `triton_type` is packed as."""
    dtype = SCALAR_DTYPES.get(triton_type)
    if dtype is None:
        raise BenchError(f"parameter {name} of Triton kernel {kernel!r} has type {triton_type}, which "
                         f"pyhipbench cannot pack; expected pointers or one of {', '.join(SCALAR_DTYPES)}")
    return dtype


def _scalar_argument(kernel: str, name: str, triton_type: str, value: Any) -> Scalar:
    """A scalar argument packed as the type Triton compiled the parameter with."""
    dtype = scalar_dtype(kernel, name, triton_type)
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
        arguments: list[Argument] = []
        buffers: list[DeviceArray] = []
        for size in scratch_sizes((self.global_scratch_bytes, self.profile_scratch_bytes), grid):
            if size:
                buffers.append(self.kernel.device.empty(size, np.uint8))
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


@dataclass
class Specialized:
    """One Triton compile of `fn`, specialised as Triton's launcher would for these arguments: what
    `triton.compile` takes (`signature`, `constexprs`, `attrs` from Triton's binder; `compile_options`,
    Triton's parsed options) for `target`, and what loading it needs (`values`: the arguments by name;
    `options`: the compile options the caller gave, such as num_warps)."""
    fn: "JITFunction"
    target: "GPUTarget"
    signature: dict[str, str]
    constexprs: dict
    attrs: dict
    compile_options: dict[str, Any]
    values: dict[str, Any]
    options: dict[str, Any]

    def source(self) -> "ASTSource":
        return ASTSource(self.fn, self.signature, self.constexprs, self.attrs)

    def describe(self) -> str:
        """The meta-parameters and options, for messages: "BLOCK=128, num_warps=4"."""
        return _describe(self.options, self.constexprs, self.fn)


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
    None or False. A compile Triton's cache holds costs no compiling.
    Raises BenchError for arguments Triton's binder refuses, CodegenError
    when Triton cannot compile, ToolchainError without Triton.
    """
    icache_flush = checked_flush(device, icache_flush)
    return build(specialize(fn, args, target_of(device), **meta), device, icache_flush)


def checked_flush(device: Device, icache_flush: bool | None) -> bool | None:
    """`icache_flush` checked for `device` (NVIDIA has no instruction-cache invalidation)."""
    _require_triton()
    if not isinstance(device, Device):
        raise BenchError(f"device={show(device)}: expected a pyhipbench Device")
    icache_flush = checked_icache_flush(icache_flush)
    if icache_flush and not device.backend.icache_invalidation:
        raise CodegenError(f"icache_flush=True on {device.arch}: NVIDIA GPUs have no instruction-cache "
                           "invalidation (neither PTX nor the driver exposes one); expected None or False")
    return icache_flush


def specialize(fn: "JITFunction", args: Sequence[Any], target: "GPUTarget", **meta: Any) -> Specialized:
    """What Triton's launcher would compile for `fn(*args, **meta)` on `target`, nothing compiled yet.
    BenchError for arguments Triton's binder refuses or keywords that are neither parameters nor options."""
    _require_triton()
    if not isinstance(fn, JITFunction):
        raise BenchError(f"fn={show(fn)}: expected a @triton.jit function")
    if not isinstance(args, (list, tuple)):
        raise BenchError(f"args={show(args)}: expected a list of the kernel's arguments")
    by_name, options = _split_meta(fn, meta)
    backend, known, binder = _binding(fn, target)
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
    return Specialized(fn, target, signature, constexprs, attrs, parsed.__dict__, values, options)


@functools.lru_cache(maxsize=256)
def _binding(fn: "JITFunction", target: "GPUTarget") -> tuple[Any, dict[str, Any], Callable[..., Any]]:
    """(Triton's backend for `target`, its compile options' defaults, `fn`'s binder), made once per kernel
    and target: a tuning specialises every config with the same three."""
    backend = backend_of(target)
    return backend, backend.parse_options({}).__dict__, create_function_from_signature(fn.signature, fn.params,
                                                                                        backend)


def build(spec: Specialized, device: Device, icache_flush: bool | None, compiled: Any = None) -> TritonKernel:
    """Triton's compile of `spec` (`compiled`, Triton's CompiledKernel found already; else `triton_compile`'s),
    loaded on `device`."""
    if compiled is None:
        compiled = triton_compile(spec, device.arch)
    return _load(spec.fn, compiled, device, spec.signature, spec.constexprs, spec.values, spec.options,
                 icache_flush is not False)


def triton_compile(spec: Specialized, arch: str) -> Any:
    """Triton's CompiledKernel for `spec`: read from Triton's cache when it holds it, else compiled by Triton
    (no GPU needed); CodegenError naming the config (`arch`: the device's, for the message) when Triton fails."""
    compiled = cached(spec)
    try:
        if compiled is None:
            compiled = _triton.compile(spec.source(), target=spec.target, options=spec.compile_options)
    except Exception as e:  # Triton's compiler errors share no base class
        raise CodegenError(f"Triton could not compile {spec.fn.__name__!r} for {arch} with "
                           f"{spec.describe()}: {type(e).__name__}: {e}") from e
    return compiled


def check_launch(metadata: Any) -> None:
    """BenchError where Triton compiled for a launch the core does not make (clusters, cooperative, PDL)."""
    if metadata.num_ctas != 1:
        raise BenchError(f"num_ctas={metadata.num_ctas}: Triton launches a cluster of {metadata.num_ctas} "
                         "CTAs, which needs cuLaunchKernelEx; pyhipbench's core launches without clusters, "
                         "expected num_ctas=1")
    for flag in ("launch_cooperative_grid", "launch_pdl"):
        if getattr(metadata, flag, False):
            raise BenchError(f"{flag}=True: pyhipbench's core launches without this attribute; expected False")


def code_image(compiled: Any, arch: str, icache_flush: bool) -> tuple[bytes, str]:
    """(the code object to load, what it is): NVIDIA, Triton's cubin; AMD, with `icache_flush`, Triton's LLVM
    IR through pyhipbench.codegen with the instruction-cache flush first, else Triton's own HSACO."""
    if "cubin" in compiled.asm:
        return compiled.asm["cubin"], "cubin"
    if icache_flush:
        return (compile_ir(compiled.asm["llir"].encode(), arch).data,
                "hsaco (Triton's LLVM IR through pyhipbench.codegen: icache flush first)")
    return compiled.asm["hsaco"], "hsaco (Triton's own, no icache flush)"


def kept_parameters(signature: dict[str, str]) -> dict[str, str]:
    """The parameters the compiled kernel takes, by name, with their Triton types: those Triton did not fold
    in as constants (meta-parameters, integers equal to 1, None); Triton 3.x's two scratch pointers follow."""
    return {k: v for k, v in signature.items() if v != "constexpr"}


def _ptx_head(ptx: str) -> str:
    """Triton's PTX up to its kernel's body, with an empty body: the target and the parameters, without
    reading the rest (a tenth of a megabyte, and the cubin beside it was built from it)."""
    entry = ptx.find(".entry")
    body = ptx.find("{", entry) if entry >= 0 else -1
    return ptx if body < 0 else ptx[:body] + "{\n}\n"


def scratch_bytes(metadata: Any) -> tuple[int, int]:
    """Triton's global and profile scratch sizes per program (bytes; 0: a null pointer is passed)."""
    return getattr(metadata, "global_scratch_size", 0), metadata.profile_scratch_size  # AMD: no global field


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
    check_launch(metadata)
    image, binary = code_image(compiled, device.arch, icache_flush)
    if binary == "cubin":
        # The cubin is the very code Triton launches; its PTX (same kernel) lists the parameters.
        head = _ptx_head(compiled.asm["ptx"])
        module = Module(device, device.backend.load_module(image), "cubin",
                        codeobject.ptx_kernels(head), codeobject.target(head.encode()))
    else:
        module = device.load_module(image)
    kernel = module.kernel(name)
    own = kept_parameters(signature)
    expected = len(own) + len(SCRATCH_PARAMS)
    if len(kernel.params) != expected:
        module.unload()
        raise CodegenError(f"Triton kernel {name!r} has {len(kernel.params)} parameters; expected {expected}: "
                           f"{', '.join(own) or 'none'} and Triton 3.x's {' and '.join(SCRATCH_PARAMS)} "
                           f"(Triton {_triton.__version__})")
    warps = metadata.num_warps
    global_scratch, profile_scratch = scratch_bytes(metadata)
    return TritonKernel(
        kernel=kernel, compiled=compiled, signature=own,
        constants=_constants(fn, constexprs),
        block=(warps * metadata.warp_size, 1, 1), shared_bytes=metadata.shared, num_warps=warps,
        num_stages=metadata.num_stages, global_scratch_bytes=global_scratch, profile_scratch_bytes=profile_scratch,
        binary=binary, code_object=image, meta={**values, **options})
