"""The `pyhipbench` command: info, demo, compile, run."""
from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from . import archs, cli_compile
from . import args as scalars
from .args import int64, shared
from .bench import bench
from .codegen import compile_for_device
from .codeobject import read_image
from .device import Device
from .errors import BenchError, Error, NoDeviceError
from .rotation import plan_rotation

MiB = archs.MiB


def _size(text: str) -> int:
    """'64M', '1G', '4096' -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; expected bytes such as 4096, 64M or 1G")


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
    return _demo_run(device, args.iterations)


def _demo_plan_only(reason: Exception, profile_name: str) -> int:
    profile = archs.PROFILES[profile_name]
    print(f"no GPU here ({reason}); showing the plan for {profile.name} ({profile_name}), nothing is run")
    print(f"  L2 {profile.l2_bytes / MiB:.0f} MiB, last-level cache {profile.llc_bytes / MiB:.0f} MiB, "
          f"{profile.total_bytes / 1e9:.0f} GB")
    print(f"  {'copy size':>12} {'set (src+dst)':>14} {'sets':>5}  why")
    for size in _demo_sizes(profile.llc_bytes):
        r = plan_rotation(2 * size, profile.llc_bytes, profile.total_bytes, profile.total_bytes)
        print(f"  {size / MiB:>9.1f} MiB {2 * size / MiB:>10.1f} MiB {r.sets:>5}  {r.reason}")
    print("  plus an empty kernel, warm, for launch overhead")
    return 0


def _bundled_kernels(device):
    """The demo's copy and empty kernels: PTX on CUDA; on HIP, IR compiled for the device."""
    kernels = resources.files("pyhipbench") / "kernels"
    if device.backend.name == "cuda":
        copy = device.load_module(kernels / "copy.ptx").kernel("copy")
        return copy, device.load_module(kernels / "empty.ptx").kernel("empty")
    module = device.load_module(compile_for_device(Path(kernels / "amdgpu.ll"), device).data)
    return module.kernel("copy"), module.kernel("empty")


