"""`pyhipbench compile`: LLVM IR to a code object, with the instruction-cache flush on AMD."""
from __future__ import annotations

import argparse
from pathlib import Path

from .._codeobject import image as codeobject
from .._device import archs
from ..codegen import CodeObject, compile_ir, ir, triple_of
from ..codegen.nvptx import TRIPLE as NVPTX_TRIPLE
from ..errors import BenchError, Error
from . import values
from .command import add_command
from .files import check_output, read_input

PROLOGUE_HELP = (
    "assembly injected at each kernel's entry (after the flush): AMDGPU assembly or PTX. On AMD it runs "
    "before the kernel-argument loads (LLVM hoists them to the entry; pyhipbench puts the prologue first), "
    "so it must not write the registers the hardware preloads: the kernarg segment pointer (s[0:1] in "
    "most kernels), the other user SGPRs, the workgroup IDs, v0-v2 (work-item IDs) and exec; a prologue "
    "that does is refused, naming the register. A value starting with '-' is written --prologue=...")
# What a file of each suffix holds, for the suffixes pyhipbench reads or writes: a code object written under
# another's suffix would be taken for that by whatever reads it next. Other suffixes (.o, .bin, none) name nothing.
SUFFIX_HOLDS = {".hsaco": "an HSACO", ".co": "an HSACO", ".ptx": "PTX", ".cubin": "a cubin", ".fatbin": "a fatbin",
                ".ll": "LLVM IR text", ".bc": "LLVM bitcode", ".cu": "CUDA C++", ".hip": "HIP C++", ".json": "JSON",
                ".csv": "CSV", ".md": "markdown"}
FORMAT_SUFFIXES = {"hsaco": (".hsaco", ".co"), "ptx": (".ptx",)}  # what compile writes, by its target


def target(text: str) -> str:
    """A processor the code generator knows (gfx942, gfx942:xnack-, sm_90), as given.

    Asked of codegen while the options are parsed, so an unknown target is refused in one line, before
    any file is read; codegen's message says the forms it knows (after `unknown target 'X': `, which the
    parser says as `--target X: `).
    """
    try:
        triple_of(archs.base_arch(text))
    except Error as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"unknown target {archs.base_arch(text)!r}: ")) from None
    return text


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = add_command(
        commands, "compile", "compile LLVM IR to a code object, with the instruction-cache flush on AMD",
        "LLVM IR (text or bitcode) to an HSACO (gfx*) or PTX (sm_*), without a GPU. On AMD every kernel starts "
        "with s_icache_inv + 16 s_nop, proven by disassembly; a failed proof is an error.",
        ["pyhipbench compile kernels.ll --target gfx942 -o kernels.hsaco",
         "pyhipbench compile kernels.ll --target sm_90a -o kernels.ptx --ptx-version 80"])
    parser.add_argument("input", type=Path, help="LLVM IR file (text or bitcode, told apart by content)")
    parser.add_argument("--target", type=target, required=True,
                        help="processor: gfx90a, gfx942, gfx950, gfx1100, sm_90, sm_90a, sm_100a, ...")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="code object file to write (checked before compiling)")
    parser.add_argument("--no-icache-flush", action="store_true",
                        help="AMD: do not inject the instruction-cache flush (NVIDIA has none)")
    parser.add_argument("--prologue", help=PROLOGUE_HELP)
    parser.add_argument("--code-object-version", type=values.integer, default=5, choices=(4, 5, 6),
                        help="AMD HSACO version (default 5; ROCm before 6.3 rejects 6)")
    parser.add_argument("--ptx-version", type=values.integer, metavar="NN",
                        help="NVIDIA PTX ISA version times ten, e.g. 80 (default: the IR's, else the sm's minimum)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    check_output("-o", args.output, args.input)
    made = output_format(args.target)
    check_suffix(args.output, made, args.target)
    # Which flags go with which target is the command's to say, before any work; the version
    # itself is checked by the code generator (against the PTX ISA versions LLVM knows).
    if args.ptx_version is not None and made != "ptx":
        raise BenchError(f"--ptx-version applies to NVIDIA targets (sm_*), not {args.target}")
    kind, source = read_input(args.input)
    if kind == "source":
        raise BenchError(f"{args.input} is C++ source; compile takes LLVM IR (text or bitcode). `pyhipbench run` "
                         "compiles .cu / .hip files itself, and pyhipbench.codegen.source.compile_source "
                         "writes code objects")
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


def output_format(target: str) -> str:
    """The code object format `target` compiles to: "ptx" for an NVIDIA processor, else "hsaco"."""
    return "ptx" if triple_of(archs.base_arch(target)) == NVPTX_TRIPLE else "hsaco"


def check_suffix(output: Path, made: str, target: str) -> None:
    """BenchError when `output`'s suffix names other content than the `made` code object (SUFFIX_HOLDS)."""
    suffix, fitting = output.suffix.lower(), FORMAT_SUFFIXES[made]
    if suffix in SUFFIX_HOLDS and suffix not in fitting:
        raise BenchError(f"-o {output}: a {suffix} file holds {SUFFIX_HOLDS[suffix]}, but --target {target} makes "
                         f"{SUFFIX_HOLDS[fitting[0]]}; expected a name ending {' or '.join(fitting)}")


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
