"""Kernel sources a sweep candidate can hold, as a registry of kinds.

A source kind is a frozen dataclass with a `kind` name, registered with
`register_source_kind`; it reads and writes its JSON form and becomes code
with `compile(target, args)`: a loadable code object (and the lowered names
of its kernels) for the sweep's GPUs, made without a GPU: at once for a code
object, in the CPU compiler pool ahead of the GPUs for LLVM IR, CUDA / HIP
C++ and Triton (`needs_compiler`). A Triton compile specialises on the
candidate's arguments (`specialises`: compiled once per argument list) and
fixes part of the launch itself (`CompiledLaunch`: the block, the shared
memory, which arguments the kernel keeps), so the GPU workers load and time
every kind of source alike, without Triton.

Every source holds its content, not a path: a candidate's id hashes the
content (`digest`), so editing a kernel file makes new candidates, and
worker processes receive bytes they can load without the file system. A
Triton source is the exception that proves the rule: it names an importable
function ("module:function", so it stays plain picklable data) and its id
hashes the function's source text.
"""
from __future__ import annotations

import base64
import hashlib
import importlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from .._codeobject.image import detect_format, read_image
from .._launch.arg_spec import ArgSpec, ArraySpec, ScalarSpec
from .._textfile import read_text
from .._values import icache_flush as checked_icache_flush
from .._values import integer, show
from ..codegen import compile_for_target, nvptx, triple_of
from ..errors import BenchError, CodegenError
from .frozen import freeze

__all__ = ["Source", "CompileTarget", "Code", "CompiledLaunch", "CodeObjectSource", "IRSource", "CudaSource",
           "HipSource", "TritonSource", "SOURCE_KINDS", "register_source_kind", "source_from_json"]


@dataclass(frozen=True)
class CompileTarget:
    """What a compiler needs to know of the sweep's GPUs: the processor (gfx942,
    sm_90), on NVIDIA the CUDA driver version (the newest PTX it loads), and
    Triton's GPUTarget fields for it (backend, capability or processor, warp size)."""
    arch: str
    driver_version: int | None = None
    triton_target: tuple[str, int | str, int] | None = None

    def __str__(self) -> str:
        return self.arch if self.driver_version is None else f"{self.arch} (CUDA driver {self.driver_version})"


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
        from ..triton._kernel import scratch_sizes
        return tuple(kept) + tuple(ArraySpec("uint8", size, shared=True) if size else ScalarSpec("uint64", 0)
                                   for size in scratch_sizes(self.scratch_bytes, grid))


@dataclass(frozen=True)
class Code:
    """A source compiled for the sweep's GPUs: the code object's bytes, `lowered_names`
    (a C++ name expression such as "scale<float>" -> the mangled name the module knows it by),
    and `launch`, where the compile fixed the launch (Triton), else None."""
    data: bytes
    lowered_names: dict[str, str] = field(default_factory=dict)
    launch: CompiledLaunch | None = None

    def kernel_name(self, kernel: str) -> str:
        """The name to look `kernel` (a candidate's kernel field) up by in the loaded module."""
        return self.lowered_names.get(kernel, kernel)


class Source:
    """The interface of a source kind (see the module docstring)."""
    kind: ClassVar[str]
    needs_compiler: ClassVar[bool]  # True: `compile` runs in the CPU pool, ahead of the GPUs; False: it is cheap
    specialises: ClassVar[bool] = False  # True: compiled for each argument list (and one kernel, no chains)

    def identity(self) -> dict[str, Any]:
        """What makes this source what it is (content digest and options), for the candidate's id."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        """A description for people and the results database (a path where there was one, else the digest)."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path) -> "Source":
        """The source a JSON object describes; relative paths are relative to `base`."""
        raise NotImplementedError

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...]) -> Code:
        """The code for `target` (and, for a kind that `specialises`, for a candidate's `args`);
        BenchError / IRError / CodegenError when there is none."""
        raise NotImplementedError

    @cached_property
    def digest(self) -> str:
        """sha256 of the identity, hex: what workers cache loaded modules by (hashed once: a source is
        immutable)."""
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()


SOURCE_KINDS: dict[str, type[Source]] = {}


def register_source_kind(cls: type[Source]) -> type[Source]:
    """Class decorator: makes `cls` readable from JSON under `cls.kind`."""
    if cls.kind in SOURCE_KINDS and SOURCE_KINDS[cls.kind] is not cls:
        raise ValueError(f"source kind {cls.kind!r} is registered twice")
    SOURCE_KINDS[cls.kind] = cls
    return cls


