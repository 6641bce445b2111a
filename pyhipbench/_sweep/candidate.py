"""A sweep candidate: one kernel launch, or a chain of launches, to measure, as plain picklable data.

A candidate is a source (pyhipbench._sources), a kernel name, grid, block,
dynamic shared memory, argument specs (arg_spec.py's `--arg` language as
data), the `bench()` options and free-form `tags` (a tuner's own parameters,
kept with the result). Its `id` hashes all of that, the source by its
content, so the same candidate gets the same id in every run: what
`--resume` skips by.

A chain candidate gives `launches` instead of `kernel`: a chain of the
source's kernels, as pyhipbench._sources.chain checks it (LaunchSpec,
`ref:LAUNCH.ARG`, "module"), what a launch leaves out being the candidate's
own. A chain's id hashes its launches as resolved; a single launch's is what
it has always been.

A search space file (`load_space`) is JSON, or YAML when pyyaml is
installed (.yaml / .yml):

    {"defaults": {"source": {"kind": "code-object", "path": "copy.ptx"}, "kernel": "copy",
                  "block": [256], "bench": {"cache": "warm", "max_time_s": 0.2}},
     "candidates": [{"grid": [1024], "args": ["array:float32:262144", "array:float32:262144",
                                               "int64:262144"], "tags": {"tile": 1}}, ...]}

or just the list of candidates. Each candidate is its defaults updated with
its own fields ("bench" merged key by key; a candidate's own `kernel` or
`launches` drops the other from the defaults); paths are relative to the file.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .._frozen import freeze, thaw
from .._launch.arg_spec import ArgSpec
from .._launch.launch_config import dims
from .._measure.options import BenchOptions
from .._sources.chain import MODULE, Launches, checked_chain, launch_fields
from .._sources.source import SOURCE_KINDS, Source, source_from_json
from .._textfile import check_data, parse_json, parse_yaml, read_text
from .._values import real, show
from ..errors import BenchError

__all__ = ["Candidate", "load_space", "candidates_from_json"]

# Bench options hashed into a candidate's id only when they differ from these.
_ID_NEUTRAL = {"slower_than_us": None, "throttle_threshold": BenchOptions().throttle_threshold, "energy": False,
               "hold_s": 0.0}


@dataclass(frozen=True)
class Candidate:
    """One kernel launch, or a chain of launches, to measure; checked on construction (BenchError naming
    the bad field).

    `grid` and `block`: 1 to 3 positive integers (kept padded to three). A Triton source's
    candidate gives no block and no shared_bytes (Triton's compile says them) and its kernel is
    the function's name. `args`: ArgSpec values or their `--arg` text (scalars reach a Triton
    function as Python numbers, so Triton specialises on them as its launcher does).
    `shared_bytes`: dynamic shared memory, bytes. `bench`: the measurement's options, a
    pyhipbench.BenchOptions or its JSON object.
    `timeout_s`: the watchdog's limit for this candidate, seconds, instead of the one derived from `bench`.
    `tags`: JSON-serialisable data of the caller's, part of the id.
    `launches`: a chain instead of `kernel` (sources compiled ahead of the workers: not Triton): a list
    of LaunchSpec or their JSON objects, what each leaves out of grid, block, shared_bytes and args
    taken from the candidate's own (kept in the launches: the candidate's grid, block and args are then
    None, None and ()), launches that leave their args out sharing the candidate's arguments; or
    "module", every kernel of the source's module in name order with the candidate's grid, block,
    shared_bytes and args (the same arrays for all).

    A candidate is immutable, its id fixed when it is made: its fields are frozen (a dataclass's), and
    `tags` is a deep copy, read-only to every level (_frozen.py: a dict and lists that refuse changes,
    compare equal to the data given and serialise as it did, so ids are those of plain dicts).
    `dataclasses.replace(candidate, tags=...)` makes another candidate, with its own id.
    """
    source: Source
    kernel: str | None = None
    grid: tuple[int, ...] | None = None
    block: tuple[int, ...] | None = None
    args: tuple[ArgSpec, ...] = ()
    shared_bytes: int = 0
    bench: BenchOptions = field(default_factory=BenchOptions)
    timeout_s: float | None = None
    tags: dict[str, Any] = field(default_factory=dict)
    launches: Launches = None

    def __post_init__(self) -> None:
        if not isinstance(self.source, Source):
            raise BenchError(f"source={show(self.source)}: expected a sweep source "
                             "(pyhipbench.CodeObjectSource, IRSource, ...)")
        if self.launches is not None:
            self._check_chain()
        else:
            self._check_launch()
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

    def _check_chain(self) -> None:
        if self.source.specialises:
            chained = ", ".join(k for k, c in SOURCE_KINDS.items() if not c.specialises)
            raise BenchError(f"launches: a {self.source.kind} source is one kernel, compiled for its arguments; "
                             f"expected a {chained} source for a chain")
        if self.kernel is not None:
            raise BenchError(f"kernel={show(self.kernel)} with launches: a chain's kernels are its launches'; "
                             "expected kernel in each launch, not beside launches")
        launches, own = checked_chain(self.launches, self.grid, self.block, self.shared_bytes, self.args)
        for name, value in own.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "launches", launches)

    def _check_launch(self) -> None:
        if not isinstance(self.kernel, str) or not self.kernel:
            raise BenchError(f"kernel={show(self.kernel)}: expected a kernel name (or launches, for a chain)")
        object.__setattr__(self, "grid", dims("grid", self.grid))
        self.source.check_launch(self.kernel, self.block, self.shared_bytes)
        self._check_dims_and_args()

    def _check_dims_and_args(self) -> None:
        for name, value in launch_fields(self.grid, self.block, self.shared_bytes, self.args).items():
            object.__setattr__(self, name, value)

    def _fields(self) -> dict[str, Any]:
        # Options left at a value that adds nothing are left out, so a candidate's id (what a database
        # resumes by) stays what it was before the option existed.
        bench = {k: v for k, v in self.bench.to_json().items() if _ID_NEUTRAL.get(k, ...) != v}
        rest = {"bench": bench, "timeout_s": self.timeout_s, "tags": thaw(self.tags)}
        if isinstance(self.launches, tuple):  # a chain's launches hold its kernels, grids, blocks and args
            return {"launches": [launch.to_json() for launch in self.launches], **rest}
        block = None if self.block is None else list(self.block)
        launch = {"grid": list(self.grid), "block": block, "args": [str(a) for a in self.args],
                  "shared_bytes": self.shared_bytes}
        if self.launches == MODULE:
            return {"launches": MODULE, **launch, **rest}
        return {"kernel": self.kernel, **launch, **rest}  # a single launch: the fields ids have always hashed

    @property
    def name(self) -> str:
        """The kernel's name; a chain's kernels joined by " -> " (as its result names it), or "module" for
        every kernel of the source's module."""
        if self.launches == MODULE:
            return MODULE
        if self.launches is not None:
            return " -> ".join(launch.kernel for launch in self.launches)
        return self.kernel

    @cached_property
    def id(self) -> str:
        """sha256 (hex, 32 digits) of the source's content and every other field: stable across runs.
        Hashed once, at first use (a sweep asks for it several times per candidate): a candidate is
        immutable, its tags included (see the class docstring)."""
        identity = {"source": self.source.identity(), **self._fields()}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]

    @cached_property
    def code_key(self) -> str:
        """What its code object is compiled from, hashed: the source, and the arguments for a source that
        `specialises` on them (Triton). Candidates with the same key share one compile and one loaded module."""
        if not self.source.specialises:
            return self.source.digest
        return hashlib.sha256(f"{self.source.digest} {self.args!r}".encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        """The candidate as the results database keeps it (the source by path and digest, not content);
        a fresh copy, the caller's to change."""
        return {"id": self.id, "source": self.source.to_json(), **self._fields()}

    def describe(self) -> str:
        """The candidate in a few words for people: its id's first 12 digits, kernel (a chain's launches, each
        with its grid and block), grid, block, tags."""
        tags = f" tags {json.dumps(self.tags, sort_keys=True)}" if self.tags else ""
        if isinstance(self.launches, tuple):
            return f"{self.id[:12]} ({' -> '.join(launch.describe() for launch in self.launches)}{tags})"
        block = "" if self.block is None else f" block {'x'.join(map(str, self.block))}"
        what = "every kernel of the module," if self.launches == MODULE else self.kernel
        return f"{self.id[:12]} ({what} grid {'x'.join(map(str, self.grid))}{block}{tags})"


CANDIDATE_FIELDS = ("source", "kernel", "launches", "grid", "block", "args", "shared_bytes", "bench", "timeout_s",
                    "tags")


def _candidate(i: int, data: object, defaults: dict[str, Any], sources: dict[str, Source], base: Path
               ) -> Candidate:
    try:
        if not isinstance(data, dict):
            raise BenchError(f"{show(data)} is not an object")
        merged = {**defaults, **data}
        if isinstance(defaults.get("bench"), dict) and isinstance(data.get("bench"), dict):
            merged["bench"] = {**defaults["bench"], **data["bench"]}
        for own, other in (("launches", "kernel"), ("kernel", "launches")):  # alternatives: its own one wins
            if own in data and other not in data:
                merged.pop(other, None)
        unknown = sorted(set(merged) - set(CANDIDATE_FIELDS))
        if unknown:
            raise BenchError(f"unknown field(s) {', '.join(map(repr, unknown))}; expected "
                             f"{', '.join(CANDIDATE_FIELDS)}")
        if "source" not in merged:
            wanted = ("source",) if "launches" in merged else ("source", "kernel", "grid", "block")
            missing = [f for f in wanted if f not in merged]
            raise BenchError(f"missing {', '.join(missing)}")
        # A source file is read once for all the candidates that name it.
        key = json.dumps(merged["source"], sort_keys=True, default=str)
        if key not in sources:
            sources[key] = source_from_json(merged["source"], base)
        source = sources[key]
        if "launches" in merged:  # a chain: its launches say what they need (Candidate checks them)
            required: tuple[str, ...] = ()
        else:
            if source.kernel_name is not None:  # a source of one kernel (Triton's function) names it
                merged.setdefault("kernel", source.kernel_name)
            required = source.launch_fields
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

