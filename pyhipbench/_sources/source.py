"""Source: the interface of a kernel source kind, and the registry of kinds by name.

A source kind is a frozen dataclass with a `kind` name, registered with
`register_source_kind`; it reads and writes its JSON form and becomes code
with `compile(target, args)` (code.py): a loadable code object (and the
lowered names of its kernels), made without a GPU: at once for a code
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

The kinds of this package register when it is imported. Triton's kind is
pyhipbench.triton's (pyhipbench/triton/_source.py), registered when that
module is imported: here on the first JSON that names it, so that sources of
the other kinds never load the Triton front end.
"""
from __future__ import annotations

import hashlib
import importlib
import json
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from .._launch.arg_spec import ArgSpec
from .._values import show
from ..errors import BenchError
from .code import Code, CompileTarget

__all__ = ["Source", "SOURCE_KINDS", "register_source_kind", "source_from_json", "kind_names"]


class Source:
    """The interface of a source kind (see the module docstring)."""
    kind: ClassVar[str]
    needs_compiler: ClassVar[bool]  # True: `compile` runs in the CPU pool, ahead of the GPUs; False: it is cheap
    specialises: ClassVar[bool] = False  # True: compiled for each argument list (and one kernel, no chains)
    # What a candidate of one launch gives (the rest comes from the compile: Triton's block).
    launch_fields: ClassVar[tuple[str, ...]] = ("kernel", "grid", "block")
    suffix: ClassVar[str | None] = None  # the file suffix `pyhipbench run` knows an input of this kind by; None: none

    @property
    def kernel_name(self) -> str | None:
        """The one kernel a source of one kernel is (Triton's function), which its candidates' kernel field
        names; None for a source of any number of kernels, whose candidate names the one it launches."""
        return None

    def check_launch(self, kernel: str, block: object, shared_bytes: object) -> None:
        """BenchError where a candidate's single launch does not suit this source: here, one without a block."""
        if block is None:
            raise BenchError(f"block=None: expected 1 to 3 integers (threads per block) for a {self.kind} source")

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
# Kinds a front end registers, by the module that does: imported on the first JSON that names one.
_REGISTERED_ON_IMPORT = {"triton": "pyhipbench.triton._source"}


def register_source_kind(cls: type[Source]) -> type[Source]:
    """Class decorator: makes `cls` readable from JSON under `cls.kind`."""
    if cls.kind in SOURCE_KINDS and SOURCE_KINDS[cls.kind] is not cls:
        raise ValueError(f"source kind {cls.kind!r} is registered twice")
    SOURCE_KINDS[cls.kind] = cls
    return cls


def kind_names() -> list[str]:
    """Every kind a source's JSON may name: those registered, and those registered on first use."""
    return [*SOURCE_KINDS, *(kind for kind in _REGISTERED_ON_IMPORT if kind not in SOURCE_KINDS)]


def source_from_json(data: object, base: Path) -> Source:
    """The source a candidate's JSON "source" field describes; BenchError naming what is wrong."""
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise BenchError(f"source {show(data)}: expected an object with a \"kind\", one of "
                         f"{', '.join(kind_names())}")
    kind = data["kind"]
    if kind not in SOURCE_KINDS and kind in _REGISTERED_ON_IMPORT:
        importlib.import_module(_REGISTERED_ON_IMPORT[kind])
    if kind not in SOURCE_KINDS:
        raise BenchError(f"source kind {kind!r} is not one of {', '.join(kind_names())}")
    return SOURCE_KINDS[kind].from_json(data, base)
