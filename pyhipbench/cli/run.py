"""`pyhipbench run`: compile CUDA/HIP C++ or LLVM IR (or load a code object) and time a kernel."""
from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Callable

import numpy as np

from .._codeobject import image as codeobject
from .._device.backends import BACKEND_NAMES
from .._device.device import Device
from .._launch.arg_spec import DTYPES, FILLS, materialize
from .._launch.launch_config import dims
from .._measure.bench import bench_with
from .._measure.cache import CACHE_STATES
from .._measure.options import MAX_LAUNCHES, BenchOptions
from .._measure.report import render
from .._measure.timers import TIMERS
from ..codegen import compile_for_device, ir
from ..codegen.source import SOURCE_LANGUAGES, CompiledSource, compile_source
from ..errors import BenchError
from . import values
from .compile import describe
from .files import check_output, read_input, write_or_print

NPY_MAGIC = b"\x93NUMPY"  # what every .npy file starts with
ARG_HELP = ("a kernel argument, in order: TYPE:VALUE for a scalar (int64:1048576, uint32:0xff, float32:2.5), "
            "array:DTYPE:COUNT[:FILL] for a device array copied for every rotated set, "
            "shared:DTYPE:COUNT[:FILL] for one all sets use as is; TYPE and DTYPE one of "
            f"{', '.join(DTYPES)}; FILL one of {', '.join(FILLS)} (default zeros; random: seed 0, floats "
            "uniform in [0, 1), integers uniform in [0, 127])")


def add_parser(commands: argparse._SubParsersAction, open_device: Callable[[str | None], Device]) -> None:
    parser = commands.add_parser("run", help="compile LLVM IR (or load a code object) and time a kernel")
    parser.add_argument("input", type=Path, help="CUDA C++ (.cu, compiled by NVRTC) or HIP C++ (.hip, by hiprtc) "
                                                 "source, or LLVM IR (text or bitcode) or a code object (PTX, "
                                                 "cubin, fatbin, HSACO), told apart by content")
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--grid", type=values.dims, required=True, help="blocks, e.g. 1024 or 64,4")
    parser.add_argument("--block", type=values.dims, required=True, help="threads per block, e.g. 256")
    parser.add_argument("--arg", type=values.kernel_arg, action="append", default=[], help=ARG_HELP)
    parser.add_argument("--shared-bytes", type=values.integer, default=0, help="dynamic shared memory, bytes")
    parser.add_argument("--timer", choices=TIMERS + ("auto",), default="auto",
                        help="cupti (kernel time, NVIDIA), events, graph, batched; auto: cupti where it works, "
                             "else events")
    parser.add_argument("--cache", choices=CACHE_STATES + ("auto",), default="auto",
                        help="cache state at each timed launch; auto: clean-cold (warm with --rotate 1, "
                             "dirty-cold with --rotate N > 1)")
    parser.add_argument("--precision", type=values.fraction, default=0.01,
                        help="stop when the median's 95%% CI is within this fraction (default 0.01 = 1%%)")
    parser.add_argument("--max-time", type=values.number, default=1.0,
                        help="wall-time cap of the measurement, warm-up included, s")
    parser.add_argument("--iterations", type=values.integer,
                        help=f"take exactly this many samples (1 to {MAX_LAUNCHES}) instead of --precision")
    parser.add_argument("--warmup", type=values.integer,
                        help="untimed samples first (default: until the times settle)")
    parser.add_argument("--slower-than", type=values.number, metavar="US",
                        help="racing: stop (reason 'slower') once the median's 95%% CI lies wholly above this "
                             "many µs, e.g. the best candidate's CI upper bound so far")
    parser.add_argument("--rotate", type=values.count_or_word, default="auto",
                        help="dirty-cold's argument-set count: 'auto' or a number (1 = warm)")
    parser.add_argument("--expect", type=values.expect, action="append", default=[], metavar="N=FILE.npy",
                        help="check argument N (its --arg position, 0 for the first) after one untimed launch on "
                             "every argument set against this .npy file (same shape) before timing; repeatable")
    parser.add_argument("--atol", type=values.number, help="--expect's absolute tolerance (default 1e-8)")
    parser.add_argument("--rtol", type=values.number, help="--expect's relative tolerance (default 1e-5)")
    parser.add_argument("--no-icache-flush", action="store_true",
                        help="AMD, LLVM IR input only: compile without the flush")
    parser.add_argument("--compile-option", action="append", default=[], metavar="OPT",
                        help="CUDA/HIP C++ source only: an NVRTC / hiprtc option, repeatable, written with = "
                             "(--compile-option=-DN=4 --compile-option=-std=c++17); the file's folder is on the "
                             "include path")
    parser.add_argument("--backend", choices=BACKEND_NAMES)
    parser.add_argument("--out", type=Path, action="append", default=[],
                        help="write the result here, as JSON, CSV or a markdown table by the suffix "
                             "(.json, .csv, .md); repeatable; checked before running")
    parser.set_defaults(handler=functools.partial(run, open_device=open_device))


