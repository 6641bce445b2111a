"""How a command's parser is made: a description and examples, each option's default in its help, and its
errors in the words the user typed.

Every command's help reads the same way: what it does (`description`, the
line `pyhipbench --help` lists and more), each option with its default
(added by `HelpFormatter` where the help does not say it already), then
`examples`, command lines a person can copy. `--backend` and `--device` are
the same flags, with the same help, wherever a command opens a GPU.

A value is named as the user gave it. `Parser` keeps what each flag was given
as, and which keyword of the library each flag feeds (the flag's name, with a
unit suffix where the keyword has one: `--max-time` feeds `max_time_s`; or the
`keyword=` its add_argument names: `--device` feeds `index`), so the
library's BenchError, which names `index=-1` as Python does, reaches the user
as `--device -1`. A usage error is one line, `PROG: what was wrong (PROG -h
for help)`, naming the option, the value as written and what was expected.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import functools
import logging
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, NoReturn

from .._device import archs
from .._device.backends import BACKEND_NAMES
from .._device.device import Device, NoGpuFound, installed_backends
from .._values import show
from ..errors import BenchError, CodegenError, NoDeviceError
from . import values

OpenDevice = Callable[[str | None, int], Device]  # (backend or None for the first that works, index) -> the GPU

log = logging.getLogger(__name__)

EXAMPLES = "examples:"
# The units a library keyword ends in where its flag's name does not say it (--max-time: max_time_s).
UNIT_SUFFIXES = ("", "_s", "_us", "_bytes")
# The profile shown without a GPU when --profile is not given: --backend's vendor's, else the installed bindings'.
DEFAULT_PROFILES = {"cuda": "h200", "hip": "mi300x"}

_MISSING_VALUE = re.compile(r"argument (\S+): expected one argument")
_ARGUMENT = re.compile(r"argument (\S+): (.*)", re.DOTALL)
_NUMBER = re.compile(r"-\d[\d.e+-]*")
TYPED_LENGTH = 80  # a value typed longer is shown by its start in a message
# A value as the library shows it after `keyword=`: quoted, bracketed, or a word.
_SHOWN = r"""(?:'[^']*'|"[^"]*"|\([^)]*\)|\[[^\]]*\]|[^\s:,;)]+)"""


@dataclass(frozen=True)
class FlagValue:
    """What one flag gave the library: `flag` ('--max-time'), whether it is a `switch` (takes no value),
    the `value` as parsed, and the `text` as typed (None where the flag was not on the command line)."""
    flag: str
    switch: bool
    value: object
    text: str | None

    def words(self, shown: str, element: str | None) -> str:
        """The flag for `keyword=shown` (`keyword[element]=shown` for one number of a list) in a library message:
        with the text as typed where `shown` is the value the flag gave, else with `shown` as a flag takes it
        (a value the message suggests, or the default the library resolved)."""
        if self.switch:
            return self.flag
        return self.as_given(shown, element) or f"{self.flag} {_as_typed(shown)}"

    def as_given(self, shown: str, element: str | None) -> str | None:
        """The flag and its text as typed where `shown` is the value (or its number `element`) the flag gave;
        else None."""
        given = self.value
        if element is not None and isinstance(given, (list, tuple)) and int(element) < len(given):
            given = given[int(element)]
        if self.text is None or not _shows(shown, given):
            return None
        return f"{self.flag} {typed(self.text)}"


def typed(text: str) -> str:
    """`text` as the shell would take it back (quoted where it must be); past TYPED_LENGTH characters, its
    start and '...'; one holding a line break or another unprintable character as Python writes it, so the
    message stays one line."""
    if not text.isprintable():
        return show(text)
    return shlex.quote(text) if len(text) <= TYPED_LENGTH else f"{shlex.quote(text[:40])}..."


def _literal(shown: str) -> object:
    """The Python value `shown` spells, or `shown` itself where it spells none ('nan', a word)."""
    try:
        return ast.literal_eval(shown)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return shown


def _shows(shown: str, value: object) -> bool:
    """Whether a message's `shown` is `value` (4.0 is 4: the library may have made a float of it)."""
    if shown in (show(value), repr(value), str(value)):
        return True
    try:
        return bool(_literal(shown) == value)
    except (TypeError, ValueError):  # a numpy array compared, or the like
        return False


def _as_typed(shown: str) -> str:
    """A value as the library shows it ('warm', (64, 4)) as a flag takes it (warm, 64,4)."""
    value = _literal(shown)
    if isinstance(value, str):
        return typed(value)
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return shown


