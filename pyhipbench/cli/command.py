"""How a command's parser is made: a description and examples, each option's default in its help.

Every command's help reads the same way: what it does (`description`, the
line `pyhipbench --help` lists and more), each option with its default
(added by `HelpFormatter` where the help does not say it already), then
`examples`, command lines a person can copy. `--backend` and `--device` are
the same flags, with the same help, wherever a command opens a GPU.
"""
from __future__ import annotations

import argparse
import logging
import sys
from typing import Callable

from .._device.backends import BACKEND_NAMES
from .._device.device import Device
from . import values

OpenDevice = Callable[[str | None, int], Device]  # (backend or None for the first that works, index) -> the GPU


EXAMPLES = "examples:"


class HelpFormatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal, examples as written (a line each); an option's default appended
    to its help unless the help names one, or there is none worth saying (None, a flag's False, [])."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or action.nargs == 0 or default is None or default is argparse.SUPPRESS \
                or (isinstance(default, list) and not default):
            return text
        if isinstance(default, tuple):  # a value kept as written beside its meaning: ("64M", 67108864)
            return f"{text} (default: {default[0]})"
        return f"{text} (default: %(default)s)"


def add_command(commands: argparse._SubParsersAction, name: str, summary: str, description: str,
                examples: list[str]) -> argparse.ArgumentParser:
    """The parser of command `name`: `summary` for `pyhipbench --help`'s list, `description` (and the
    summary) atop its own help, `examples` (command lines) below its options."""
    epilog = EXAMPLES + "\n" + "\n".join(f"  {line}" for line in examples)
    parser = commands.add_parser(name, help=summary, description=f"{summary[0].upper()}{summary[1:]}. {description}",
                                 epilog=epilog, formatter_class=HelpFormatter)
    add_verbosity(parser, argparse.SUPPRESS)  # given after the command, it overrides the one before
    return parser


def add_verbosity(parser: argparse.ArgumentParser, default: object) -> None:
    """-v (what ran and what was chosen by default, and why; -vv more) and -q (errors only), on stderr."""
    parser.add_argument("-v", "--verbose", action="count", default=default if default is argparse.SUPPRESS else 0,
                        help="say what ran and what was chosen by default and why, on stderr; -vv says more")
    parser.add_argument("-q", "--quiet", action="store_true", default=default if default is argparse.SUPPRESS
                        else False, help="say nothing on stderr but errors")


def configure_logging(verbose: int, quiet: bool) -> None:
    """The package's log (logging.getLogger("pyhipbench")) on stderr at the level -v / -q ask for."""
    level = logging.ERROR if quiet else logging.WARNING if not verbose else logging.INFO if verbose == 1 \
        else logging.DEBUG
    logger = logging.getLogger("pyhipbench")
    logger.setLevel(level)
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("pyhipbench: %(message)s"))
        logger.addHandler(handler)


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler writing to sys.stderr as it is when a record is written (not as it was when made)."""

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def add_device_options(parser: argparse.ArgumentParser) -> None:
    """--backend and --device, for a command that opens a GPU."""
    parser.add_argument("--backend", choices=BACKEND_NAMES,
                        help="the GPU's API: hip or cuda (default: the first that finds a GPU, hip then cuda)")
    parser.add_argument("--device", type=values.integer, default=0, metavar="N",
                        help="the GPU's index within its backend")
