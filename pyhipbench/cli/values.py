"""argparse `type=` converters: command-line text to the values the commands pass on.

A converter refuses only text that does not spell a value of its kind ("1e3"
for a count, "64,x" for a grid), saying the form it expected; the parser
(command.Parser) puts the flag and the text as typed before it. Ranges are
the library's to check (BenchOptions,
LaunchConfig, plan_rotation, sweep()), so a value is refused the same way, with
the same message, from the command line and from Python.
"""
from __future__ import annotations

import argparse
import re
import sys
from fractions import Fraction
from pathlib import Path

from .._launch.arg_spec import ArgSpec, parse_arg
from ..errors import BenchError

_SIZE = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))([KMGT]?)(?:I?B)?")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def integer(text: str) -> int:
    """'42', '-1' -> a whole number, written in decimal."""
    try:
        return int(text)
    except ValueError:
        pass
    digits = text.strip().lstrip("+-")
    limit = sys.get_int_max_str_digits()
    if digits.isdigit() and limit and len(digits) > limit:  # a number, but one int() will not convert
        raise argparse.ArgumentTypeError(f"{len(digits)} digits, more than Python converts ({limit}); expected "
                                         "a whole number")
    raise argparse.ArgumentTypeError("expected a whole number such as 100")


def number(text: str) -> int | float:
    """'25.6', '1e-3', '2' -> a number; an int when written as one, so a message shows it as given."""
    try:
        return integer(text)
    except argparse.ArgumentTypeError:
        pass
    try:
        return float(text)  # "nan" and "inf" are numbers too: the library says they are out of range
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number such as 2.5 or 1e-3") from None


def fraction(text: str) -> int | float:
    """'0.01' or '1%' -> a number ('1%' is 0.01)."""
    percent = text.strip().endswith("%")
    try:
        value = number(text.strip().removesuffix("%"))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError("expected a number such as 0.01 or a percentage such as 1%") from None
    return value / 100 if percent else value


def count_or_word(text: str) -> int | str:
    """'3' -> 3; any other text as it is, for the library to accept ('auto') or refuse."""
    try:
        return int(text)
    except ValueError:
        return text


def dims(text: str) -> int | tuple[int, ...]:
    """'1024' -> 1024, '64,4' -> (64, 4): comma-separated whole numbers."""
    try:
        values = tuple(integer(part) for part in text.split(","))
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError("expected comma-separated whole numbers such as 1024 or 64,4") from None
    return values[0] if len(values) == 1 else values


def integers(text: str) -> list[int]:
    """'0,1' -> [0, 1]: comma-separated whole numbers."""
    try:
        return [integer(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError("expected comma-separated whole numbers such as 0,1") from None


def size(text: str) -> int:
    """'64M', '1.5G', '4096' -> bytes (K, M, G, T are powers of 1024; a B or iB after them is allowed)."""
    match = _SIZE.fullmatch(text.strip().upper())
    try:
        value = Fraction(match[1]) * _UNITS[match[2]] if match else None
    except ValueError:  # more digits than Python converts
        value = None
    if value is None:
        raise argparse.ArgumentTypeError("not a size; expected bytes such as 4096, 64M or 1G")
    if value.denominator != 1:
        raise argparse.ArgumentTypeError(f"{float(value):g} bytes; expected a whole number of bytes such as 4096, "
                                         "64M or 1G")
    return int(value)


def expect(text: str) -> tuple[int, Path]:
    """'1=ref.npy' -> (1, Path('ref.npy')): an --arg position and a file."""
    index, sep, path = text.partition("=")
    if not sep or not path or not (index.isascii() and index.isdigit()):
        raise argparse.ArgumentTypeError("expected N=FILE.npy, N the position of an --arg (0 for the first)")
    return int(index), Path(path)


def kernel_arg(text: str) -> ArgSpec:
    """One --arg in the argument language (pyhipbench._launch.arg_spec), which checks its own values."""
    try:
        return parse_arg(text)
    except BenchError as e:  # it names the text as `--arg 'TEXT': ` (a long one shortened), as the parser does
        message = str(e)
        for named in (f"--arg {text!r}: ", f"--arg {text[:40]!r}...: "):
            message = message.removeprefix(named)
        raise argparse.ArgumentTypeError(message) from None
