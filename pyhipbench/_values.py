"""Parameters checked the same way everywhere: integers, reals, file formats.

Tuners compute grid sizes, counts and shapes with numpy, so every integral
type is an integer here: Python ints, numpy integers, anything with
`__index__` (`operator.index`). Bools, floats (even 4.0, even numpy ones) and
strings are refused with a BenchError naming the parameter and the value.
"""
from __future__ import annotations

import operator
import reprlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .errors import BenchError

_short = reprlib.Repr()
_short.maxlong = _short.maxstring = _short.maxother = 40


def show(value: object) -> str:
    """`repr(value)`, shortened to about 40 characters (a 400-digit int stays readable)."""
    return _short.repr(value)


def expected_integer(low: int | None = None, high: int | None = None) -> str:
    """'an integer', 'an integer >= 1', 'an integer in [0, 255]': the range in words."""
    if low is not None and high is not None:
        return f"an integer in [{low}, {high}]"
    if low is not None:
        return f"an integer >= {low}"
    if high is not None:
        return f"an integer <= {high}"
    return "an integer"


def integer(name: str, value: object, low: int | None = None, high: int | None = None, *,
            call: bool = False, unit: str = "") -> int:
    """`value` as a Python int in [`low`, `high`] (either bound may be None).

    `name` labels the value in the error: `name=value` (`grid=4.0`), or
    `name(value)` with `call=True` (`int32(4.0)`); `unit` ("bytes") follows
    the range. Raises BenchError for a bool, a non-integral value or one out
    of range.
    """
    def error(problem: str) -> BenchError:  # worded only when raised: bench() checks ~20 values a call
        label = f"{name}({show(value)})" if call else f"{name}={show(value)}"
        wanted = expected_integer(low, high) + (f" ({unit})" if unit else "")
        return BenchError(problem.format(label=label, wanted=wanted, type=type(value).__name__))

    if isinstance(value, (bool, np.bool_)):
        raise error("{label}: expected {wanted}, got a bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise error("{label}: expected {wanted}, got {type}") from None
    if (low is not None and number < low) or (high is not None and number > high):
        raise error("{label}: out of range, expected {wanted}")
    return number


def real(name: str, value: object, *, minimum: float | None = None, above: float | None = None,
         below: float | None = None, maximum: float | None = None) -> float:
    """`value` as a finite float with `value >= minimum`, `> above`, `< below`, `<= maximum` (each optional).

    Raises BenchError naming `name=value` and the range for a bool, a
    non-number, NaN, an infinity or a value out of range.
    """
    def error(problem: str) -> BenchError:  # worded only when raised
        bounds = [f">= {minimum}"] if minimum is not None else []
        bounds += [f"> {above}"] if above is not None else []
        bounds += [f"< {below}"] if below is not None else []
        bounds += [f"<= {maximum}"] if maximum is not None else []
        wanted = "a finite number" + (" " + " and ".join(bounds) if bounds else "")
        return BenchError(problem.format(label=f"{name}={show(value)}", wanted=wanted, type=type(value).__name__))

    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise error("{label}: expected {wanted}, got {type}")
    number = float(value)
    if not np.isfinite(number) or (minimum is not None and number < minimum) \
            or (above is not None and number <= above) or (below is not None and number >= below) \
            or (maximum is not None and number > maximum):
        raise error("{label}: out of range, expected {wanted}")
    return number


def icache_flush(value: object) -> bool | None:
    """An icache_flush option as a Python bool, or None (the default: flush where the target can);
    numpy bools count as bools. BenchError naming the value otherwise."""
    if value is None:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise BenchError(f"icache_flush={show(value)}: expected True, False or None (the default)")
    return bool(value)


def file_format(path: Path, formats: Sequence[str], kind: str) -> str:
    """`path`'s suffix, lower-case, where it is one of `formats` (a `kind` of file: "report", "picture");
    BenchError naming the path and the formats otherwise."""
    suffix = path.suffix.lower()
    if suffix not in formats:
        raise BenchError(f"{path}: unknown {kind} format {suffix or '(no suffix)'!r}; expected one of "
                         f"{', '.join(formats)}")
    return suffix
