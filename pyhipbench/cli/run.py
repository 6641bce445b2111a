"""`pyhipbench run`: compile CUDA/HIP C++ or LLVM IR (or load a code object) and time a kernel, or a chain.

The input is a source as a sweep's (pyhipbench._sources: the same kinds, made from the same JSON by the
registry, compiled the same way). A chain (`--chain FILE`) is a sweep candidate's launches
(pyhipbench._sources.chain: the same schema, checked by the same code): several of the input's kernels
run in order as one sample, an argument `ref:LAUNCH.ARG` the very argument of an earlier launch, or
"module" for every kernel of the input's module.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .._codeobject import image as codeobject
from .._device.device import Device
from .._launch.arg_spec import DTYPES, FILLS, REF_FORM, materialize, materialize_chain
from .._launch.launch import Launch, module_launches
from .._measure.bench import bench_with
from .._measure.expect import checked_tolerances
from .._progress import elapsed
from .._results.environment import environment, finish
from .._results.report import check_format, render, render_as
from .._sources import SOURCE_KINDS, CodeObjectSource, CompileTarget, IRSource, Source, source_from_json
from .._sources.chain import LAUNCH_FIELDS, MODULE, Launches, checked_chain, launch_fields
from .._textfile import parse_json, parse_yaml, read_text
from ..codegen import ir
from ..codegen.source import SOURCE_LANGUAGES
from ..errors import BenchError
from . import values
from .command import OpenDevice, add_command, add_device_options
from .compile import describe
from .files import STDOUT, Stdout, check_output, kept_stdout, read_input, write_reports
from .options import add_option_flags, options_from

NPY_MAGIC = b"\x93NUMPY"  # what every .npy file starts with
ARG_HELP = ("a kernel argument, in order: TYPE:VALUE for a scalar (int64:1048576, uint32:0xff, float32:2.5), "
            "array:DTYPE:COUNT[:FILL] for a device array copied for every rotated set, "
            "shared:DTYPE:COUNT[:FILL] for one all sets use as is; TYPE and DTYPE one of "
            f"{', '.join(DTYPES)}; FILL one of {', '.join(FILLS)} (default zeros; random: seed 0, floats "
            "uniform in [0, 1), integers uniform in [0, 127])")
CHAIN_HELP = ("time a chain of the input's kernels, run in order as one sample, from a JSON (or YAML) file "
              "holding a sweep candidate's launch fields: {\"launches\": [{\"kernel\": K, \"grid\": G, "
              "\"block\": B, \"shared_bytes\": S, \"args\": [...]}, ...]} (a launch's grid, block, "
              "shared_bytes and args default to the file's own, or to --grid, --block, --shared-bytes, --arg), "
              f"an arg {REF_FORM} the very argument ARG of the earlier launch LAUNCH (an array: the same buffer); "
              "or {\"launches\": \"module\", \"grid\": ..., \"block\": ..., \"args\": [...]}: every kernel "
              "of the module in name order; instead of --kernel")
CHAIN_FILE_FIELDS = ("launches", "grid", "block", "shared_bytes", "args")
# auto first, then the timers from the most faithful (docs/measurement.md#timers)
# read_input's kinds told by content -> the source kind each is (C++ source is told by its suffix).
INPUT_KINDS = {"code object": CodeObjectSource.kind, "ir": IRSource.kind}
FLAGS = {"grid": "--grid", "block": "--block", "shared_bytes": "--shared-bytes", "args": "--arg"}


def add_parser(commands: argparse._SubParsersAction, open_device: OpenDevice) -> None:
    parser = add_command(
        commands, "run", "compile CUDA/HIP C++ or LLVM IR (or load a code object) and time a kernel, or a chain "
        "of kernels (--chain)",
        "The kernel is launched with the --arg arguments in the cache state asked for until the median's 95 % "
        "CI is within --precision; one line sums the result up, and --out writes it in full.",
        ["pyhipbench run copy.ptx --kernel copy --grid 1024 --block 256 --arg array:float32:262144 "
         "--arg array:float32:262144 --arg int64:262144 --out r.json",
         "pyhipbench run gemm.cu --kernel gemm --grid 64,64 --block 16,16 --arg ... --cache warm",
         "pyhipbench run splitk.hsaco --chain splitk.json --out -    # the JSON report on stdout"])
    parser.add_argument("input", type=Path, help="CUDA C++ (.cu, compiled by NVRTC) or HIP C++ (.hip, by hiprtc) "
                                                 "source, or LLVM IR (text or bitcode) or a code object (PTX, "
                                                 "cubin, fatbin, HSACO), told apart by content")
    parser.add_argument("--kernel", help="the kernel's name (required, unless --chain)")
    parser.add_argument("--chain", type=Path, metavar="FILE", help=CHAIN_HELP)
    parser.add_argument("--grid", type=values.dims, help="blocks, e.g. 1024 or 64,4 (required, unless --chain)")
    parser.add_argument("--block", type=values.dims,
                        help="threads per block, e.g. 256 (required, unless --chain)")
    parser.add_argument("--arg", type=values.kernel_arg, action="append", default=[], help=ARG_HELP)
    parser.add_argument("--shared-bytes", type=values.integer, help="dynamic shared memory, bytes (default 0)")
    add_option_flags(parser)
    parser.add_argument("--expect", type=values.expect, action="append", default=[], metavar="N=FILE.npy",
                        keyword="expect key",  # Expectation's name for a position
                        help="check argument N (its --arg position, 0 for the first; with --chain, its position "
                             "in the last launch's args) after one untimed launch (chain) on every argument set "
                             "against this .npy file (same shape) before timing; repeatable")
    parser.add_argument("--atol", type=values.number, help="--expect's absolute tolerance (default 1e-8)")
    parser.add_argument("--rtol", type=values.number, help="--expect's relative tolerance (default 1e-5)")
    parser.add_argument("--no-icache-flush", action="store_true",
                        help="AMD, LLVM IR input only: compile without the flush")
    parser.add_argument("--compile-option", action="append", default=[], metavar="OPT",
                        help="CUDA/HIP C++ source only: an NVRTC / hiprtc option, repeatable, written with = "
                             "(--compile-option=-DN=4 --compile-option=-std=c++17); the file's folder is on the "
                             "include path")
    add_device_options(parser)
    parser.add_argument("--out", type=Path, action="append", default=[],
                        help="write the result here, as JSON, CSV or a markdown table by the suffix "
                             "(.json, .csv, .md), or '-' for stdout in --format; repeatable; checked before "
                             "running")
    parser.add_argument("--format", choices=("json", "csv", "md"),
                        help="the format of --out - (default json; a file's format comes from its suffix)")
    parser.set_defaults(handler=functools.partial(run, open_device=open_device), usage_error=parser.error)


def run(args: argparse.Namespace, open_device: OpenDevice) -> int:
    """The command: `measure`, with standard output kept (`kept_stdout`): the files are written whatever
    happens to it."""
    with kept_stdout() as stdout:
        return measure(args, open_device, stdout)


def measure(args: argparse.Namespace, open_device: OpenDevice, stdout: Stdout) -> int:
    """Times the kernel or chain `args` describe; prints its summary and writes each --out (`write_reports`)."""
    if args.chain is None:  # one kernel: --kernel, --grid and --block, as argparse would require them
        missing = [flag for flag, value in (("--kernel", args.kernel), ("--grid", args.grid),
                                            ("--block", args.block)) if value is None]
        if missing:
            args.usage_error(f"the following arguments are required: {', '.join(missing)} (or --chain FILE, "
                             "a chain of launches)")
    # The measurement's options and the launch's dimensions first, checked by the library (bench()'s
    # checks, its messages) before a file is read, a device opened or anything compiled.
    options = options_from(args)
    if args.chain is None:  # checked as a chain's launch is; the device's own limits come later
        checked = launch_fields(args.grid, args.block, args.shared_bytes or 0, args.arg)
        grid, block = checked["grid"], checked["block"]
    if args.format is not None and not any(str(path) == STDOUT for path in args.out):
        raise BenchError(f"--format {args.format}: it sets the format of --out - (stdout), and none is given; "
                         "expected --out - with it (a file's format comes from its suffix)")
    check_distinct(args.out)
    for path in args.out:
        if str(path) == STDOUT:
            continue
        check_output("--out", path, args.input)
        if args.chain is not None:
            check_output("--out", path, args.chain)
        check_format(path)  # an unknown format is refused before any work
    # With a report on stdout, stdout holds it alone (for a pipe): the lines for a person go to stderr.
    human = sys.stderr if any(str(path) == STDOUT for path in args.out) else sys.stdout
    chain, fields = read_chain(args) if args.chain is not None else (None, {})
    expected = load_expected(args.expect)
    # Flags that cannot apply are refused, not ignored, in the flags' own terms.
    if not expected and (args.atol is not None or args.rtol is not None):
        raise BenchError("--atol and --rtol apply to --expect's files; expected --expect N=FILE.npy with them")
    checked_tolerances(args.atol, args.rtol)
    kind, content = read_input(args.input)
    if kind != "ir" and args.no_icache_flush:
        what = f"already a {codeobject.detect_format(content)} code object" if kind == "code object" \
            else "a C++ source file"
        raise BenchError(f"--no-icache-flush applies to LLVM IR input only; {args.input} is {what}")
    if kind != "source" and args.compile_option:
        raise BenchError(f"--compile-option applies to CUDA/HIP C++ source (.cu, .hip) only; {args.input} "
                         "is not one")
    if kind == "ir":
        ir.parse(content, name=str(args.input))  # IR that does not parse is refused before a device is opened
    kernels = [args.kernel] if chain is None else [] if chain == MODULE else [launch.kernel for launch in chain]
    source = input_source(args, kind, list(dict.fromkeys(kernels)))
    device = open_device(args.backend, args.device)
    started = environment([device])
    if kind == "source":
        check_language(args.input, device)
    # What a compiler is told of the GPU; a code object, loaded as is, needs no driver query.
    target = CompileTarget(device.arch, device.backend.compile_driver_version() if source.needs_compiler else None)
    code = source.compile(target, ())
    if code.code_object is not None:
        print(describe(code.code_object), file=human)
    loaded = device.load_module(code.code_object or code.data)  # a CodeObject: the module records its target
    if chain is None:
        kernel_args = [materialize(spec, device) for spec in args.arg]
        launches = [Launch(loaded.kernel(code.kernel_name(args.kernel)), grid, block, kernel_args,
                           args.shared_bytes or 0)]
    elif chain == MODULE:
        launches = module_launches(loaded, fields["grid"], fields["block"],
                                   [materialize(spec, device) for spec in fields["args"]],
                                   shared_bytes=fields["shared_bytes"])
    else:
        made = materialize_chain([launch.args for launch in chain], device)
        launches = [Launch(loaded.kernel(code.kernel_name(launch.kernel)), launch.grid, launch.block,
                           launch_args, launch.shared_bytes) for launch, launch_args in zip(chain, made)]
    with elapsed(options.limit_s, "measuring"):
        result = bench_with(launches, options, expect=expected or None, atol=args.atol, rtol=args.rtol)
    print(result.summary(), file=human)
    env = finish(started)
    reports = [(path, render_as(f".{args.format or 'json'}", [result.to_dict()], env) if str(path) == STDOUT
                else render(path, [result.to_dict()], env)) for path in args.out]
    return write_reports("run", reports, human, stdout)


def check_distinct(outputs: list[Path]) -> None:
    """BenchError for an --out given twice (one file, however its path is written, or '-' twice): the second
    report would replace the first."""
    seen: dict[str, Path] = {}
    for path in outputs:
        key = STDOUT if str(path) == STDOUT else os.path.realpath(path)
        if key in seen:
            given = f"--out {path} twice" if str(seen[key]) == str(path) else f"--out {seen[key]} and --out {path}"
            what = "standard output" if key == STDOUT else "the same file"
            raise BenchError(f"{given}: both name {what}; expected each --out once")
        seen[key] = path


def read_chain(args: argparse.Namespace) -> tuple[Launches, dict]:
    """The chain --chain FILE describes: (its launches, checked, or MODULE; MODULE's grid, block,
    shared_bytes and args), with --grid, --block, --shared-bytes and --arg as the file's own fields.
    BenchError naming the file, the launch and the field, before any device is opened."""
    if args.kernel is not None:
        raise BenchError(f"--kernel {args.kernel} with --chain: the chain file names each launch's kernel; "
                         "expected one of --kernel and --chain")
    path, expected = args.chain, "a chain of launches"
    text = read_text(path, expected)  # OSError naming the file: main() reports it
    data = parse_yaml(text, str(path), expected) if path.suffix.lower() in (".yaml", ".yml") \
        else parse_json(text, str(path), expected)
    if isinstance(data, list):
        data = {"launches": data}
    if not isinstance(data, dict) or "launches" not in data:
        raise BenchError(f"{path}: expected an object with \"launches\" (a list of launches, or \"module\") and "
                         "optionally grid, block, shared_bytes, args; or the list of launches")
    unknown = sorted(set(data) - set(CHAIN_FILE_FIELDS))
    if unknown:
        raise BenchError(f"{path}: unknown field(s) {', '.join(map(repr, unknown))}; expected "
                         f"{', '.join(CHAIN_FILE_FIELDS)} (a launch's fields, {', '.join(LAUNCH_FIELDS)}, go in "
                         "its entry of launches)")
    flags = {"grid": args.grid, "block": args.block, "shared_bytes": args.shared_bytes, "args": args.arg or None}
    for name, value in flags.items():
        if value is not None and name in data:
            raise BenchError(f"{FLAGS[name]} and {path}'s {name}: both give the chain's {name}; expected one of them")
    fields = {name: data.get(name, value) for name, value in flags.items()}
    try:
        return checked_chain(data["launches"], fields["grid"], fields["block"],
                             0 if fields["shared_bytes"] is None else fields["shared_bytes"], fields["args"] or ())
    except BenchError as e:
        raise BenchError(f"{path}: {e}") from None


def input_source(args: argparse.Namespace, kind: str, kernels: list[str]) -> Source:
    """The input (`kind` as read_input tells it) as a source, made by the registry from the JSON a search
    space would describe it by, so checked and compiled as a sweep's: with --no-icache-flush for LLVM IR; a
    C++ file's kind by its suffix, with its folder on the include path, --compile-option and `kernels` (--kernel,
    a chain's kernels) as name expressions, so that a template instance ("scale<float>") names its kernel."""
    described: dict[str, Any] = {"path": str(args.input)}
    if kind == "source":
        described.update(kind=next(name for name, made in SOURCE_KINDS.items() if made.suffix == args.input.suffix),
                         options=[f"-I{args.input.parent}", *args.compile_option], name_expressions=kernels)
    else:
        described["kind"] = INPUT_KINDS[kind]
    if args.no_icache_flush:
        described["icache_flush"] = False
    return source_from_json(described, Path("."))


def check_language(path: Path, device: Device) -> None:
    """BenchError when C++ source `path` is not the language of `device`'s runtime compiler."""
    # SOURCE_LANGUAGES names the backend whose runtime compiler takes each suffix.
    language, backend = SOURCE_LANGUAGES[path.suffix], device.backend.name
    if language != backend:
        wanted = " or ".join(suffix for suffix, name in SOURCE_LANGUAGES.items() if name == backend)
        raise BenchError(f"{path} is {language.upper()} C++ (by its suffix), but the device is a "
                         f"{backend} one; expected a {wanted} file")


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