def source_from_json(data: object, base: Path) -> Source:
    """The source a candidate's JSON "source" field describes; BenchError naming what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise BenchError(f"source {show(data)}: expected an object with a \"kind\", one of "
                         f"{', '.join(SOURCE_KINDS)}")
    if data["kind"] not in SOURCE_KINDS:
        raise BenchError(f"source kind {data['kind']!r} is not one of {', '.join(SOURCE_KINDS)}")
    return SOURCE_KINDS[data["kind"]].from_json(data, base)


def _content(data: dict[str, Any], base: Path, forms: tuple[str, ...]) -> tuple[bytes, str | None]:
    """(bytes, path) from exactly one of the fields in `forms`: "path", "text" or "base64"."""
    given = [f for f in forms if f in data]
    if len(given) != 1:
        raise BenchError(f"source {show(data)}: expected exactly one of {', '.join(forms)}")
    field, value = given[0], data[given[0]]
    if not isinstance(value, str):
        raise BenchError(f"source {field}={show(value)}: expected a string")
    if field == "path":
        path = (base / value) if not os.path.isabs(value) else Path(value)
        return read_image(path), str(path)
    if field == "text":
        return value.encode(), None
    try:
        return base64.b64decode(value, validate=True), None
    except ValueError:
        raise BenchError(f"source base64={show(value)}: not valid base64") from None


@register_source_kind
@dataclass(frozen=True)
class CodeObjectSource(Source):
    """A code object (PTX, cubin, fatbin, HSACO), loaded as is.
    JSON: {"kind": "code-object", "path": "copy.ptx"} (or "text": PTX, or "base64": bytes)."""
    data: bytes
    path: str | None = None
    kind: ClassVar[str] = "code-object"
    needs_compiler: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes):
            raise BenchError(f"code object {show(self.data)}: expected bytes")
        detect_format(self.data)  # BenchError naming what the bytes are instead

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "CodeObjectSource":
        return cls(read_image(path), str(path))

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "sha256": hashlib.sha256(self.data).hexdigest()}

    def to_json(self) -> dict[str, Any]:
        return {**self.identity(), "format": detect_format(self.data), "path": self.path}

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path) -> "CodeObjectSource":
        return cls(*_content(data, base, ("path", "text", "base64")))

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...] = ()) -> Code:
        return Code(self.data)


@register_source_kind
@dataclass(frozen=True)
class IRSource(Source):
    """LLVM IR (text or bitcode), compiled for the sweep's GPUs in the CPU pool
    (pyhipbench.codegen, which survives an LLVM abort). `icache_flush` as compile_ir's.
    JSON: {"kind": "llvm-ir", "path": "k.ll", "icache_flush": false} (or "text")."""
    ir: bytes
    path: str | None = None
    icache_flush: bool | None = None
    kind: ClassVar[str] = "llvm-ir"
    needs_compiler: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not isinstance(self.ir, bytes):
            raise BenchError(f"LLVM IR {show(self.ir)}: expected bytes (IR text or bitcode)")
        object.__setattr__(self, "icache_flush", checked_icache_flush(self.icache_flush))

    @classmethod
    def from_file(cls, path: str | os.PathLike, icache_flush: bool | None = None) -> "IRSource":
        return cls(Path(path).read_bytes(), str(path), icache_flush)

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "sha256": hashlib.sha256(self.ir).hexdigest(), "icache_flush": self.icache_flush}

    def to_json(self) -> dict[str, Any]:
        return {**self.identity(), "path": self.path}

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path) -> "IRSource":
        unknown = set(data) - {"kind", "path", "text", "icache_flush"}
        if unknown:
            raise BenchError(f"llvm-ir source: unknown field(s) {', '.join(sorted(unknown))}; expected path or "
                             "text, and optionally icache_flush")
        if isinstance(data.get("path"), str) and "text" not in data:  # both: _content refuses them
            path = Path(data["path"]) if os.path.isabs(data["path"]) else base / data["path"]
            if not path.is_file():
                raise BenchError(f"LLVM IR {str(path)!r} is not a file")
            return cls(path.read_bytes(), str(path), data.get("icache_flush"))
        return cls(*_content(data, base, ("path", "text")), icache_flush=data.get("icache_flush"))

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...] = ()) -> Code:
        return Code(compile_for_target(self.ir, target.arch, target.driver_version,
                                       icache_flush=self.icache_flush).data)


def _strings(what: str, values: object) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)) or \
            not all(isinstance(v, str) and v for v in values):
        raise BenchError(f"{what}={show(values)}: expected a list of non-empty strings")
    return tuple(values)


@dataclass(frozen=True)
class _CppSource(Source):
    """What CUDA C++ and HIP C++ sources share: text compiled by pyhipbench.codegen.source.compile_source
    (NVRTC / hiprtc, no GPU needed) in the CPU pool; a candidate's kernel is a name expression."""
    text: str
    options: tuple[str, ...] = ()
    name_expressions: tuple[str, ...] = ()
    path: str | None = None
    language: ClassVar[str]   # "cuda" or "hip": the vendor whose compiler takes it
    suffix: ClassVar[str]     # the file suffix `pyhipbench run` knows the language by
    needs_compiler: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise BenchError(f"{self.language.upper()} C++ source {show(self.text)}: expected the source text (str)")
        object.__setattr__(self, "options", _strings("options", self.options))
        object.__setattr__(self, "name_expressions", _strings("name_expressions", self.name_expressions))

    @classmethod
    def from_file(cls, path: str | os.PathLike, options: tuple[str, ...] = (),
                  name_expressions: tuple[str, ...] = ()) -> "_CppSource":
        return cls(read_text(Path(path), f"{cls.language.upper()} C++ source"), options, name_expressions,
                   str(path))

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "sha256": hashlib.sha256(self.text.encode()).hexdigest(),
                "options": list(self.options), "name_expressions": list(self.name_expressions)}

    def to_json(self) -> dict[str, Any]:
        return {**self.identity(), "path": self.path}

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path) -> "_CppSource":
        unknown = set(data) - {"kind", "path", "text", "options", "name_expressions"}
        if unknown:
            raise BenchError(f"{cls.kind} source: unknown field(s) {', '.join(sorted(unknown))}; expected path "
                             "or text, and optionally options and name_expressions")
        options = _strings("options", data.get("options", []))
        expressions = _strings("name_expressions", data.get("name_expressions", []))
        if isinstance(data.get("path"), str) and "text" not in data:
            path = Path(data["path"]) if os.path.isabs(data["path"]) else base / data["path"]
            if not path.is_file():
                raise BenchError(f"{cls.language.upper()} C++ source {str(path)!r} is not a file")
            return cls(read_text(path, f"{cls.language.upper()} C++ source"), options, expressions, str(path))
        if isinstance(data.get("text"), str) and "path" not in data:
            return cls(data["text"], options, expressions)
        raise BenchError(f"source {show(data)}: expected exactly one of path, text (a string)")

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...] = ()) -> Code:
        from ..codegen.source import compile_source
        language = "cuda" if triple_of(target.arch) == nvptx.TRIPLE else "hip"
        if language != self.language:
            raise CodegenError(f"{self.kind} {self.path or 'text'}: {self.language.upper()} C++ compiles for "
                               f"{'NVIDIA' if self.language == 'cuda' else 'AMD'} GPUs; the sweep's GPUs are "
                               f"{target.arch}, expected a {language}-source")
        # As compile_for_device: the arch-specific target from compute capability 9.0 (sm_90 -> sm_90a).
        processor = (nvptx.arch_specific(target.arch) or target.arch) if language == "cuda" else target.arch
        name = Path(self.path).name if self.path else f"source{self.suffix}"
        code = compile_source(processor, self.text, name_expressions=self.name_expressions, options=self.options,
                              name=name)
        return Code(code.data, code.lowered_names)


