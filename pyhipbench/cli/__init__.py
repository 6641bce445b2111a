"""The `pyhipbench` command: info, demo, compile, run, sweep, compare.

`main()` is the one place errors become messages: a pyhipbench.Error (exit 1;
BenchError, bad input found before anything ran: exit 2) or an OSError
(exit 1) prints one line naming what was wrong; argparse refuses malformed
options (exit 2). Bad input never gives a traceback.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from fractions import Fraction
from importlib import resources
from pathlib import Path

import numpy as np

from .. import __version__, _cpp as cpp
from .._device import archs
from .._codeobject import image as codeobject
from ..codegen import ir
from .._launch.arg_spec import DTYPES, FILLS, ArgSpec, materialize, parse_arg
from .._launch.args import int64
from .._measure.bench import bench
from .._measure.options import MAX_LAUNCHES
from .._measure.cache import CACHE_STATES, CLEAN_BYTES_PER_LLC
from ..codegen import CodeObject, compile_for_device, compile_ir, triple_of
from ..codegen.nvptx import TRIPLE as NVPTX_TRIPLE
from .._device.device import Device
from ..errors import BenchError, Error, IRError, NoDeviceError
from .._measure.report import compare, load, render
from .._measure.rotation import plan_rotation
from ..codegen.source import SOURCE_LANGUAGES, compile_source
from ..sweep import Store, export_best, load_space, sweep
from ..sweep.scheduler import TIMEOUT_FLOOR_S
from ..sweep.store import refuse_non_database
from ..sweep.worker import INVALID
from .._measure.timers import TIMERS, default_timer

MiB = archs.MiB
MAX_SIZE = (1 << 63) - 1            # bytes: numpy's and the drivers' signed 64-bit sizes
MAX_DIM = (1 << 32) - 1             # the drivers take each grid and block dimension as 32 bits
MAX_ITERATIONS = MAX_LAUNCHES      # each timed launch of a chunk keeps its events until the chunk ends
_SIZE = re.compile(r"(-?(?:\d+(?:\.\d*)?|\.\d+))([KMGT]?)(?:I?B)?")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
NPY_MAGIC = b"\x93NUMPY"            # what every .npy file starts with


# -- option types: each says what it expected -----------------------------------
def _size(text: str) -> int:
    """'64M', '1.5G', '4096' -> bytes (K, M, G, T are powers of 1024); 1 to 2**63 - 1."""
    match = _SIZE.fullmatch(text.strip().upper())
    try:
        size = int(Fraction(match[1]) * _UNITS[match[2]]) if match else None
    except ValueError:  # more digits than Python converts
        size = None
    if size is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; expected bytes such as 4096, 64M or 1G")
    if not 1 <= size <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"{text!r} is {size} bytes; expected 1 to 2**63 - 1 bytes")
    return size


def _whole(text: str, what: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}, a whole number from {low} to {high}")
    return value


def _iterations(text: str) -> int:
    return _whole(text, "a count of iterations", 1, MAX_ITERATIONS)


def _warmup(text: str) -> int:
    return _whole(text, "a count of warm-up launches", 0, MAX_ITERATIONS)


def _fraction(text: str, what: str, low: float, high: float) -> float:
    try:
        value = float(text.strip().removesuffix("%")) / (100 if text.strip().endswith("%") else 1)
    except ValueError:
        value = None
    if value is None or not low < value < high:
        raise argparse.ArgumentTypeError(f"{text!r}: expected {what}")
    return value


def _precision(text: str) -> float:
    return _fraction(text, "a relative precision between 0 and 1 such as 0.01 or 1%", 0, 1)


def _seconds(text: str) -> float:
    return _fraction(text, "a time in seconds above 0, at most a day", 0, 86400.000001)


def _microseconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a time in µs above 0, such as 25.6")
    return value


def _shared_bytes(text: str) -> int:
    return _whole(text, "bytes of dynamic shared memory", 0, MAX_DIM)


def _ptx_version(text: str) -> int:
    return _whole(text, "a PTX ISA version times ten such as 80", 10, 999)


def _target(text: str) -> str:
    """A processor compile_ir knows (gfx942, gfx942:xnack-, sm_90), checked before any work."""
    try:
        triple_of(archs.base_arch(text))
    except Error as e:  # codegen's "unknown target" names the value and the expected forms
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _dims(text: str) -> tuple[int, ...]:
    """'1024' or '64,4' -> (1024,) or (64, 4): 1 to 3 positive integers."""
    expected = f"expected 1 to 3 comma-separated integers from 1 to {MAX_DIM}, such as 1024 or 64,4"
    parts = [p.strip() for p in text.split(",")]
    if not 1 <= len(parts) <= 3 or not all(p.isascii() and p.isdigit() and len(p) <= 10 for p in parts) \
            or not all(1 <= int(p) <= MAX_DIM for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r}: {expected}")
    return tuple(int(p) for p in parts)


def _rotate(text: str) -> int | str:
    if text == "auto":
        return text
    return _whole(text, "'auto' or a number of argument sets", 1, MAX_ITERATIONS)


def _expect(text: str) -> tuple[int, Path]:
    index, sep, path = text.partition("=")
    if not sep or not path or not (index.isascii() and index.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected N=FILE.npy, N the position of an --arg "
                                         "(0 for the first)")
    return int(index), Path(path)


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a tolerance, a finite number >= 0 such as 1e-3")
    return value


def _load_expected(expected: list[tuple[int, Path]], arg_count: int) -> dict[int, np.ndarray]:
    """--expect's reference arrays by argument position, read before anything runs."""
    references: dict[int, np.ndarray] = {}
    for index, path in expected:
        if index >= arg_count:
            raise BenchError(f"--expect {index}={path}: there are {arg_count} --arg options; expected a "
                             f"position from 0 to {arg_count - 1}")
        if index in references:
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


