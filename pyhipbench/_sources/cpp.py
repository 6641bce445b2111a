"""CudaSource and HipSource: CUDA C++ and HIP C++ as sources, compiled by NVRTC / hiprtc in the CPU pool."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .._launch.arg_spec import ArgSpec
from .._textfile import read_text
from .._values import show
from ..codegen import nvptx, triple_of
from ..errors import BenchError, CodegenError
from .code import Code, CompileTarget
from .source import Source, register_source_kind

__all__ = ["CudaSource", "HipSource"]


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
    suffix: ClassVar[str]     # the file suffix `pyhipbench run` knows the language by (and the kind)
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
        return Code(code.data, code.lowered_names, code_object=code)


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
