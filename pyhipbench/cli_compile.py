"""`pyhipbench compile IN.ll --target gfx942|sm_90 [--no-icache-flush] -o OUT`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .codegen import CodeObject, compile_ir
from .errors import Error

__all__ = ["add_parser", "run_compile", "describe"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `compile` subcommand to ``subparsers``; its handler is ``run_compile``."""
    p = subparsers.add_parser(
        "compile",
        help="compile LLVM IR to a code object, with the instruction-cache flush on AMD",
        description=(
            "Compile LLVM IR (text or bitcode) to an HSACO (gfx*) or PTX (sm_*). On AMD "
            "every kernel starts with s_icache_inv + 16 s_nop, proven by disassembly; "
            "a failed proof is an error."
        ),
    )
    p.add_argument("input", type=Path, help="LLVM IR file (.ll text or .bc bitcode)")
    p.add_argument("--target", required=True, help="processor: gfx90a, gfx942, gfx950, gfx1100, sm_90, ...")
    p.add_argument("-o", "--output", type=Path, required=True, help="code object file to write")
    p.add_argument(
        "--no-icache-flush", action="store_true",
        help="AMD: do not inject the instruction-cache flush (NVIDIA has none)",
    )
    p.add_argument("--prologue", help="assembly injected at each kernel's entry (after the flush)")
    p.add_argument(
        "--code-object-version", type=int, default=5, choices=(4, 5, 6),
        help="AMD HSACO version (default 5; ROCm before 6.3 rejects 6)",
    )
    p.add_argument(
        "--ptx-version", type=int, metavar="NN",
        help="NVIDIA PTX ISA version times ten, e.g. 80 (default: the IR's, else the sm's minimum)",
    )
    p.set_defaults(handler=run_compile)
    return p


def describe(code_object: CodeObject) -> str:
    """Target, kernels and verification result, as the command prints them."""
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


def run_compile(args: argparse.Namespace) -> int:
    """Handler of `compile`: 0 on success, 1 with the error on stderr otherwise."""
    try:
        code_object = compile_ir(
            args.input,
            args.target,
            icache_flush=False if args.no_icache_flush else None,
            prologue=args.prologue,
            code_object_version=args.code_object_version,
            ptx_version=args.ptx_version,
        )
    except (Error, ValueError, OSError) as e:
        print(f"pyhipbench compile: error: {e}", file=sys.stderr)
        return 1
    code_object.save(args.output)
    print(f"wrote {args.output}")
    print(describe(code_object))
    return 0