def run(args: argparse.Namespace, open_device: Callable[[str | None], Device]) -> int:
    # The measurement's options and the launch's dimensions first, checked by the library (bench()'s
    # checks, its messages) before a file is read, a device opened or anything compiled.
    options = BenchOptions(timer=args.timer, cache=args.cache, precision=args.precision, max_time_s=args.max_time,
                           iterations=args.iterations, warmup=args.warmup, rotate=args.rotate,
                           slower_than_us=args.slower_than)
    grid, block = dims("grid", args.grid), dims("block", args.block)  # the device's own limits come later
    for path in args.out:
        check_output("--out", path, args.input)
        render(path, [])  # an unknown format is refused before any work
    expected = load_expected(args.expect)
    # Flags that cannot apply are refused, not ignored, in the flags' own terms.
    if not expected and (args.atol is not None or args.rtol is not None):
        raise BenchError("--atol and --rtol apply to --expect's files; expected --expect N=FILE.npy with them")
    kind, source = read_input(args.input)
    if kind != "ir" and args.no_icache_flush:
        what = f"already a {codeobject.detect_format(source)} code object" if kind == "code object" \
            else "a C++ source file"
        raise BenchError(f"--no-icache-flush applies to LLVM IR input only; {args.input} is {what}")
    if kind != "source" and args.compile_option:
        raise BenchError(f"--compile-option applies to CUDA/HIP C++ source (.cu, .hip) only; {args.input} "
                         "is not one")
    module = ir.parse(source, name=str(args.input)) if kind == "ir" else None
    device = open_device(args.backend)
    kernel_name = args.kernel
    if module is not None:
        source = compile_for_device(module, device, icache_flush=False if args.no_icache_flush else None)
        print(describe(source))
    elif kind == "source":
        source, kernel_name = _compile_source(args, source, device)
    kernel = device.load_module(source).kernel(kernel_name)
    kernel_args = [materialize(spec, device) for spec in args.arg]
    result = bench_with(kernel, grid, block, kernel_args, options, shared_bytes=args.shared_bytes,
                        expect=expected or None, atol=args.atol, rtol=args.rtol)
    print(result.summary())
    written = [write_or_print("run", path, render(path, [result.to_dict()])) for path in args.out]
    return 0 if all(written) else 1


def _compile_source(args: argparse.Namespace, text: str, device: Device) -> tuple[CompiledSource, str]:
    """(code object, the kernel's lowered name) for a .cu / .hip file, compiled for `device`."""
    # SOURCE_LANGUAGES names the backend whose runtime compiler takes each suffix.
    language, backend = SOURCE_LANGUAGES[args.input.suffix], device.backend.name
    if language != backend:
        wanted = " or ".join(suffix for suffix, name in SOURCE_LANGUAGES.items() if name == backend)
        raise BenchError(f"{args.input} is {language.upper()} C++ (by its suffix), but the device is a "
                         f"{backend} one; expected a {wanted} file")
    # --kernel is a name expression, so a template instance ("scale<float>") names its kernel too.
    code = compile_source(device, text, name_expressions=[args.kernel], name=args.input.name,
                          options=[f"-I{args.input.parent}", *args.compile_option])
    print(describe(code))
    return code, code.lowered_names[args.kernel]


def load_expected(expected: list[tuple[int, Path]]) -> dict[int, np.ndarray]:
    """--expect's reference arrays by argument position, read before anything runs (bench_with
    checks each against its argument: the position, the shape)."""
    references: dict[int, np.ndarray] = {}
    for index, path in expected:
        if index in references:  # a dict holds one per position: a second would silently replace the first
            raise BenchError(f"--expect {index}=...: argument {index} has two expected files; expected one")
        with open(path, "rb") as file:
            if file.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise BenchError(f"--expect {index}={path}: not a .npy file (it does not start with "
                                 f"{NPY_MAGIC!r}); expected one written by numpy.save")
            file.seek(0)
            try:
                references[index] = np.lib.format.read_array(file, allow_pickle=False)
            except ValueError as e:  # a damaged header, or an array of Python objects
                raise BenchError(f"--expect {index}={path}: {e}; expected a .npy file of numbers") from None
    return references