def in_flag_words(message: str, flags: Mapping[str, FlagValue]) -> str:
    """`message`, a library's, with each `keyword=value` of `flags` (by keyword) named as the command line
    names it (`--max-time -1`, `--cache warm`, `--energy`), and each `keyword value:` whose value is the one the
    flag gave (`ptx_version -1: ...`); a keyword within a longer name (`launches[0].grid`, `--best=`) is the
    library's own and stays."""
    if not flags:
        return message
    keywords = "|".join(sorted(map(re.escape, flags), key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w.\[-])({keywords})(?:\[(\d+)\])?(?:=({_SHOWN})| ({_SHOWN})(?=:))")

    def named(m: re.Match[str]) -> str:
        flag = flags[m[1]]
        if m[3] is not None:
            return flag.words(m[3], m[2])
        return flag.as_given(m[4], m[2]) or m[0]
    return pattern.sub(named, message)


def _name(action: argparse.Action) -> str:
    """How the user names `action`: its long flag (--output), else its flag, else its metavar (COMMAND)."""
    flags = action.option_strings
    if flags:
        return next((f for f in flags if f.startswith("--")), flags[0])
    return str(action.metavar or action.dest)


class Parser(argparse.ArgumentParser):
    """argparse's parser, saying what is wrong in the user's words, in one line. The subcommands' parsers are
    of this class too (add_subparsers makes them so).

    - `add_argument(..., keyword=K)`: the library keyword the flag's value reaches (default: its dest, with
      or without a unit suffix, UNIT_SUFFIXES); `set_defaults(handler=...)` runs the handler so that its
      BenchError or CodegenError names each keyword it holds as the flag, with the value as typed
      (`in_flag_words`), and no GPU is a line whose details -v gives (`no_gpu_line`).
    - A usage error (a value not of the flag's form, not one of its choices, an unknown option, a missing
      one) is one line, `PROG: FLAG VALUE: what was expected (PROG -h for help)`, exit 2; a near-miss
      option or choice gets `did you mean ...?`; the usage block only with -h.
    - "expected one argument" says how to pass a value that starts with '-' (argparse reads
      `--compile-option -DN=4` as two options): written with '=', `--compile-option=-DN=4` (a short option's
      attached, `-o-x`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.keywords: dict[str, argparse.Action] = {}  # library keyword -> the flag that feeds it
        self.written: dict[str, str] = {}  # dest -> the text its flag was last given on the command line
        self._words: list[str] = []  # the command line, for error() to look a value up in
        super().__init__(*args, **kwargs)  # which adds -h

    def add_argument(self, *args: Any, keyword: str | None = None, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.option_strings:
            for name in (keyword,) if keyword else (action.dest + unit for unit in UNIT_SUFFIXES):
                self.keywords[name] = action
        return action

    def set_defaults(self, **kwargs: Any) -> None:
        if "handler" in kwargs:
            kwargs["handler"] = functools.partial(self._run_handler, kwargs["handler"])
        super().set_defaults(**kwargs)

    def _run_handler(self, handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
        """handler(args); its BenchError or CodegenError in the flags' words, a NoGpuFound's reasons logged (-v
        shows them)."""
        try:
            return handler(args)
        except (BenchError, CodegenError) as e:  # bad input, and a value the code generator refuses
            e.args = (in_flag_words(str(e), self.flag_values(args)),)  # the same error, main()'s exit status
            raise
        except NoGpuFound as e:
            raise NoDeviceError(no_gpu_line(e, args.verbose)) from None

    def flag_values(self, args: argparse.Namespace) -> dict[str, FlagValue]:
        """By library keyword, what each flag gave it: those that gave a value (the command line's or a
        default), so a keyword a file gave (a chain's grid, --grid not given) is not named as a flag."""
        flags = {}
        for keyword, action in self.keywords.items():
            value = getattr(args, action.dest, None)
            if value is not None:
                flags[keyword] = FlagValue(_name(action), action.nargs == 0, value, self.written.get(action.dest))
        return flags

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._words = list(sys.argv[1:] if args is None else args)
        self.written = {}
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:  # refused here, by the parser whose options they miss, so the suggestion is among its own
            self.error(self._unrecognized(extras))
        return parsed, extras

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        if action.option_strings:
            self.written[action.dest] = " ".join(arg_strings)
        return super()._get_values(action, arg_strings)

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as e:  # the converter's words, after the flag and the text as typed
            raise argparse.ArgumentError(None, f"{_name(action)} {typed(arg_string)}: {e.message}") from None

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            choices = [str(choice) for choice in action.choices]
            raise argparse.ArgumentError(None, f"{_name(action)} {typed(str(value))}: expected one of "
                                               f"{', '.join(choices)}{_did_you_mean(str(value), choices)}")

    def _unrecognized(self, extras: list[str]) -> str:
        """What is wrong with the words no option took: the first unknown option (and the known one it
        is near), else the arguments too many."""
        unknown = [word.split("=", 1)[0] for word in extras if word.startswith("-") and not _NUMBER.fullmatch(word)]
        if unknown:
            known = [flag for action in self._actions for flag in action.option_strings]
            return f"{unknown[0]}: no such option{_did_you_mean(unknown[0], known)}"
        return f"{' '.join(map(typed, extras))}: {'an argument' if len(extras) == 1 else 'arguments'} too many"

    def error(self, message: str) -> NoReturn:
        missing = _MISSING_VALUE.fullmatch(message)
        if missing:
            names = missing.group(1).split("/")
            long = next((name for name in names if name.startswith("--")), None)
            for at, word in enumerate(self._words[:-1]):
                value = self._words[at + 1]
                if word in names and value.startswith("-"):
                    written = f"{long}={value}" if long else f"{word}{value}"  # a short option takes it attached
                    message += f"; a value that starts with '-' is written with '=': {written} (not {word} {value})"
                    break
        argument = _ARGUMENT.fullmatch(message)
        if argument:  # argparse's "argument --flag: ...": the flag first, as the other lines have it
            message = f"{argument[1]}: {argument[2]}"
        self.exit(2, f"{self.prog}: {message} ({self.prog} -h for help)\n")


def _did_you_mean(word: str, known: list[str]) -> str:
    """'; did you mean X?' for the one of `known` nearest `word`, where one is near (difflib's ratio >= 0.6)."""
    near = difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {near[0]}?" if near else ""


def no_gpu_line(e: NoDeviceError, verbose: int) -> str:
    """`e`'s one line. Each backend's whole reason, where `e` holds them (NoGpuFound), is logged: -v shows
    them, and without -v the line says so."""
    if not isinstance(e, NoGpuFound):
        return str(e)
    for backend, reason in e.reasons.items():
        log.info("%s: %s", backend, reason)
    return str(e) if verbose else f"{e} (-v says more)"


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
        return f"{text} (default: %(default)s)"


def add_command(commands: argparse._SubParsersAction, name: str, summary: str, description: str,
                examples: list[str]) -> Parser:
    """The parser of command `name`: `summary` for `pyhipbench --help`'s list, `description` (and the
    summary) atop its own help, `examples` (command lines) below its options."""
    epilog = EXAMPLES + "\n" + "\n".join(f"  {line}" for line in examples)
    parser: Parser = commands.add_parser(name, help=summary, epilog=epilog, formatter_class=HelpFormatter,
                                         description=f"{summary[0].upper()}{summary[1:]}. {description}")
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
    parser.add_argument("--device", type=values.integer, default=0, metavar="N", keyword="index",
                        help="the GPU's index within its backend")


def add_profile_option(parser: argparse.ArgumentParser, shown: str) -> None:
    """--profile: the device whose `shown` (what the command shows of it) is shown when no GPU is present."""
    parser.add_argument("--profile", choices=sorted(archs.PROFILES),
                        help=f"the device to {shown} when no GPU is present (default: {DEFAULT_PROFILES['hip']} "
                             f"with --backend hip, {DEFAULT_PROFILES['cuda']} with --backend cuda; without "
                             "--backend, the vendor whose Python bindings are installed, "
                             f"{DEFAULT_PROFILES['cuda']} where both or neither are)")


def chosen_profile(args: argparse.Namespace) -> str:
    """--profile, or the default for the vendor: --backend's, else the one backend whose bindings are installed
    (where both or neither are, cuda's). BenchError for a --profile of the other vendor than --backend."""
    if args.profile is not None:
        vendor = archs.PROFILES[args.profile].backend
        if args.backend is not None and vendor != args.backend:
            fitting = [name for name, profile in sorted(archs.PROFILES.items()) if profile.backend == args.backend]
            raise BenchError(f"--profile {args.profile} with --backend {args.backend}: {args.profile} is a "
                             f"{vendor} device; expected one of {', '.join(fitting)} with --backend {args.backend}")
        return str(args.profile)
    backend = args.backend
    if backend is None:
        installed = installed_backends()
        backend = installed[0] if len(installed) == 1 else "cuda"
    return DEFAULT_PROFILES[backend]