def _demo_run(device, iterations: int) -> int:
    copy, empty = _bundled_kernels(device)
    p = device.properties
    print(f"{p.name} ({p.arch}), last-level cache {p.llc_bytes / MiB:.0f} MiB; "
          f"event-timed medians over {iterations} iterations")
    print(f"{'kernel':<8} {'size':>10} {'cache':<11} {'sets':>5} {'median µs':>10} {'GB/s':>8} {'host µs/it':>11}")
    for size in _demo_sizes(p.llc_bytes):
        n = size // 4
        src = device.array(np.arange(n, dtype=np.float32))
        dst = device.empty_like(src)
        block = 256
        grid = min(-(-n // block), p.compute_units * 8)
        for rotate in (1, "auto"):
            r = bench(copy, grid, block, [src, dst, int64(n)], iterations=iterations, rotate=rotate)
            gbps = 2 * size / (r.median_us * 1e3)
            print(f"{'copy':<8} {size / MiB:>6.1f} MiB {r.cache_state:<11} {r.rotation.sets:>5} "
                  f"{r.median_us:>10.2f} {gbps:>8.0f} {r.host_us_per_iteration:>11.2f}")
        src.free()
        dst.free()
    r = bench(empty, 1, 1, [], iterations=iterations, rotate=1)
    print(f"{'empty':<8} {'-':>10} {r.cache_state:<11} {r.rotation.sets:>5} {r.median_us:>10.2f} "
          f"{'-':>8} {r.host_us_per_iteration:>11.2f}")
    print("dirty-cold = rotating buffer sets (earlier outputs still in L2, being written back); "
          "warm = one set")
    return 0


SCALAR_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64")
FILLS = ("zeros", "ones", "arange", "random")
ARG_HELP = ("a kernel argument, in order: TYPE:VALUE for a scalar (int64:1048576, float32:2.5; "
            f"TYPE one of {', '.join(SCALAR_TYPES)}), array:DTYPE:COUNT[:FILL] for a rotated device "
            f"array, shared:DTYPE:COUNT[:FILL] for one that is not rotated (FILL: {', '.join(FILLS)}; "
            "default zeros)")


def _dims(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 1 to 3 comma-separated integers such as 1024 or 64,4")


def _rotate(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 'auto' or a number of sets")


ARG_FORMS = "TYPE:VALUE, array:DTYPE:COUNT[:FILL] or shared:DTYPE:COUNT[:FILL]"


def _kernel_arg(device, text: str):
    """One --arg: a typed scalar, or a device array filled on the host."""
    kind, _, rest = text.partition(":")
    if kind in SCALAR_TYPES:
        try:
            number = float(rest) if kind.startswith("float") else int(rest, 0)
        except ValueError:
            raise BenchError(f"--arg {text!r}: {rest!r} is not a {kind} value") from None
        return getattr(scalars, kind)(number)
    if kind not in ("array", "shared"):
        raise BenchError(f"--arg {text!r}: expected {ARG_FORMS}")
    dtype_name, _, rest = rest.partition(":")
    count, _, fill = rest.partition(":")
    fill = fill or "zeros"
    try:
        dtype = np.dtype(dtype_name)
    except TypeError:
        raise BenchError(f"--arg {text!r}: {dtype_name!r} is not a numpy dtype such as float32") from None
    if not count.isdigit():
        raise BenchError(f"--arg {text!r}: element count {count!r} is not a whole number")
    if fill not in FILLS:
        raise BenchError(f"--arg {text!r}: fill {fill!r} is not one of {', '.join(FILLS)}")
    n = int(count)
    host = {"zeros": lambda: np.zeros(n, dtype), "ones": lambda: np.ones(n, dtype),
            "arange": lambda: np.arange(n).astype(dtype),
            "random": lambda: np.random.default_rng(0).random(n).astype(dtype)}[fill]()
    array = device.array(host)
    return shared(array) if kind == "shared" else array


def cmd_run(args: argparse.Namespace) -> int:
    device = _open_device(args.backend)
    if args.input.suffix in (".ll", ".bc"):
        code = compile_for_device(args.input, device, icache_flush=False if args.no_icache_flush else None)
        print(cli_compile.describe(code))
        image = code.data
    else:
        image = read_image(args.input)
    kernel = device.load_module(image).kernel(args.kernel)
    kernel_args = [_kernel_arg(device, a) for a in args.arg]
    result = bench(kernel, args.grid, args.block, kernel_args, iterations=args.iterations,
                   warmup=args.warmup, rotate=args.rotate, shared_bytes=args.shared_bytes)
    print(result.summary())
    if args.json:
        args.json.write_text(json.dumps(result.to_dict(), indent=2))
        print(f"wrote {args.json}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyhipbench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="the GPU, its caches and memory, and the rotation for a size")
    info.add_argument("--backend", choices=("hip", "cuda"))
    info.add_argument("--size", type=_size, default=64 * MiB,
                      help="bytes of one argument set, for the rotation shown (default 64M)")
    info.set_defaults(handler=cmd_info)

    demo = commands.add_parser("demo", help="time the bundled kernels, warm vs rotating")
    demo.add_argument("--backend", choices=("hip", "cuda"))
    demo.add_argument("--iterations", type=int, default=200)
    demo.add_argument("--profile", choices=sorted(archs.PROFILES), default="h200",
                      help="device to plan for when no GPU is present (default h200)")
    demo.set_defaults(handler=cmd_demo)

    cli_compile.add_parser(commands)

    run = commands.add_parser("run", help="compile LLVM IR (or load a code object) and time a kernel")
    run.add_argument("input", type=Path, help="LLVM IR (.ll, .bc), or a code object (PTX, cubin, fatbin, HSACO)")
    run.add_argument("--kernel", required=True)
    run.add_argument("--grid", type=_dims, required=True, help="blocks, e.g. 1024 or 64,4")
    run.add_argument("--block", type=_dims, required=True, help="threads per block, e.g. 256")
    run.add_argument("--arg", action="append", default=[], help=ARG_HELP)
    run.add_argument("--shared-bytes", type=int, default=0, help="dynamic shared memory, bytes")
    run.add_argument("--iterations", type=int, default=100)
    run.add_argument("--warmup", type=int, default=10)
    run.add_argument("--rotate", type=_rotate, default="auto", help="'auto' or a set count (1 = warm)")
    run.add_argument("--no-icache-flush", action="store_true", help="AMD: compile without the flush")
    run.add_argument("--backend", choices=("hip", "cuda"))
    run.add_argument("--json", type=Path, help="write the result as JSON here")
    run.set_defaults(handler=cmd_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except BenchError as e:  # bad input: nothing was launched
        print(f"pyhipbench {args.command}: {e}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"pyhipbench {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
