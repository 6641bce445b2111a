"""Kernel arguments written as text: the language of the CLI's `--arg`.

    TYPE:VALUE                   a scalar: int64:1048576, uint32:0xff, float32:2.5
    array:DTYPE:COUNT[:FILL]     a device array, copied for every rotated set
    shared:DTYPE:COUNT[:FILL]    a device array all sets use as is (not rotated)

and, in a launch of a chain (a sweep candidate's or `run --chain`'s launches),

    ref:LAUNCH.ARG               the very argument ARG of the earlier launch LAUNCH
                                 (both from 0): for an array, the same buffer in
                                 every rotated set (a workspace one kernel writes
                                 and the next reads)

`parse_arg` turns the text into a spec: plain frozen data, checked in full
without a device, and picklable, so a sweep can ship specs to worker
processes (`parse_launch_arg` takes `ref:` too). `materialize` makes the
kernel argument on a device, `materialize_chain` a chain's arguments.

FILL is one of
    zeros, ones
    arange     0, 1, 2, ... COUNT - 1 (COUNT - 1 must be exact in DTYPE)
    random     a fixed seed (0), so runs compare: floats uniform in [0, 1);
               integers uniform in [0, 127], which every integer dtype holds
               and which stays a small valid index or count
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import BenchError
from . import args as scalars
from .args import Argument, shared

__all__ = ["DTYPES", "FILLS", "ARG_FORMS", "REF_FORM", "ScalarSpec", "ArraySpec", "ArgSpec", "RefSpec",
           "LaunchArgSpec", "parse_arg", "parse_launch_arg", "materialize", "materialize_chain",
           "host_available_bytes"]

DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
FILLS = ("zeros", "ones", "arange", "random")
ARG_FORMS = "TYPE:VALUE, array:DTYPE:COUNT[:FILL] or shared:DTYPE:COUNT[:FILL]"
REF_FORM = "ref:LAUNCH.ARG"
REF_PREFIX = "ref:"
RANDOM_SEED = 0
RANDOM_INT_MAX = 127  # inclusive: int8's largest, so one range serves every integer dtype
# Arrays are indexed with 64-bit byte offsets; numpy and the drivers take sizes as signed 64-bit.
MAX_ARRAY_BYTES = (1 << 63) - 1
MAX_VALUE_CHARS = 100  # longer numbers are out of every dtype's range (uint64 in binary: 66 characters)


def _largest_exact(dtype: np.dtype) -> int:
    """The largest whole number `dtype` holds exactly, with every smaller one."""
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).max)
    return 2 ** (np.finfo(dtype).nmant + 1)


def _check_dtype(dtype: object) -> None:
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise BenchError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")


@dataclass(frozen=True)
class ScalarSpec:
    """A by-value argument: `dtype` one of DTYPES, `value` in its range (checked on construction)."""
    dtype: str
    value: int | float

    def __post_init__(self) -> None:
        _check_dtype(self.dtype)
        getattr(scalars, self.dtype)(self.value)  # BenchError naming the value when out of range

    def __str__(self) -> str:
        return f"{self.dtype}:{self.value!r}"


@dataclass(frozen=True)
class ArraySpec:
    """A device array of `count` elements of `dtype`, filled with `fill`; `shared`: not rotated.

    Checked on construction: dtype one of DTYPES, count a positive integer whose
    size fits in MAX_ARRAY_BYTES, fill one of FILLS, arange exact in the dtype.
    """
    dtype: str
    count: int
    fill: str = "zeros"
    shared: bool = False

    def __post_init__(self) -> None:
        _check_dtype(self.dtype)
        if isinstance(self.count, bool) or not isinstance(self.count, (int, np.integer)) or self.count < 1:
            raise BenchError(f"element count {self.count!r} is not a positive whole number")
        object.__setattr__(self, "count", int(self.count))  # a numpy integer pickles as a plain int
        if self.nbytes > MAX_ARRAY_BYTES:
            raise BenchError(f"{self.count} x {self.dtype} is {self.nbytes} bytes, more than any device "
                             "addresses (2**63 - 1)")
        if self.fill not in FILLS:
            raise BenchError(f"fill {self.fill!r} is not one of {', '.join(FILLS)}")
        largest = _largest_exact(np.dtype(self.dtype))
        if self.fill == "arange" and self.count - 1 > largest:
            raise BenchError(f"arange reaches {self.count - 1}, but {self.dtype} holds whole numbers exactly "
                             f"only up to {largest}")
        if not isinstance(self.shared, bool):
            raise BenchError(f"shared={self.shared!r}: expected True or False")

    @property
    def nbytes(self) -> int:
        """Size of the array, bytes."""
        return self.count * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{'shared' if self.shared else 'array'}:{self.dtype}:{self.count}:{self.fill}"


ArgSpec = ScalarSpec | ArraySpec


@dataclass(frozen=True)
class RefSpec:
    """In a chain's launch: the very argument `arg` of the earlier launch `launch` (indices from 0), for
    an array the same buffer in every rotated set. Where it may point (an earlier launch, an argument it
    has) is the chain's to check: it alone knows the launches."""
    launch: int
    arg: int

    def __post_init__(self) -> None:
        for name in ("launch", "arg"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise BenchError(f"{name}={value!r}: expected a whole number >= 0 (an index, from 0)")
            object.__setattr__(self, name, int(value))

    def __str__(self) -> str:
        return f"{REF_PREFIX}{self.launch}.{self.arg}"


LaunchArgSpec = ScalarSpec | ArraySpec | RefSpec


def _number(dtype: str, text: str) -> int | float:
    """`text` as a value of `dtype`'s kind (int: decimal, 0x, 0o, 0b; float); BenchError if it is none."""
    if len(text) > MAX_VALUE_CHARS:  # also keeps int() below Python's digit limit
        raise BenchError(f"a value of {len(text)} characters is out of range for {dtype}")
    try:
        value = float(text) if dtype.startswith("float") else int(text, 0)
    except ValueError:
        raise BenchError(f"{text!r} is not a valid {dtype}") from None
    if isinstance(value, float) and math.isinf(value) and "inf" not in text.lower():
        raise BenchError(f"{text} is out of range for {dtype}")  # float('1e400') is inf
    return value


def _count(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise BenchError(f"element count {text!r} is not a positive whole number")
    if len(text.lstrip("0")) > MAX_VALUE_CHARS:
        raise BenchError(f"an element count of {len(text)} digits is more than any device addresses")
    return int(text)


def _spec(kind: str, fields: list[str]) -> ArgSpec:
    if kind in DTYPES:
        if len(fields) != 1 or not fields[0]:
            raise BenchError(f"expected {kind}:VALUE")
        return ScalarSpec(kind, _number(kind, fields[0]))
    if kind in ("array", "shared"):
        if len(fields) not in (2, 3):
            raise BenchError(f"expected {kind}:DTYPE:COUNT[:FILL]")
        _check_dtype(fields[0])
        return ArraySpec(fields[0], _count(fields[1]), *fields[2:], shared=kind == "shared")
    raise BenchError(f"expected {ARG_FORMS}, with TYPE and DTYPE one of {', '.join(DTYPES)}")


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 200 else f"{text[:40]!r}..."


def parse_arg(text: str, label: str | None = None) -> ArgSpec:
    """The spec of one `--arg` string; BenchError naming the text (as `--arg TEXT`, or `LABEL=TEXT`), the
    bad field and what was expected."""
    kind, *fields = text.split(":")
    try:
        return _spec(kind, fields)
    except BenchError as e:
        raise BenchError(f"--arg {_shown(text)}: {e}" if label is None else f"{label}={_shown(text)}: {e}") from None


def _index(text: str) -> int | None:
    """A decimal index (0, 1, 12; no sign, no leading zeros beyond "0"), else None."""
    if text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0")) and len(text) <= 9:
        return int(text)
    return None


def parse_launch_arg(text: str, label: str) -> LaunchArgSpec:
    """One argument of a chain's launch: the `--arg` language or ref:LAUNCH.ARG; BenchError naming it as
    `LABEL=TEXT` and what was expected."""
    if not text.startswith(REF_PREFIX):
        return parse_arg(text, label)
    launch, dot, arg = text[len(REF_PREFIX):].partition(".")
    indices = _index(launch), _index(arg)
    if not dot or None in indices:
        raise BenchError(f"{label}={_shown(text)}: expected {REF_FORM}, LAUNCH and ARG whole numbers from 0 "
                         "(ref:0.1: argument 1 of the chain's first launch)")
    return RefSpec(*indices)


def host_available_bytes() -> int | None:
    """Memory the host can still give, bytes (MemAvailable on Linux); None where it cannot tell."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def _host_values(spec: ArraySpec) -> np.ndarray:
    dtype = np.dtype(spec.dtype)
    if spec.fill == "zeros":
        return np.zeros(spec.count, dtype)
    if spec.fill == "ones":
        return np.ones(spec.count, dtype)
    if spec.fill == "arange":
        return np.arange(spec.count, dtype=dtype)
    rng = np.random.default_rng(RANDOM_SEED)
    if dtype.kind in "iu":
        return rng.integers(0, RANDOM_INT_MAX, size=spec.count, dtype=dtype, endpoint=True)
    values = rng.random(spec.count, dtype=np.float64 if dtype == np.float64 else np.float32).astype(dtype)
    if dtype == np.float16:  # values just below 1 round up to 1.0 in float16
        np.minimum(values, np.nextafter(np.float16(1), np.float16(0)), out=values)
    return values


def materialize(spec: ArgSpec, device) -> Argument:
    """The kernel argument `spec` describes, on `device` (a `pyhipbench.Device`).

    An array is filled on the host and copied, so it needs its size free both
    on the device and on the host: BenchError naming the count, the bytes and
    what is free, before anything is allocated.
    """
    if isinstance(spec, ScalarSpec):
        return getattr(scalars, spec.dtype)(spec.value)
    free, _total = device.memory_info()
    if spec.nbytes > free:
        raise BenchError(f"--arg {spec}: {spec.count} x {spec.dtype} is {spec.nbytes} bytes; "
                         f"the device has {free} bytes free")
    host_free = host_available_bytes()
    if host_free is not None and spec.nbytes > host_free:
        raise BenchError(f"--arg {spec}: {spec.count} x {spec.dtype} is {spec.nbytes} bytes, filled on "
                         f"the host first; the host has {host_free} bytes available")
    try:
        host = _host_values(spec)
    except MemoryError:
        raise BenchError(f"--arg {spec}: {spec.count} x {spec.dtype} is {spec.nbytes} bytes; the host "
                         "could not allocate them to fill the array") from None
    array = device.array(host)
    return shared(array) if spec.shared else array


def materialize_chain(launch_args: Sequence[Sequence[LaunchArgSpec]], device) -> list[list[Argument]]:
    """Each launch's arguments on `device`: every spec made anew, each RefSpec the very object its launch and
    argument were made as (so an array two launches share is one array, rotated as one). BenchError for a
    reference that points at no earlier launch's argument (the chain's own check finds these first)."""
    made: list[list[Argument]] = []
    for at, specs in enumerate(launch_args):
        arguments = []
        for i, spec in enumerate(specs):
            if isinstance(spec, RefSpec):
                if spec.launch >= at or spec.arg >= len(made[spec.launch]):
                    raise BenchError(f"launches[{at}].args[{i}]={str(spec)!r}: expected a reference to an "
                                     "argument of an earlier launch")
                arguments.append(made[spec.launch][spec.arg])
            else:
                arguments.append(materialize(spec, device))
        made.append(arguments)
    return made
