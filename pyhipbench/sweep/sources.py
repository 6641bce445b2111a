"""Kernel sources a sweep candidate can hold, as a registry of kinds.

A source kind is a frozen dataclass with a `kind` name, registered with
`register_source_kind`; it turns itself into a loadable code object for a
target (`code_object`), says whether that needs the CPU compiler pool
(`needs_compiler`), and reads and writes its JSON form. The scheduler knows
only this interface, so new kinds (Triton functions, CUDA/HIP source through
NVRTC/hipRTC) plug in with no change to it.

Every source holds its content, not a path: a candidate's id hashes the
content (`digest`), so editing a kernel file makes new candidates, and
worker processes receive bytes they can load without the file system.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..codegen import compile_for_target
from ..codeobject import detect_format, read_image
from ..errors import BenchError
from ..values import show

__all__ = ["Source", "CompileTarget", "CodeObjectSource", "IRSource", "SOURCE_KINDS", "register_source_kind",
           "source_from_json"]


@dataclass(frozen=True)
class CompileTarget:
    """What a compiler needs to know of the sweep's GPUs: the processor (gfx942,
    sm_90) and, on NVIDIA, the CUDA driver version (the newest PTX it loads)."""
    arch: str
    driver_version: int | None = None


class Source:
    """The interface of a source kind (see the module docstring)."""
    kind: ClassVar[str]
    needs_compiler: ClassVar[bool]  # True: `code_object` runs in the CPU pool, ahead of the GPUs; False: it is cheap

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

    def code_object(self, target: CompileTarget) -> bytes:
        """The code object for `target`; BenchError / IRError / CodegenError when there is none."""
        raise NotImplementedError

    @property
    def digest(self) -> str:
        """sha256 of the identity, hex: what workers cache loaded modules by."""
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

    def code_object(self, target: CompileTarget) -> bytes:
        return self.data


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
        if self.icache_flush not in (None, True, False):
            raise BenchError(f"icache_flush={show(self.icache_flush)}: expected true, false or null")

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
        if "path" in data and isinstance(data["path"], str):
            path = Path(data["path"]) if os.path.isabs(data["path"]) else base / data["path"]
            if not path.is_file():
                raise BenchError(f"LLVM IR {str(path)!r} is not a file")
            return cls(path.read_bytes(), str(path), data.get("icache_flush"))
        return cls(*_content(data, base, ("path", "text")), icache_flush=data.get("icache_flush"))

    def code_object(self, target: CompileTarget) -> bytes:
        return compile_for_target(self.ir, target.arch, target.driver_version, icache_flush=self.icache_flush).data
