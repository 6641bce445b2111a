"""IRSource: LLVM IR as a source, compiled by pyhipbench.codegen in the CPU pool."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .._launch.arg_spec import ArgSpec
from .._values import icache_flush as checked_icache_flush
from .._values import show
from ..codegen import compile_for_target
from ..codegen.ir import parse as parse_ir
from ..errors import BenchError
from .code import Code, CompileTarget
from .content import content
from .source import Source, register_source_kind

__all__ = ["IRSource"]


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
        if isinstance(data.get("path"), str) and "text" not in data:  # both: content() refuses them
            path = Path(data["path"]) if os.path.isabs(data["path"]) else base / data["path"]
            if not path.is_file():
                raise BenchError(f"LLVM IR {str(path)!r} is not a file")
            return cls(path.read_bytes(), str(path), data.get("icache_flush"))
        return cls(*content(data, base, ("path", "text")), icache_flush=data.get("icache_flush"))

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...] = ()) -> Code:
        # Parsed under its path, so that an error in it names the file.
        code = compile_for_target(parse_ir(self.ir, name=self.path), target.arch, target.driver_version,
                                  icache_flush=self.icache_flush)
        return Code(code.data, code_object=code)
