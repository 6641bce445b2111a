"""A sweep candidate: one kernel launch to measure, as plain picklable data.

A candidate is a source (sources.py), a kernel name, grid, block, dynamic
shared memory, argument specs (arg_spec.py's `--arg` language as data), the
`bench()` options and free-form `tags` (a tuner's own parameters, kept with
the result). Its `id` hashes all of that, the source by its content, so the
same candidate gets the same id in every run: what `--resume` skips by.

A search space file (`load_space`) is JSON, or YAML when pyyaml is
installed (.yaml / .yml):

    {"defaults": {"source": {"kind": "code-object", "path": "copy.ptx"}, "kernel": "copy",
                  "block": [256], "bench": {"cache": "warm", "max_time_s": 0.2}},
     "candidates": [{"grid": [1024], "args": ["array:float32:262144", "array:float32:262144",
                                               "int64:262144"], "tags": {"tile": 1}}, ...]}

or just the list of candidates. Each candidate is its defaults updated with
its own fields ("bench" merged key by key); paths are relative to the file.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .._launch.arg_spec import ArgSpec, ArraySpec, ScalarSpec, parse_arg
from .._launch.launch_config import dims
from .._measure.options import BenchOptions
from .._textfile import check_data, parse_json, parse_yaml, read_text
from .._values import integer, real, show
from ..errors import BenchError
from .frozen import freeze, thaw
from .sources import Source, TritonSource, source_from_json

__all__ = ["Candidate", "load_space", "candidates_from_json"]

MAX_SHARED_BYTES = (1 << 32) - 1  # the launch calls take dynamic shared memory as 32 bits


def _arg(i: int, value: object) -> ArgSpec:
    if isinstance(value, (ScalarSpec, ArraySpec)):
        return value
    if isinstance(value, str):
        return parse_arg(value)
    raise BenchError(f"args[{i}]={show(value)}: expected an ArgSpec or its --arg text (e.g. int64:1024)")


@dataclass(frozen=True)
class Candidate:
    """One kernel launch to measure; checked on construction (BenchError naming the bad field).

    `grid` and `block`: 1 to 3 positive integers (kept padded to three). A Triton source's
    candidate gives no block and no shared_bytes (Triton's compile says them) and its kernel is
    the function's name. `args`: ArgSpec values or their `--arg` text (scalars reach a Triton
    function as Python numbers, so Triton specialises on them as its launcher does).
    `shared_bytes`: dynamic shared memory, bytes. `bench`: the measurement's options, a
    pyhipbench.BenchOptions or its JSON object.
    `timeout_s`: the watchdog's limit for this candidate, seconds, instead of the one derived from `bench`.
    `tags`: JSON-serialisable data of the caller's, part of the id.

    A candidate is immutable, its id fixed when it is made: its fields are frozen (a dataclass's), and
    `tags` is a deep copy, read-only to every level (frozen.py: a dict and lists that refuse changes,
    compare equal to the data given and serialise as it did, so ids are those of plain dicts).
    `dataclasses.replace(candidate, tags=...)` makes another candidate, with its own id.
    """
    source: Source
    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...] | None = None
    args: tuple[ArgSpec, ...] = ()
    shared_bytes: int = 0
    bench: BenchOptions = field(default_factory=BenchOptions)
    timeout_s: float | None = None
    tags: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.source, Source):
            raise BenchError(f"source={show(self.source)}: expected a sweep source "
                             "(pyhipbench.CodeObjectSource, IRSource, ...)")
        if not isinstance(self.kernel, str) or not self.kernel:
            raise BenchError(f"kernel={show(self.kernel)}: expected a kernel name")
        object.__setattr__(self, "grid", dims("grid", self.grid))
        if isinstance(self.source, TritonSource):
            if self.kernel != self.source.kernel_name:
                raise BenchError(f"kernel={self.kernel!r}: a Triton source's kernel is its function, "
                                 f"expected {self.source.kernel_name!r}")
            if self.block is not None or self.shared_bytes != 0:
                raise BenchError(f"block={show(self.block)}, shared_bytes={show(self.shared_bytes)}: a Triton "
                                 "kernel's block (num_warps x warp size) and shared memory come from its compile; "
                                 "leave them out")
        elif self.block is None:
            raise BenchError(f"block=None: expected 1 to 3 integers (threads per block) for a {self.source.kind} "
                             "source")
        else:
            object.__setattr__(self, "block", dims("block", self.block))
        if not isinstance(self.args, (list, tuple)):
            raise BenchError(f"args={show(self.args)}: expected a list of argument specs")
        object.__setattr__(self, "args", tuple(_arg(i, a) for i, a in enumerate(self.args)))
        object.__setattr__(self, "shared_bytes", integer("shared_bytes", self.shared_bytes, 0, MAX_SHARED_BYTES,
                                                         unit="bytes"))
        if not isinstance(self.bench, BenchOptions):
            object.__setattr__(self, "bench", BenchOptions.from_json(self.bench))
        if self.timeout_s is not None:
            object.__setattr__(self, "timeout_s", real("timeout_s", self.timeout_s, above=0))
        if not isinstance(self.tags, dict):
            raise BenchError(f"tags={show(self.tags)}: expected an object (dict)")
        try:
            json.dumps(self.tags, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise BenchError(f"tags={show(self.tags)}: not JSON-serialisable ({e})") from None
        object.__setattr__(self, "tags", freeze(self.tags))  # a copy: the caller's dict may change, this cannot

    def _fields(self) -> dict[str, Any]:
        block = None if self.block is None else list(self.block)
        bench = self.bench.to_json()
        if bench["slower_than_us"] is None:  # left out when unset, so a candidate's id does not change with it
            del bench["slower_than_us"]
        return {"kernel": self.kernel, "grid": list(self.grid), "block": block,
                "args": [str(a) for a in self.args], "shared_bytes": self.shared_bytes,
                "bench": bench, "timeout_s": self.timeout_s, "tags": thaw(self.tags)}

    @cached_property
    def id(self) -> str:
        """sha256 (hex, 32 digits) of the source's content and every other field: stable across runs.
        Hashed once, at first use (a sweep asks for it several times per candidate): a candidate is
        immutable, its tags included (see the class docstring)."""
        identity = {"source": self.source.identity(), **self._fields()}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]

    def to_json(self) -> dict[str, Any]:
        """The candidate as the results database keeps it (the source by path and digest, not content);
        a fresh copy, the caller's to change."""
        return {"id": self.id, "source": self.source.to_json(), **self._fields()}

    def describe(self) -> str:
        """The candidate in a few words for people: its id's first 12 digits, kernel, grid, block, tags."""
        block = "" if self.block is None else f" block {'x'.join(map(str, self.block))}"
        tags = f" tags {json.dumps(self.tags, sort_keys=True)}" if self.tags else ""
        return f"{self.id[:12]} ({self.kernel} grid {'x'.join(map(str, self.grid))}{block}{tags})"


CANDIDATE_FIELDS = ("source", "kernel", "grid", "block", "args", "shared_bytes", "bench", "timeout_s", "tags")


def _candidate(i: int, data: object, defaults: dict[str, Any], sources: dict[str, Source], base: Path
               ) -> Candidate:
    try:
        if not isinstance(data, dict):
            raise BenchError(f"{show(data)} is not an object")
        merged = {**defaults, **data}
        if isinstance(defaults.get("bench"), dict) and isinstance(data.get("bench"), dict):
            merged["bench"] = {**defaults["bench"], **data["bench"]}
        unknown = sorted(set(merged) - set(CANDIDATE_FIELDS))
        if unknown:
            raise BenchError(f"unknown field(s) {', '.join(map(repr, unknown))}; expected "
                             f"{', '.join(CANDIDATE_FIELDS)}")
        if "source" not in merged:
            missing = [f for f in ("source", "kernel", "grid", "block") if f not in merged]
            raise BenchError(f"missing {', '.join(missing)}")
        # A source file is read once for all the candidates that name it.
        key = json.dumps(merged["source"], sort_keys=True, default=str)
        if key not in sources:
            sources[key] = source_from_json(merged["source"], base)
        source = sources[key]
        if isinstance(source, TritonSource):  # the kernel is the function; block and shared memory, Triton's
            merged.setdefault("kernel", source.kernel_name)
            required: tuple[str, ...] = ("kernel", "grid")
        else:
            required = ("kernel", "grid", "block")
        missing = [f for f in required if f not in merged]
        if missing:
            raise BenchError(f"missing {', '.join(missing)}")
        return Candidate(**{**merged, "source": source,
                            "bench": BenchOptions.from_json(merged.get("bench", {}))})
    except BenchError as e:
        raise BenchError(f"candidate {i}: {e}") from None


def candidates_from_json(space: object, base: Path = Path(".")) -> list[Candidate]:
    """Candidates from a parsed space: a list of candidates, or {"defaults": {...}, "candidates": [...]}.
    The space may hold a tuner's Python values (tuples, numpy integers), but no container inside itself,
    nothing nested more than MAX_DEPTH levels and no mapping key that is not a string."""
    check_data(space, "the space", "a sweep space", json_only=False)
    if isinstance(space, list):
        space = {"candidates": space}
    if not isinstance(space, dict) or not isinstance(space.get("candidates"), list):
        raise BenchError("expected a list of candidates, or an object with \"candidates\" (a list) and "
                         "optionally \"defaults\"")
    unknown = sorted(set(space) - {"defaults", "candidates"})
    if unknown:
        raise BenchError(f"unknown top-level field(s) {', '.join(map(repr, unknown))}; expected defaults, "
                         "candidates")
    defaults = space.get("defaults", {})
    if not isinstance(defaults, dict):
        raise BenchError(f"defaults={show(defaults)}: expected an object")
    if not space["candidates"]:
        raise BenchError("the space has no candidates")
    sources: dict[str, Source] = {}
    return [_candidate(i, entry, defaults, sources, base) for i, entry in enumerate(space["candidates"])]


def load_space(path: str | os.PathLike[str]) -> list[Candidate]:
    """The candidates of a search space file: JSON, or YAML (.yaml/.yml; needs pyyaml). BenchError naming
    the file for text that is not UTF-8, does not parse, nests too deep or is not JSON data (_textfile.py),
    and for a bad candidate (its index and field)."""
    path, expected = Path(path), "a sweep space"
    text = read_text(path, expected)  # OSError naming the file: the CLI reports it
    if path.suffix.lower() in (".yaml", ".yml"):
        space = parse_yaml(text, str(path), expected)
    else:
        space = parse_json(text, str(path), expected)
    try:
        return candidates_from_json(space, path.parent)
    except BenchError as e:
        raise BenchError(f"{path}: {e}") from None
