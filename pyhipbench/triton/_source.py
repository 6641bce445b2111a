"""TritonSource: a @triton.jit function as a sweep source, compiled by Triton in the CPU pool.

The "triton" source kind, registered when this module is imported
(pyhipbench._sources imports it on the first JSON naming the kind).
"""
from __future__ import annotations

import hashlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .._frozen import freeze
from .._launch.arg_spec import ArgSpec, ScalarSpec
from .._sources.code import Code, CompiledLaunch, CompileTarget
from .._sources.source import SOURCE_KINDS, Source, register_source_kind
from .._values import integer, show
from ..errors import BenchError
from . import _kernel

__all__ = ["TritonSource", "SOURCE_KINDS"]  # SOURCE_KINDS: the registry with this kind in it, as pyhipbench's


def _quoted(error: BaseException) -> str:
    """An exception of the user's code on one line: its type and message (a SyntaxError's file and line)."""
    try:
        message = " ".join(str(error).split())
    except Exception:  # an exception class of the user's whose __str__ fails
        message = "(its message cannot be shown)"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _triton_function(function: str) -> Any:
    """The @triton.jit function "module:function" names; BenchError naming what is missing."""
    _kernel._require_triton()  # ToolchainError saying how to install Triton
    module_name, _, name = function.partition(":")
    if not module_name or not name:
        raise BenchError(f"function={function!r}: expected \"module:function\", an importable module and a "
                         "@triton.jit function in it")
    # Importing runs the user's module: whatever it raises (a SyntaxError, its own exception, sys.exit)
    # is this function's error. KeyboardInterrupt is the user's, and goes on.
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise BenchError(f"function={function!r}: cannot import {module_name!r} ({' '.join(str(e).split())})"
                         ) from None
    except (Exception, SystemExit) as e:
        raise BenchError(f"function={function!r}: importing {module_name!r} raised {_quoted(e)}") from None
    try:
        fn = getattr(module, name, None)
    except (Exception, SystemExit) as e:  # a module __getattr__ of the user's
        raise BenchError(f"function={function!r}: looking up {name!r} in {module_name} raised {_quoted(e)}") from None
    if not isinstance(fn, _kernel.JITFunction):
        raise BenchError(f"function={function!r}: {module_name} has no @triton.jit function {name!r} "
                         f"(found {show(fn)})")
    return fn


