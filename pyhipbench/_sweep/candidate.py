"""A sweep candidate: one kernel launch, or a chain of launches, to measure, as plain picklable data.

A candidate is a source (sources.py), a kernel name, grid, block, dynamic
shared memory, argument specs (arg_spec.py's `--arg` language as data), the
`bench()` options and free-form `tags` (a tuner's own parameters, kept with
the result). Its `id` hashes all of that, the source by its content, so the
same candidate gets the same id in every run: what `--resume` skips by.

A chain candidate gives `launches` instead of `kernel`: a list of launches
(LaunchSpec: kernel, grid, block, shared_bytes, args), each of the source's
kernels, run in order as one sample; what a launch leaves out of grid, block,
shared_bytes and args is the candidate's own. An argument `ref:LAUNCH.ARG`
is the very argument of an earlier launch (for an array, the same buffer in
each rotated set). `launches: "module"` is every kernel of the source's
module in name order, each with the candidate's grid, block and args (the
rocMLIR tuning driver's way). A chain's id hashes its launches as resolved;
a single launch's is what it has always been.

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
from typing import Any, Union

from .._launch.arg_spec import (
    ARG_FORMS,
    REF_FORM,
    REF_PREFIX,
    ArgSpec,
    ArraySpec,
    LaunchArgSpec,
    RefSpec,
    ScalarSpec,
    parse_arg,
    parse_launch_arg,
)
from .._launch.launch_config import dims
from .._measure.options import BenchOptions
from .._textfile import check_data, parse_json, parse_yaml, read_text
from .._values import integer, real, show
from ..errors import BenchError
from .frozen import freeze, thaw
from .sources import SOURCE_KINDS, Source, TritonSource, source_from_json

__all__ = ["Candidate", "LaunchSpec", "MODULE", "load_space", "candidates_from_json", "chain_from_json",
           "checked_chain"]

MAX_SHARED_BYTES = (1 << 32) - 1  # the launch calls take dynamic shared memory as 32 bits
MODULE = "module"  # launches: every kernel of the source's module, in name order
LAUNCH_FIELDS = ("kernel", "grid", "block", "shared_bytes", "args")
Launches = Union[str, tuple["LaunchSpec", ...], None]  # MODULE, the launches, or None: one launch


def _arg(i: int, value: object) -> ArgSpec:
    if isinstance(value, (ScalarSpec, ArraySpec)):
        return value
    if isinstance(value, str):
        if value.startswith(REF_PREFIX):
            raise BenchError(f"args[{i}]={value!r}: {REF_FORM} names an argument of an earlier launch of a chain, "
                             f"so it belongs in a launch's args (launches[N].args); expected {ARG_FORMS}")
        return parse_arg(value)
    if isinstance(value, RefSpec):
        raise BenchError(f"args[{i}]={str(value)!r}: {REF_FORM} belongs in a chain launch's args; expected "
                         f"{ARG_FORMS}")
    raise BenchError(f"args[{i}]={show(value)}: expected an ArgSpec or its --arg text (e.g. int64:1024)")


def _launch_arg(where: str, value: object) -> LaunchArgSpec:
    if isinstance(value, (ScalarSpec, ArraySpec, RefSpec)):
        return value
    if isinstance(value, str):
        return parse_launch_arg(value, where)
    raise BenchError(f"{where}={show(value)}: expected an argument spec's text ({ARG_FORMS} or {REF_FORM})")


# Bench options hashed into a candidate's id only when they differ from these.
_ID_NEUTRAL = {"slower_than_us": None, "throttle_threshold": BenchOptions().throttle_threshold, "energy": False,
               "hold_s": 0.0}

@dataclass(frozen=True)
class LaunchSpec:
    """One launch of a chain candidate: `kernel` (a name in the candidate's source; for C++ source a
    name expression), `grid` and `block` (1 to 3 positive integers, kept padded to three),
    `shared_bytes` (dynamic shared memory, bytes) and `args` (ArgSpec values, RefSpec or their text).
    Checked on construction, but for where its references point: the chain's to check."""
    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[LaunchArgSpec, ...] = ()
    shared_bytes: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kernel, str) or not self.kernel:
            raise BenchError(f"kernel={show(self.kernel)}: expected a kernel name")
        object.__setattr__(self, "grid", dims("grid", self.grid))
        object.__setattr__(self, "block", dims("block", self.block))
        if not isinstance(self.args, (list, tuple)):
            raise BenchError(f"args={show(self.args)}: expected a list of argument specs")
        object.__setattr__(self, "args", tuple(_launch_arg(f"args[{i}]", a) for i, a in enumerate(self.args)))
        object.__setattr__(self, "shared_bytes", integer("shared_bytes", self.shared_bytes, 0, MAX_SHARED_BYTES,
                                                         unit="bytes"))

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "grid": list(self.grid), "block": list(self.block),
                "args": [str(a) for a in self.args], "shared_bytes": self.shared_bytes}

    def describe(self) -> str:
        return f"{self.kernel} grid {'x'.join(map(str, self.grid))} block {'x'.join(map(str, self.block))}"


