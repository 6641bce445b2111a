"""The chain schema: a launch of a chain (LaunchSpec) and a chain's launches, checked, as a sweep
candidate's `launches` and `pyhipbench run --chain`'s file give them.

A chain is a list of launches (LaunchSpec: kernel, grid, block, shared_bytes,
args), each of the source's kernels, run in order as one sample; what a
launch leaves out of grid, block, shared_bytes and args is the chain's own
(the candidate's, or the file's). An argument `ref:LAUNCH.ARG` is the very
argument of an earlier launch (for an array, the same buffer in each rotated
set). `launches: "module"` is every kernel of the source's module in name
order, each with the chain's grid, block and args (the rocMLIR tuning
driver's way).
"""
from __future__ import annotations

from dataclasses import dataclass
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
from .._values import integer, show
from ..errors import BenchError

__all__ = ["LaunchSpec", "MODULE", "LAUNCH_FIELDS", "MAX_SHARED_BYTES", "Launches", "checked_chain",
           "chain_from_json", "launch_fields"]

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


def launch_fields(grid: object, block: object, shared_bytes: object, args: object) -> dict[str, Any]:
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
    return MODULE, launch_fields(grid, block, shared_bytes, args)


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
