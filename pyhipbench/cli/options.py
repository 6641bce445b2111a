"""The measurement's flags, made from BenchOptions' declarations: a flag per option, its help the option's meaning."""
from __future__ import annotations

import argparse
from collections.abc import Callable

from .._measure.options import OPTIONS, BenchOptions, Option
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
    """The options the flags ask for, checked by BenchOptions (its BenchError reaches the user in the flags'
    words: command.Parser names each keyword as its flag)."""
    return BenchOptions(**{o.name: getattr(args, o.name) for o in OPTIONS})


def _help(o: Option) -> str:
    """The option's meaning and unit (the command's formatter adds the default)."""
    return (o.doc + (f", {o.unit}" if o.unit else "")).replace("%", "%%")  # argparse formats help with %
