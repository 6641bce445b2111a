"""The `pyhipbench` command: info, demo, compile, run, sweep, compare.

A module per command holds its options and what it does; `values` turns
option text into values, and the library checks them (a value is refused
with the same message from the command line as from Python).

`main()` is the one place errors become messages: a pyhipbench.Error (exit 1;
BenchError, bad input found before anything ran: exit 2) or an OSError
(exit 1) prints one line naming what was wrong; argparse refuses malformed
options (exit 2). Bad input never gives a traceback.
"""
from __future__ import annotations

import argparse
import sys

from .. import __version__
from .. import _cpp as cpp
from .._device.device import Device
from ..errors import BenchError, Error
from . import compare, demo, info, run, sweep
from . import compile as compile_


def _open_device(backend: str | None) -> Device:
    """The GPU a command runs on. main() hands it to the commands that need one, so a test or the
    bad-input census can give them a fake device by replacing this function."""
    return Device(backend)


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyhipbench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--cmake-dir", action=_PrintInstallPath, locate=cpp.cmake_dir,
                        help="print the folder of the C++ core's CMake package (pyhipbench_DIR) and exit")
    parser.add_argument("--include-dir", action=_PrintInstallPath, locate=cpp.include_dir,
                        help="print the folder of the C++ core's headers and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    # _open_device is read now, at each main() call, so a replacement made before the call is used.
    info.add_parser(commands, _open_device)
    demo.add_parser(commands, _open_device)
    compile_.add_parser(commands)
    run.add_parser(commands, _open_device)
    sweep.add_parser(commands)
    compare.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command; its exit status. Argparse exits 2 itself on malformed options."""
    args = build_parser().parse_args(argv)
    prefix = f"pyhipbench {args.command}:"
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