@register_source_kind
@dataclass(frozen=True)
class CudaSource(_CppSource):
    """CUDA C++ compiled by NVRTC for the sweep's NVIDIA GPUs (a cubin), in the CPU pool.
    `options`: NVRTC's (-DTILE=4, -I/path, -std=c++17; not the architecture, which comes from
    the GPUs). `name_expressions`: C++ names of kernels ("scale<float>"); a candidate whose
    kernel is one is launched by its lowered (mangled) name, any other kernel by its own name.
    JSON: {"kind": "cuda-source", "path": "k.cu" (or "text"), "options": [...], "name_expressions": [...]}."""
    kind: ClassVar[str] = "cuda-source"
    language: ClassVar[str] = "cuda"
    suffix: ClassVar[str] = ".cu"


@register_source_kind
@dataclass(frozen=True)
class HipSource(_CppSource):
    """HIP C++ compiled by hiprtc for the sweep's AMD GPUs (an HSACO), in the CPU pool; fields as CudaSource's.
    JSON: {"kind": "hip-source", "path": "k.hip" (or "text"), "options": [...], "name_expressions": [...]}."""
    kind: ClassVar[str] = "hip-source"
    language: ClassVar[str] = "hip"
    suffix: ClassVar[str] = ".hip"


def _quoted(error: BaseException) -> str:
    """An exception of the user's code on one line: its type and message (a SyntaxError's file and line)."""
    try:
        message = " ".join(str(error).split())
    except Exception:  # an exception class of the user's whose __str__ fails
        message = "(its message cannot be shown)"
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _triton_function(function: str) -> Any:
    """The @triton.jit function "module:function" names; BenchError naming what is missing."""
    from .. import triton as pyhipbench_triton
    pyhipbench_triton._kernel._require_triton()  # ToolchainError saying how to install Triton
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
    if not isinstance(fn, pyhipbench_triton._kernel.JITFunction):
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
        from ..triton import _kernel
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
