"""CodeObjectSource: a code object (PTX, cubin, fatbin, HSACO) as a source, loaded as is."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .._codeobject.image import detect_format, read_image
from .._launch.arg_spec import ArgSpec
from .._values import show
from ..errors import BenchError
from .code import Code, CompileTarget
from .content import content
from .source import Source, register_source_kind

__all__ = ["CodeObjectSource"]


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
        return cls(*content(data, base, ("path", "text", "base64")))

    def compile(self, target: CompileTarget, args: tuple[ArgSpec, ...] = ()) -> Code:
        return Code(self.data)