def _launch(at: int, entry: object, defaults: dict[str, Any], inherited_from: int | None) -> LaunchSpec:
    """launches[at] as a LaunchSpec, the fields it leaves out the candidate's (`defaults`); its args, when
    left out, references to launch `inherited_from`'s (the candidate's args, made once for the chain)."""
    where = f"launches[{at}]"
    if isinstance(entry, LaunchSpec):
        return entry
    if not isinstance(entry, dict):
        raise BenchError(f"{where}={show(entry)}: expected an object with kernel and optionally grid, block, "
                         "shared_bytes, args (or a pyhipbench LaunchSpec)")
    unknown = sorted(set(entry) - set(LAUNCH_FIELDS))
    if unknown:
        raise BenchError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}; expected "
                         f"{', '.join(LAUNCH_FIELDS)}")
    fields = {**{k: v for k, v in defaults.items() if v is not None}, **entry}
    missing = [f for f in ("kernel", "grid", "block") if f not in fields]
    if missing:
        raise BenchError(f"{where}: missing {', '.join(missing)}; expected "
                         f"{'it' if len(missing) == 1 else 'them'} in the launch"
                         + ("" if missing == ["kernel"] else " or the candidate (its defaults)"))
    if "args" not in entry and inherited_from is not None:
        fields["args"] = tuple(RefSpec(inherited_from, i) for i in range(len(defaults.get("args") or ())))
    try:
        return LaunchSpec(**fields)
    except BenchError as e:  # LaunchSpec's errors start with the field: launches[1].grid[0]=0: ...
        raise BenchError(f"{where}.{e}") from None


def _resolved(launches: list[LaunchSpec]) -> tuple[LaunchSpec, ...]:
    """The launches with every reference checked (an earlier launch, an argument it has) and pointing at the
    argument it stands for in the end (a reference to a reference is the argument that one names)."""
    done: list[LaunchSpec] = []
    for at, launch in enumerate(launches):
        args = []
        for i, spec in enumerate(launch.args):
            if isinstance(spec, RefSpec):
                where = f"launches[{at}].args[{i}]={str(spec)!r}"
                if not at:
                    raise BenchError(f"{where}: the first launch has no earlier launch to refer to; expected "
                                     f"{ARG_FORMS} ({REF_FORM} in a later launch)")
                if spec.launch >= at:
                    raise BenchError(f"{where}: launch {spec.launch} is not before launch {at}; expected LAUNCH "
                                     f"one of 0 to {at - 1} (the launches before it)")
                target = done[spec.launch]
                if spec.arg >= len(target.args):
                    has = f"{len(target.args)} argument{'' if len(target.args) == 1 else 's'}"
                    wanted = f"ARG one of 0 to {len(target.args) - 1}" if target.args else "a launch that has arguments"
                    raise BenchError(f"{where}: launch {spec.launch} ({target.kernel}) has {has}; expected {wanted}")
                pointed = target.args[spec.arg]
                spec = pointed if isinstance(pointed, RefSpec) else spec
            args.append(spec)
        done.append(launch if tuple(args) == launch.args else LaunchSpec(launch.kernel, launch.grid, launch.block,
                                                                          tuple(args), launch.shared_bytes))
    return tuple(done)


