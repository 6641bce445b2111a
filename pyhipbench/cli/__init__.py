"""The `pyhipbench` command: info, demo, compile, run, sweep, compare, plot.

A module per command holds its options and what it does; `values` turns
option text into values, and the library checks them (a value is refused
with the same message from the command line as from Python, naming the flag
and the text typed where Python names the keyword: command.Parser).

`main()` is the one place errors become messages: a pyhipbench.Error (exit 1;
BenchError, bad input found before anything ran: exit 2) or an OSError
(exit 1) prints one line naming what was wrong; the parser refuses a
malformed option in one line too (exit 2). Bad input never gives a traceback. Ctrl-C (SIGINT) prints
one line saying so (for a sweep: what the database holds, and the command
that resumes it) and exits 130, the shell's code for SIGINT; SIGTERM does
the same and exits 143. A measurement stops within a second of either, even
inside the C++ core (pyhipbench/interrupt.hpp); where the GPU still runs a
kernel that does not return, the line says the device was given up and the
process exits at once, without the clean-up that would wait for that kernel.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from .. import _cpp as cpp
from .._device.device import Device, NoGpuFound, no_gpu_found
from ..errors import BenchError, Error, NoDeviceError
from . import compare, demo, info, plot, run, sweep
from . import compile as compile_
from .command import EXAMPLES, HelpFormatter, Parser, add_verbosity, configure_logging


def _open_device(backend: str | None, index: int = 0) -> Device:
    """The GPU a command runs on. main() hands it to the commands that need one, so a test or the
    bad-input census can give them a fake device by replacing this function. No GPU is a NoGpuFound, the
    backend asked for (--backend) included: its reason in a line, the whole of it with -v."""
    try:
        return Device(backend, index)
    except NoGpuFound:
        raise
    except NoDeviceError as e:  # the backend asked for, whose own error Device() raises
        raise no_gpu_found([(str(backend), e)]) from None


def samples_dir() -> Path:
    """The folder of the sample results measured on an NVIDIA GPU (README.md there says which, and how):
    reports and a sweep database to try compare and plot on without a GPU."""
    return Path(__file__).resolve().parent.parent / "samples"


class _PrintInstallPath(argparse.Action):
    """Prints a folder of the installed package and exits, as --version prints the version."""

    def __init__(self, option_strings, dest, locate, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.locate = locate

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        try:
            print(self.locate())
        except Error as e:
            parser.exit(1, f"pyhipbench: {e}\n")
        parser.exit()


def build_parser() -> Parser:
    parser = Parser(prog="pyhipbench", formatter_class=HelpFormatter,
                    description="Time GPU kernels as autotuners need them timed: kernel time, the cache state "
                                "chosen and named, no Python in the timed loop.",
                    epilog=f"{EXAMPLES}\n"
                           "  pyhipbench demo                      # time the bundled kernels (a plan without a GPU)\n"
                           "  pyhipbench info --device 1           # the GPU, its caches and memory\n"
                           "  pyhipbench run k.ptx --kernel k --grid 1024 --block 256 --arg ... --out r.json\n"
                           "  pyhipbench compare before.json r.json\n"
                           "  ls $(pyhipbench --samples-dir)       # sample results to compare and plot without a GPU\n"
                           "  pyhipbench COMMAND --help            # a command's options and examples")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    add_verbosity(parser, None)
    parser.add_argument("--cmake-dir", action=_PrintInstallPath, locate=cpp.cmake_dir,
                        help="print the folder of the C++ core's CMake package (pyhipbench_DIR) and exit")
    parser.add_argument("--include-dir", action=_PrintInstallPath, locate=cpp.include_dir,
                        help="print the folder of the C++ core's headers and exit")
    parser.add_argument("--samples-dir", action=_PrintInstallPath, locate=samples_dir,
                        help="print the folder of the sample results (reports and a sweep database measured on "
                             "an NVIDIA GPU) and exit: compare and plot them without a GPU")
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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt, so the same clean-up runs."""


def _raise_terminated(signum: int, frame: Any) -> NoReturn:
    raise Terminated("terminated (SIGTERM)")


def main(argv: list[str] | None = None) -> int:
    """Runs the command; its exit status. Argparse exits 2 itself on malformed options."""
    # signal.signal works on the main thread only; main() called from another one keeps SIGTERM's default.
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main_thread else None
    try:
        return _run(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupted(prefix: str, e: KeyboardInterrupt) -> int:
    """The line for an interrupt and its exit status, 130 (SIGINT) or 143 (SIGTERM). Where the device was given
    up (a kernel that never returned), the process ends here: clean-up would wait for that kernel."""
    status = 143 if isinstance(e, Terminated) else 130
    given_up = getattr(e, "device_abandoned", False)
    notes = getattr(e, "__notes__", ())
    print(f"{prefix} {notes[-1] if given_up and notes else str(e) or 'interrupted'}", file=sys.stderr)
    if given_up:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _run(argv: list[str] | None) -> int:
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
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: the command has cleaned up (a sweep: SweepInterrupted says how)
        return _interrupted(prefix, e)
