"""The measurement's flags, made from BenchOptions' declarations: a flag per option, its help the option's meaning."""
from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from .._measure.options import OPTIONS, BenchOptions, Option
from ..errors import BenchError
from . import values

# How a flag's text becomes the option's value (the library checks the value: one message everywhere).
READERS: dict[str, Callable[[str], object]] = {"fraction": values.fraction, "number": values.number,
                                               "integer": values.integer, "count_or_word": values.count_or_word}
METAVARS = {"s": "S", "µs": "US", "fraction": "FRACTION", "integer": "N", "count_or_word": "N"}


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per measurement option (`Option.flag`), its value stored under the option's name."""
    for o in OPTIONS:
        if o.cli == "switch":
            parser.add_argument(o.flag, dest=o.name, action="store_true", help=_help(o))
        elif o.cli == "choice":
            parser.add_argument(o.flag, dest=o.name, choices=o.choices, default=o.default, help=_help(o))
        else:
            parser.add_argument(o.flag, dest=o.name, type=READERS[o.cli], default=o.default,
                                metavar=METAVARS.get(o.unit) or METAVARS[o.cli], help=_help(o))


def options_from(args: argparse.Namespace) -> BenchOptions:
    """The options the flags ask for, checked by BenchOptions: its BenchError in the flags' words."""
    try:
        return BenchOptions(**{o.name: getattr(args, o.name) for o in OPTIONS})
    except BenchError as e:
        raise BenchError(as_flags(str(e))) from None


def as_flags(message: str) -> str:
    """BenchOptions' `message`, which names keywords and values as Python does (`max_time_s=-1`,
    `cache='warm'`), as the command line names them (`--max-time -1`, `--cache warm`, `--energy`)."""
    for o in OPTIONS:
        def flagged(match: re.Match[str], o: Option = o) -> str:
            value = match.group(1).strip("'")
            return o.flag if o.cli == "switch" else f"{o.flag} {value}"
        message = re.sub(rf"\b{o.name}=('[^']*'|[^\s:,;)]+)", flagged, message)
    return message


def _help(o: Option) -> str:
    """The option's meaning and unit (the command's formatter adds the default)."""
    return (o.doc + (f", {o.unit}" if o.unit else "")).replace("%", "%%")  # argparse formats help with %