def _launch_fields(grid: object, block: object, shared_bytes: object, args: object) -> dict[str, Any]:
    """A launch's grid, block (None: Triton's own), shared_bytes and args, checked (BenchError naming one)."""
    if not isinstance(args, (list, tuple)):
        raise BenchError(f"args={show(args)}: expected a list of argument specs")
    return {"grid": dims("grid", grid), "block": None if block is None else dims("block", block),
            "args": tuple(_arg(i, a) for i, a in enumerate(args)),
            "shared_bytes": integer("shared_bytes", shared_bytes, 0, MAX_SHARED_BYTES, unit="bytes")}


def checked_chain(launches: object, grid: object = None, block: object = None, shared_bytes: object = 0,
                  args: object = ()) -> tuple[Launches, dict[str, Any]]:
    """A chain checked: (its launches, as chain_from_json gives them; the grid, block, shared_bytes and args
    it keeps beside them). MODULE keeps the four, checked, for every kernel of the module; a list of
    launches takes what each leaves out from them, and keeps none (None, None, 0, ())."""
    if not isinstance(args, (list, tuple)):
        raise BenchError(f"args={show(args)}: expected a list of argument specs")
    checked = chain_from_json(launches, {"grid": grid, "block": block, "shared_bytes": shared_bytes, "args": args})
    if checked != MODULE:  # a tuple of launches
        return checked, {"grid": None, "block": None, "shared_bytes": 0, "args": ()}
    if grid is None or block is None:
        missing = " and ".join(f for f, v in (("grid", grid), ("block", block)) if v is None)
        raise BenchError(f"launches={MODULE!r}: missing {missing}; expected the chain's grid and block, which "
                         "every kernel of the module takes")
    return MODULE, _launch_fields(grid, block, shared_bytes, args)


def chain_from_json(launches: object, defaults: dict[str, Any]) -> Launches:
    """A chain's launches (MODULE, or the LaunchSpecs resolved) from `launches` (MODULE, or a list of
    launch objects / LaunchSpecs) and the candidate's `defaults` (grid, block, shared_bytes, args: what a
    launch leaves out); BenchError naming the launch, its field and what was expected."""
    if isinstance(launches, str) and launches == MODULE:
        return MODULE
    if isinstance(launches, str) or not isinstance(launches, (list, tuple)) or not launches:
        raise BenchError(f"launches={show(launches)}: expected a non-empty list of launches (objects with "
                         f"kernel and optionally grid, block, shared_bytes, args) or {MODULE!r} (every kernel of "
                         "the source's module, in name order)")
    if defaults.get("args"):
        defaults = {**defaults, "args": tuple(_arg(i, a) for i, a in enumerate(defaults["args"]))}
    made: list[LaunchSpec] = []
    inherited_from = None  # the first launch taking the candidate's args: those after it share its arguments
    for at, entry in enumerate(launches):
        made.append(_launch(at, entry, defaults, inherited_from))
        if inherited_from is None and isinstance(entry, dict) and "args" not in entry:
            inherited_from = at
    return _resolved(made)


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
    `tags` is a deep copy, read-only to every level (frozen.py: a dict and lists that refuse changes,
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
        self._check_dims_and_args()

    def _check_dims_and_args(self) -> None:
        for name, value in _launch_fields(self.grid, self.block, self.shared_bytes, self.args).items():
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
        elif isinstance(source, TritonSource):  # the kernel is the function; block and shared memory, Triton's
            merged.setdefault("kernel", source.kernel_name)
            required = ("kernel", "grid")
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


def tags_text(tags: object) -> str:
    """A candidate's tags as a person reads them, after a space: ` BLOCK_M=64 num_warps=4` for a mapping,
    its JSON for anything else; "" for none."""
    tags = thaw(tags)
    if not tags:
        return ""
    if isinstance(tags, dict):
        return "".join(f" {key}={json.dumps(value) if not isinstance(value, str) else value}"
                       for key, value in tags.items())
    return f" {json.dumps(tags)}"
