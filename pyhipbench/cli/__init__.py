"""The `pyhipbench` command: info, demo, compile, run, sweep, compare, plot.

A module per command holds its options and what it does; `values` turns
option text into values, and the library checks them (a value is refused
with the same message from the command line as from Python).

`main()` is the one place errors become messages: a pyhipbench.Error (exit 1;
BenchError, bad input found before anything ran: exit 2) or an OSError
(exit 1) prints one line naming what was wrong; argparse refuses malformed
options (exit 2). Bad input never gives a traceback. Ctrl-C (SIGINT) prints
one line saying so (for a sweep: what the database holds, and the command
that resumes it) and exits 130, the shell's code for SIGINT.
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Any, NoReturn

from .. import __version__
from .. import _cpp as cpp
from .._device.device import Device
from ..errors import BenchError, Error
from . import compare, demo, info, plot, run, sweep
from . import compile as compile_
from .command import EXAMPLES, HelpFormatter, add_verbosity, configure_logging


def _open_device(backend: str | None, index: int = 0) -> Device:
    """The GPU a command runs on. main() hands it to the commands that need one, so a test or the
    bad-input census can give them a fake device by replacing this function."""
    return Device(backend, index)


class _PrintInstallPath(argparse.Action):
    """Prints a folder of the installed C++ core and exits, as --version prints the version."""

    def __init__(self, option_strings, dest, locate, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.locate = locate

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        try:
            print(self.locate())
        except Error as e:
            parser.exit(1, f"pyhipbench: {e}\n")
        parser.exit()


_MISSING_VALUE = re.compile(r"argument (\S+): expected one argument")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose "expected one argument" says how to pass a value that starts with '-'
    (argparse reads `--compile-option -DN=4` as two options): written with '=', `--compile-option=-DN=4`
    (a short option's attached, `-o-x`). The subcommands' parsers are of this class too (add_subparsers
    makes them so)."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._words = list(sys.argv[1:] if args is None else args)  # what error() looks the value up in
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        missing = _MISSING_VALUE.fullmatch(message)
        if missing:
            names, words = missing.group(1).split("/"), getattr(self, "_words", [])
            long = next((name for name in names if name.startswith("--")), None)
            for at, word in enumerate(words[:-1]):
                value = words[at + 1]
                if word in names and value.startswith("-"):
                    written = f"{long}={value}" if long else f"{word}{value}"  # a short option takes it attached
                    message += f"; a value that starts with '-' is written with '=': {written} (not {word} {value})"
                    break
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="pyhipbench", formatter_class=HelpFormatter,
                     description="Time GPU kernels as autotuners need them timed: kernel time, the cache state "
                                 "chosen and named, no Python in the timed loop.",
                     epilog=f"{EXAMPLES}\n"
                            "  pyhipbench demo                      # time the bundled kernels (a plan without a GPU)\n"
                            "  pyhipbench info --device 1           # the GPU, its caches and memory\n"
                            "  pyhipbench run k.ptx --kernel k --grid 1024 --block 256 --arg ... --out r.json\n"
                            "  pyhipbench compare before.json r.json\n"
                            "  pyhipbench COMMAND --help            # a command's options and examples")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_verbosity(parser, None)
    parser.add_argument("--cmake-dir", action=_PrintInstallPath, locate=cpp.cmake_dir,
                        help="print the folder of the C++ core's CMake package (pyhipbench_DIR) and exit")
    parser.add_argument("--include-dir", action=_PrintInstallPath, locate=cpp.include_dir,
                        help="print the folder of the C++ core's headers and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # _open_device is read now, at each main() call, so a replacement made before the call is used.
    info.add_parser(commands, _open_device)
    demo.add_parser(commands, _open_device)
    compile_.add_parser(commands)
    run.add_parser(commands, _open_device)
    sweep.add_parser(commands)
    compare.add_parser(commands)
    plot.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command; its exit status. Argparse exits 2 itself on malformed options."""
    args = build_parser().parse_args(argv)
    prefix = f"pyhipbench {args.command}:"
    if args.quiet and args.verbose:
        print(f"{prefix} -q with -v: expected one of them (-q says only errors, -v says more)", file=sys.stderr)
        return 2
    configure_logging(args.verbose, args.quiet)
    try:
        return args.handler(args)
    except BenchError as e:  # bad input: nothing was launched
        print(f"{prefix} {e}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"{prefix} {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a file the user named: missing, a directory, unreadable, disk full
        where = f"{e.filename}: " if e.filename is not None else ""
        print(f"{prefix} {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:  # Ctrl-C: the command has cleaned up (a sweep: its SweepInterrupted says how)
        print(f"{prefix} {e}" if str(e) else f"{prefix} interrupted", file=sys.stderr)
        return 130