def _kernel_arg(text: str) -> ArgSpec:
    try:
        return parse_arg(text)
    except BenchError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--arg ")) from None


def _open_device(backend: str | None):
    return Device(backend)


def cmd_info(args: argparse.Namespace) -> int:
    device = _open_device(args.backend)
    p = device.properties
    free, total = device.memory_info()
    print(f"backend        {p.backend} (driver library {device.driver.library_path})")
    print(f"device         {p.index}: {p.name}")
    print(f"arch           {p.arch}, {p.compute_units} compute units")
    print(f"L2             {p.l2_bytes / MiB:.1f} MiB")
    print(f"last-level     {p.llc_bytes / MiB:.1f} MiB")
    print(f"memory         {free / (1 << 30):.1f} GiB free of {total / (1 << 30):.1f} GiB")
    rotation = plan_rotation(args.size, p.llc_bytes, free, total)
    print(f"rotation       {rotation.sets} sets for {args.size} bytes: {rotation.reason}")
    return 0


def _demo_sizes(llc_bytes: int) -> list[int]:
    """Copy sizes (bytes per buffer) well below and well above the last-level cache."""
    return [llc_bytes // 8, llc_bytes * 4]


def cmd_demo(args: argparse.Namespace) -> int:
    try:
        device = _open_device(args.backend)
    except NoDeviceError as e:
        return _demo_plan_only(e, args.profile)
    return _demo_run(device)


def _demo_plan_only(reason: Exception, profile_name: str) -> int:
    profile = archs.PROFILES[profile_name]
    print(f"no GPU here ({reason}); showing the plan for {profile.name} ({profile_name}), nothing is run")
    print(f"  L2 {profile.l2_bytes / MiB:.0f} MiB, last-level cache {profile.llc_bytes / MiB:.0f} MiB, "
          f"{profile.total_bytes / 1e9:.0f} GB")
    print(f"  the copy kernel in each cache state: warm (one argument set), dirty-cold (rotated sets), "
          f"clean-cold (one set, a {CLEAN_BYTES_PER_LLC * profile.llc_bytes / MiB:.0f} MiB read before each launch)")
    print(f"  {'copy size':>12} {'set (src+dst)':>14} {'dirty-cold sets':>16}  why")
    for size in _demo_sizes(profile.llc_bytes):
        r = plan_rotation(2 * size, profile.llc_bytes, profile.total_bytes, profile.total_bytes)
        print(f"  {size / MiB:>9.1f} MiB {2 * size / MiB:>10.1f} MiB {r.sets:>16}  {r.reason}")
    timer = "cupti (kernel time from CUPTI activity records)" if profile.backend == "cuda" else \
        "events (hipExtModuleLaunchKernel's events around the dispatch)"
    print(f"  timer: {timer}; each run stops once the median's 95 % CI is within ±1 %")
    print("  plus an empty kernel, warm, with the default timer and with per-launch events")
    return 0


def _demo_run(device) -> int:
    kernels = resources.files("pyhipbench") / "kernels"
    if device.backend.name == "cuda":
        copy = device.load_module(kernels / "copy.ptx").kernel("copy")
        empty = device.load_module(kernels / "empty.ptx").kernel("empty")
    else:
        copy, empty = device.bundled_amd_module().kernel("copy"), device.bundled_amd_module().kernel("empty")
    p = device.properties
    print(f"{p.name} ({p.arch}), last-level cache {p.llc_bytes / MiB:.0f} MiB; medians to a ±1 % 95 % CI")
    print(f"{'kernel':<7} {'size':>10} {'cache':<11} {'timer':<7} {'sets':>5} {'median µs':>10} {'CI ±':>7} "
          f"{'samples':>7} {'GB/s':>7} {'wall ms':>8}")

    def row(kernel: str, size: str, r, gbps: str) -> None:
        print(f"{kernel:<7} {size:>10} {r.cache_state:<11} {r.timer:<7} {r.rotation.sets:>5} {r.median_us:>10.3f} "
              f"{100 * r.stats.rel_ci:>6.2f}% {r.samples:>7} {gbps:>7} {1e3 * r.wall_s:>8.1f}")

    for size in _demo_sizes(p.llc_bytes):
        n = size // 4
        src = device.array(np.arange(n, dtype=np.float32))
        dst = device.empty_like(src)
        grid = min(-(-n // 256), p.compute_units * 8)
        for cache in CACHE_STATES:
            r = bench(copy, grid, 256, [src, dst, int64(n)], cache=cache)
            row("copy", f"{size / MiB:.1f} MiB", r, f"{2 * size / (r.median_us * 1e3):.0f}")
        src.free()
        dst.free()
    for timer in dict.fromkeys((default_timer(device), "events")):
        row("empty", "-", bench(empty, 1, 1, [], cache="warm", timer=timer), "-")
    print("warm: one argument set; dirty-cold: rotated sets (earlier outputs still in the cache, written back "
          "during the kernel); clean-cold: one set, the cache cleaned by a read before each launch (untimed)")
    return 0


# -- inputs and outputs ------------------------------------------------------------
def _read_input(path: Path) -> tuple[str, bytes | str]:
    """("source", C++ text) for a .cu or .hip file; else ("code object", bytes) or ("ir", bitcode
    bytes or IR text), decided by content.

    Code objects are recognised by their magic (codeobject.detect_format); an
    ELF or fatbin that is not a GPU code object is refused as such; anything
    else is LLVM IR, bitcode by its magic or else UTF-8 text.
    """
    data = path.read_bytes()  # a missing file or a directory: OSError naming it, reported by main()
    if path.suffix in SOURCE_LANGUAGES:
        try:
            return "source", data.decode()
        except UnicodeDecodeError as e:
            raise BenchError(f"{path}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; expected "
                             f"{SOURCE_LANGUAGES[path.suffix].upper()} C++ source text") from None
    if data[:4] in ir.BITCODE_MAGIC:
        return "ir", data
    try:
        codeobject.detect_format(data)
        return "code object", data
    except BenchError:
        if data[:4] == b"\x7fELF" or data[:4] == codeobject.FATBIN_MAGIC.to_bytes(4, "little"):
            raise
    try:
        return "ir", data.decode()
    except UnicodeDecodeError as e:
        raise IRError(f"{path}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; expected LLVM IR text, "
                      "LLVM bitcode or a code object (PTX, cubin, fatbin, HSACO)") from None


def _check_output(option: str, path: Path, input_path: Path | None = None) -> None:
    """Refuses, before any work, an output path that cannot be written or would overwrite the input."""
    def refuse(why: str) -> BenchError:
        return BenchError(f"{option} {path}: {why}")

    if path.is_dir():
        raise refuse("is a directory; expected a file path")
    parent = path.parent
    if not parent.exists():
        raise refuse(f"directory {parent} does not exist")
    if not parent.is_dir():
        raise refuse(f"{parent} is not a directory")
    if path.exists():
        if input_path is not None and input_path.exists() and os.path.samefile(path, input_path):
            raise refuse("is the input file; writing it would overwrite the source")
        if not os.access(path, os.W_OK):
            raise refuse("is not writable")
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise refuse(f"directory {parent} is not writable")


def describe(code_object: CodeObject) -> str:
    """Target, kernels and verification result, as `compile` and `run` print them."""
    lines = [
        f"target: {code_object.target} ({code_object.format}, {len(code_object.data)} bytes)",
        f"kernels: {', '.join(code_object.kernels)}",
    ]
    if code_object.verification is not None:
        lines.append(f"verification: {code_object.verification}")
    elif code_object.format == "hsaco":
        lines.append("verification: none (no prologue injected)")
    else:
        lines.append("icache flush: none (NVIDIA has no instruction-cache invalidation)")
    return "\n".join(lines)


# -- compile and run ---------------------------------------------------------------
def cmd_compile(args: argparse.Namespace) -> int:
    _check_output("-o", args.output, args.input)
    if args.ptx_version is not None and triple_of(archs.base_arch(args.target)) != NVPTX_TRIPLE:
        raise BenchError(f"--ptx-version applies to NVIDIA targets (sm_*), not {args.target}")
    kind, source = _read_input(args.input)
    if kind == "source":
        raise BenchError(f"{args.input} is C++ source; compile takes LLVM IR (text or bitcode). `pyhipbench run` "
                         "compiles .cu / .hip files itself, and pyhipbench.codegen.source.compile_source writes code objects")
    if kind != "ir":
        raise BenchError(f"{args.input} is already a {codeobject.detect_format(source)} code object; "
                         "compile takes LLVM IR (text or bitcode)")
    code_object = compile_ir(
        ir.parse(source, name=str(args.input)),
        args.target,
        icache_flush=False if args.no_icache_flush else None,
        prologue=args.prologue,
        code_object_version=args.code_object_version,
        ptx_version=args.ptx_version,
    )
    code_object.save(args.output)
    print(f"wrote {args.output}")
    print(describe(code_object))
    return 0


def _write_reports(paths: list[Path], results: list[dict]) -> int:
    """Writes each report; one that cannot be written is printed instead, so the
    measurement is not lost (exit 1)."""
    status = 0
    for path in paths:
        text = render(path, results)
        try:
            path.write_text(text)
        except OSError as e:
            print(text)
            print(f"pyhipbench run: could not write {path}: {e.strerror or e}; the report is printed "
                  "on stdout instead", file=sys.stderr)
            status = 1
            continue
        print(f"wrote {path}")
    return status


def cmd_run(args: argparse.Namespace) -> int:
    for path in args.out:
        _check_output("--out", path, args.input)
        render(path, [])  # an unknown format is refused before any work
    expected = _load_expected(args.expect, len(args.arg))
    if not expected and (args.atol is not None or args.rtol is not None):
        raise BenchError("--atol and --rtol apply to --expect's files; expected --expect N=FILE.npy with them")
    kind, source = _read_input(args.input)
    if kind != "ir" and args.no_icache_flush:
        what = f"already a {codeobject.detect_format(source)} code object" if kind == "code object" \
            else "a C++ source file"
        raise BenchError(f"--no-icache-flush applies to LLVM IR input only; {args.input} is {what}")
    if kind != "source" and args.compile_option:
        raise BenchError(f"--compile-option applies to CUDA/HIP C++ source (.cu, .hip) only; {args.input} "
                         "is not one")
    module = ir.parse(source, name=str(args.input)) if kind == "ir" else None
    device = _open_device(args.backend)
    kernel_name = args.kernel
    if module is not None:
        source = compile_for_device(module, device, icache_flush=False if args.no_icache_flush else None)
        print(describe(source))
    elif kind == "source":
        language, backend = SOURCE_LANGUAGES[args.input.suffix], device.backend.name
        if language != backend:
            raise BenchError(f"{args.input} is {language.upper()} C++ (by its suffix), but the device is a "
                             f"{backend} one; expected a {'.cu' if backend == 'cuda' else '.hip'} file")
        # --kernel is a name expression, so a template instance ("scale<float>") names its kernel too.
        code = compile_source(device, source, name_expressions=[args.kernel], name=args.input.name,
                              options=[f"-I{args.input.parent}", *args.compile_option])
        print(describe(code))
        source, kernel_name = code, code.lowered_names[args.kernel]
    kernel = device.load_module(source).kernel(kernel_name)
    kernel_args = [materialize(spec, device) for spec in args.arg]
    result = bench(kernel, args.grid, args.block, kernel_args, timer=args.timer, cache=args.cache,
                   precision=args.precision, max_time_s=args.max_time, iterations=args.iterations,
                   warmup=args.warmup, rotate=args.rotate, slower_than_us=args.slower_than,
                   shared_bytes=args.shared_bytes,
                   expect=expected or None, atol=args.atol, rtol=args.rtol)
    print(result.summary())
    return _write_reports(args.out, [result.to_dict()])


def cmd_compare(args: argparse.Namespace) -> int:
    comparisons = compare(load(args.a), load(args.b))
    if not comparisons:
        raise BenchError(f"{args.a} and {args.b} have no kernel and launch in common (matched by kernel "
                         "name, grid, block, cache state and timer)")
    print(f"{'kernel and launch':<60} {'A µs':>10} {'B µs':>10} {'B/A':>7}  B is")
    for c in comparisons:
        print(f"{c.key:<60} {c.a_median_us:>10.3f} {c.b_median_us:>10.3f} {c.ratio:>7.3f}  {c.verdict}")
    return 0


MAX_FAILURES_LISTED = 20  # a sweep's summary lists this many failures; the database holds them all


def _gpu_list(text: str) -> list[int]:
    """'0,1' -> [0, 1]: device indices, each listed once."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts) or len(set(parts)) != len(parts):
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated device indices, each once, such "
                                         "as 0,1")
    return [int(p) for p in parts]


def cmd_sweep(args: argparse.Namespace) -> int:
    _check_output("--out", args.out, args.space)
    refuse_non_database(args.out, "--out ")
    for path in args.export:
        _check_output("--export", path, args.space)
        if path.resolve() == args.out.resolve():
            raise BenchError(f"--export {path}: is the --out database; writing it would overwrite the results")
        render(path, [])  # an unknown format is refused before any work
    candidates = load_space(args.space)
    summary = sweep(candidates, args.out, resume=args.resume, gpus=args.gpus, backend=args.backend,
                    cluster=args.ray, timeout_floor_s=args.timeout_floor, race=args.race)
    print(f"{summary.measured} measured, {summary.failed} failed, {summary.skipped} already in {args.out}; "
          f"{summary.wall_s:.1f} s wall on {summary.gpus} GPU(s), GPU busy {summary.busy_s:.1f} s "
          f"({100 * summary.utilisation:.0f} %)")
    store = Store(args.out, resume=True)
    try:
        failures = store.failures()
        for candidate_id, kernel, reason, error in failures[:MAX_FAILURES_LISTED]:
            retried = "" if reason == INVALID else " (after a retry)"
            print(f"failed {candidate_id[:12]} {kernel}: {reason}{retried}: {error}")
        if len(failures) > MAX_FAILURES_LISTED:
            print(f"... and {len(failures) - MAX_FAILURES_LISTED} more failed (the database's results table has "
                  "each, with status 'failed')")
        for r in store.best(args.best):
            raced = " (raced: stopped as slower, a less precise median)" if r.get("stop_reason") == "slower" else ""
            print(f"best {r['candidate_id'][:12]} {r['kernel']} grid {'x'.join(map(str, r['grid']))} block "
                  f"{'x'.join(map(str, r['block']))} {r['tags'] or ''}: median {r['stats_us']['median']:.3f} µs"
                  f"{raced}")
        status = 0
        for path in args.export:
            text = export_best(store, path, args.best)
            try:
                path.write_text(text)
            except OSError as e:
                print(text)
                print(f"pyhipbench sweep: could not write {path}: {e.strerror or e}; printed on stdout instead",
                      file=sys.stderr)
                status = 1
                continue
            print(f"wrote {path}")
    finally:
        store.close()
    return status


ARG_HELP = ("a kernel argument, in order: TYPE:VALUE for a scalar (int64:1048576, uint32:0xff, float32:2.5), "
            "array:DTYPE:COUNT[:FILL] for a device array copied for every rotated set, "
            "shared:DTYPE:COUNT[:FILL] for one all sets use as is; TYPE and DTYPE one of "
            f"{', '.join(DTYPES)}; FILL one of {', '.join(FILLS)} (default zeros; random: seed 0, floats "
            "uniform in [0, 1), integers uniform in [0, 127])")
PROLOGUE_HELP = (
    "assembly injected at each kernel's entry (after the flush): AMDGPU assembly or PTX. On AMD it runs "
    "before the kernel-argument loads (LLVM hoists them to the entry; pyhipbench puts the prologue first), "
    "so it must not write the registers the hardware preloads: the kernarg segment pointer (s[0:1] in "
    "most kernels), the other user SGPRs, the workgroup IDs, and v0-v2 (work-item IDs)")


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

    info = commands.add_parser("info", help="the GPU, its caches and memory, and the rotation for a size")
    info.add_argument("--backend", choices=("hip", "cuda"))
    info.add_argument("--size", type=_size, default=64 * MiB,
                      help="bytes of one argument set, for the rotation shown: 4096, 64M, 1.5G (default 64M)")
    info.set_defaults(handler=cmd_info)

    demo = commands.add_parser("demo", help="time the bundled kernels in each cache state")
    demo.add_argument("--backend", choices=("hip", "cuda"))
    demo.add_argument("--profile", choices=sorted(archs.PROFILES), default="h200",
                      help="device to plan for when no GPU is present (default h200)")
    demo.set_defaults(handler=cmd_demo)

    compile_ = commands.add_parser(
        "compile", help="compile LLVM IR to a code object, with the instruction-cache flush on AMD",
        description="Compile LLVM IR (text or bitcode) to an HSACO (gfx*) or PTX (sm_*). On AMD every kernel "
                    "starts with s_icache_inv + 16 s_nop, proven by disassembly; a failed proof is an error.")
    compile_.add_argument("input", type=Path, help="LLVM IR file (text or bitcode, told apart by content)")
    compile_.add_argument("--target", type=_target, required=True,
                          help="processor: gfx90a, gfx942, gfx950, gfx1100, sm_90, sm_90a, sm_100a, ...")
    compile_.add_argument("-o", "--output", type=Path, required=True,
                          help="code object file to write (checked before compiling)")
    compile_.add_argument("--no-icache-flush", action="store_true",
                          help="AMD: do not inject the instruction-cache flush (NVIDIA has none)")
    compile_.add_argument("--prologue", help=PROLOGUE_HELP)
    compile_.add_argument("--code-object-version", type=int, default=5, choices=(4, 5, 6),
                          help="AMD HSACO version (default 5; ROCm before 6.3 rejects 6)")
    compile_.add_argument("--ptx-version", type=_ptx_version, metavar="NN",
                          help="NVIDIA PTX ISA version times ten, e.g. 80 (default: the IR's, else the sm's minimum)")
    compile_.set_defaults(handler=cmd_compile)

    run = commands.add_parser("run", help="compile LLVM IR (or load a code object) and time a kernel")
    run.add_argument("input", type=Path, help="CUDA C++ (.cu, compiled by NVRTC) or HIP C++ (.hip, by hiprtc) "
                                              "source, or LLVM IR (text or bitcode) or a code object (PTX, cubin, "
                                              "fatbin, HSACO), told apart by content")
    run.add_argument("--kernel", required=True)
    run.add_argument("--grid", type=_dims, required=True, help="blocks, e.g. 1024 or 64,4")
    run.add_argument("--block", type=_dims, required=True, help="threads per block, e.g. 256")
    run.add_argument("--arg", type=_kernel_arg, action="append", default=[], help=ARG_HELP)
    run.add_argument("--shared-bytes", type=_shared_bytes, default=0, help="dynamic shared memory, bytes")
    run.add_argument("--timer", choices=TIMERS + ("auto",), default="auto",
                     help="cupti (kernel time, NVIDIA), events, graph, batched; auto: cupti where it works, "
                          "else events")
    run.add_argument("--cache", choices=CACHE_STATES + ("auto",), default="auto",
                     help="cache state at each timed launch; auto: clean-cold (warm with --rotate 1, "
                          "dirty-cold with --rotate N > 1)")
    run.add_argument("--precision", type=_precision, default=0.01,
                     help="stop when the median's 95%% CI is within this fraction (default 0.01 = 1%%)")
    run.add_argument("--max-time", type=_seconds, default=1.0, help="wall-time cap of the measurement, warm-up included, s")
    run.add_argument("--iterations", type=_iterations,
                     help=f"take exactly this many samples (1 to {MAX_ITERATIONS}) instead of --precision")
    run.add_argument("--warmup", type=_warmup, help="untimed samples first (default: until the times settle)")
    run.add_argument("--slower-than", type=_microseconds, metavar="US",
                     help="racing: stop (reason 'slower') once the median's 95%% CI lies wholly above this many "
                          "µs, e.g. the best candidate's CI upper bound so far")
    run.add_argument("--rotate", type=_rotate, default="auto",
                     help="dirty-cold's argument-set count: 'auto' or a number (1 = warm)")
    run.add_argument("--expect", type=_expect, action="append", default=[], metavar="N=FILE.npy",
                     help="check argument N (its --arg position, 0 for the first) after one untimed launch on "
                          "every argument set against this .npy file (same shape) before timing; repeatable")
    run.add_argument("--atol", type=_tolerance, help="--expect's absolute tolerance (default 1e-8)")
    run.add_argument("--rtol", type=_tolerance, help="--expect's relative tolerance (default 1e-5)")
    run.add_argument("--no-icache-flush", action="store_true",
                     help="AMD, LLVM IR input only: compile without the flush")
    run.add_argument("--compile-option", action="append", default=[], metavar="OPT",
                     help="CUDA/HIP C++ source only: an NVRTC / hiprtc option, repeatable, written with = "
                          "(--compile-option=-DN=4 --compile-option=-std=c++17); the file's folder is on the "
                          "include path")
    run.add_argument("--backend", choices=("hip", "cuda"))
    run.add_argument("--out", type=Path, action="append", default=[],
                     help="write the result here, as JSON, CSV or a markdown table by the suffix "
                          "(.json, .csv, .md); repeatable; checked before running")
    run.set_defaults(handler=cmd_run)

    sweep_ = commands.add_parser(
        "sweep", help="measure a search space of candidates on every GPU (or a Ray cluster) into a database",
        description="Measure every candidate of SPACE (JSON, or YAML with pyyaml) on every GPU, a worker process "
                    "per GPU (or a Ray actor per GPU with --ray); faults, hangs and crashes cost one candidate. "
                    "Each result is committed to the SQLite database --out as it arrives.")
    sweep_.add_argument("space", type=Path, help="the search space: a JSON (or YAML) file of candidates")
    sweep_.add_argument("--out", type=Path, required=True, help="the results database (SQLite) to write")
    sweep_.add_argument("--resume", action="store_true",
                       help="continue a database that holds results, skipping the candidates recorded there")
    sweep_.add_argument("--gpus", type=_gpu_list,
                       help="device indices to use, e.g. 0,1 (default: all); with --ray, how many GPUs: the "
                            "count of indices given")
    sweep_.add_argument("--ray", metavar="ADDRESS",
                       help="run on a Ray cluster: an actor per GPU (ray://host:10001, or auto); needs ray")
    sweep_.add_argument("--backend", choices=("hip", "cuda"))
    sweep_.add_argument("--timeout-floor", type=_seconds, default=TIMEOUT_FLOOR_S,
                       help=f"the watchdog's least limit per candidate, s (default {TIMEOUT_FLOOR_S:.0f})")
    sweep_.add_argument("--race", action="store_true",
                       help="racing: stop each candidate once its median's 95%% CI lies wholly above the lowest "
                            "CI upper bound measured so far (stop reason 'slower'); for candidates solving one "
                            "problem: the best is measured to the precision, the others' medians less precisely")
    sweep_.add_argument("--best", type=_iterations, default=10, help="how many of the fastest to list and export")
    sweep_.add_argument("--export", type=Path, action="append", default=[],
                       help="write the fastest candidates as JSON, CSV or a markdown table by the suffix "
                            "(.json, .csv, .md); repeatable")
    sweep_.set_defaults(handler=cmd_sweep)

    comparison = commands.add_parser("compare", help="B against A, kernel by kernel: faster, slower or the "
                                                     "same (95%% CIs of the medians overlap)")
    comparison.add_argument("a", type=Path, help="a JSON report (run --out A.json) or a sweep's database")
    comparison.add_argument("b", type=Path, help="another JSON report or sweep database")
    comparison.set_defaults(handler=cmd_compare)
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