@register_source_kind
@dataclass(frozen=True)
class TritonSource(Source):
    """A @triton.jit function and its meta-parameters, compiled by Triton in the CPU pool for the sweep's
    GPUs and each candidate's arguments, specialised as Triton's launcher specialises them (or read from
    Triton's cache). `function`: "module:function", importable where the compilers run.
    `constexprs`: the tl.constexpr parameters by name ({"BLOCK": 256}); `num_warps`,
    `num_stages`: Triton's compile options (None: Triton's defaults). A candidate of this source
    takes its block (num_warps x warp size) and shared memory from Triton: it gives neither.
    Its id hashes the function's source text, so editing the kernel makes new candidates.
    JSON: {"kind": "triton", "function": "kernels:add", "constexprs": {"BLOCK": 256},
           "num_warps": 4, "num_stages": 3}."""
    function: str
    constexprs: dict[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None
    source_sha256: str = field(default="", init=False)
    kind: ClassVar[str] = "triton"
    needs_compiler: ClassVar[bool] = True
    specialises: ClassVar[bool] = True
    launch_fields: ClassVar[tuple[str, ...]] = ("kernel", "grid")  # the block: Triton's (num_warps x warp size)

    def __post_init__(self) -> None:
        if not isinstance(self.function, str):
            raise BenchError(f"function={show(self.function)}: expected \"module:function\"")
        fn = _triton_function(self.function)
        if not isinstance(self.constexprs, dict):
            raise BenchError(f"constexprs={show(self.constexprs)}: expected an object of tl.constexpr values by name")
        constexprs = [p.name for p in fn.params if p.is_constexpr]
        for name, value in self.constexprs.items():
            if name not in constexprs:
                raise BenchError(f"constexprs: {name!r} is not a tl.constexpr parameter of {self.function} "
                                 f"({', '.join(constexprs) or 'it has none'}); its other parameters come from args")
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise BenchError(f"constexprs: {name}={show(value)}: expected a number or a string")
        object.__setattr__(self, "constexprs", freeze(dict(self.constexprs)))  # part of the candidate's id
        for option in ("num_warps", "num_stages"):
            value = getattr(self, option)
            if value is not None:
                object.__setattr__(self, option, integer(option, value, 1, 64))
        object.__setattr__(self, "source_sha256", hashlib.sha256(fn.src.encode()).hexdigest())

    @property
    def kernel_name(self) -> str:
        """The function's name: what its candidates' kernel field says."""
        return self.function.partition(":")[2]

    def check_launch(self, kernel: str, block: object, shared_bytes: object) -> None:
        if kernel != self.kernel_name:
            raise BenchError(f"kernel={kernel!r}: a Triton source's kernel is its function, "
                             f"expected {self.kernel_name!r}")
        if block is not None or shared_bytes != 0:
            raise BenchError(f"block={show(block)}, shared_bytes={show(shared_bytes)}: a Triton "
                             "kernel's block (num_warps x warp size) and shared memory come from its compile; "
                             "leave them out")

    @property
    def meta(self) -> dict[str, Any]:
        """The constexprs and the compile options given, as pyhipbench.triton.compile takes them."""
        options = {o: getattr(self, o) for o in ("num_warps", "num_stages") if getattr(self, o) is not None}
        return {**self.constexprs, **options}

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "function": self.function, "sha256": self.source_sha256,
                "constexprs": self.constexprs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def to_json(self) -> dict[str, Any]:
        return self.identity()

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path) -> "TritonSource":
        fields_ = {"function", "constexprs", "num_warps", "num_stages"}
        unknown = set(data) - fields_ - {"kind"}
        if unknown:
            raise BenchError(f"triton source: unknown field(s) {', '.join(sorted(unknown))}; expected function, "
                             "and optionally constexprs, num_warps, num_stages")
        if "function" not in data:
            raise BenchError("triton source: missing function (\"module:function\")")
        return cls(**{k: v for k, v in data.items() if k in fields_})

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...] = ()) -> Code:
        """Triton's code for `target` and arguments as `args` describe them: arrays specialised as every
        allocation is (aligned to 16 bytes), scalars as Python numbers (i32 or i64 by value, 1 folded in,
        divisibility by 16), as Triton's launcher specialises the arguments a worker makes; on AMD with the
        instruction-cache flush first."""
        if target.triton_target is None:
            raise BenchError(f"{target}: no Triton target is known for it")
        values = [spec.value if isinstance(spec, ScalarSpec) else _kernel.array_view(spec.dtype, spec.nbytes)
                  for spec in args]
        fn = _triton_function(self.function)
        spec = _kernel.specialize(fn, values, _kernel.GPUTarget(*target.triton_target), **self.meta)
        compiled = _kernel.triton_compile(spec, target.arch)
        metadata = compiled.metadata
        _kernel.check_launch(metadata)
        params = []
        for name, triton_type in _kernel.kept_parameters(spec.signature).items():
            index = fn.arg_names.index(name)
            if index >= len(args):
                raise BenchError(f"parameter {name} of {self.function} takes its default; expected a value for "
                                 f"every parameter that is not a constexpr in args ({len(args)} given)")
            params.append((index, None if triton_type.startswith("*") else _kernel.scalar_dtype(
                self.kernel_name, name, triton_type)))
        image, _what = _kernel.code_image(compiled, target.arch, icache_flush=True)
        return Code(image, launch=CompiledLaunch(metadata.name, (metadata.num_warps * metadata.warp_size, 1, 1),
                                                 metadata.shared, tuple(params), _kernel.scratch_bytes(metadata)))
