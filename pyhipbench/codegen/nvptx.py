"""NVPTX: IR (with an optional user prologue in inline PTX) -> PTX text.

NVIDIA has no instruction-cache invalidation: neither PTX nor the CUDA driver
API exposes one, so there is no flush prologue here: on NVIDIA the
instruction cache is not put in a known state.

PTX ISA version (the ``.version`` line): ``ptx_version`` when given (e.g. 80
-> ``.version 8.0``); else the highest ``+ptxNN`` in the IR's functions'
"target-features" (clang-22 writes +ptx88), because functions may use what
that version offers and the header must allow it; else the lowest version
LLVM knows for the sm (7.8 for sm_90, 8.6 for sm_100), which every driver
able to run that GPU loads. The CUDA 13.0 driver (580) loads up to PTX 9.0;
an older driver rejects a newer version at load time, so pass a lower
``ptx_version`` for it.
"""

from __future__ import annotations

import numbers
import re

import llvmlite.binding as llvm

from ..errors import CodegenError, IRError
from . import emit, ir

__all__ = ["TRIPLE", "arch_specific", "check_kernel_names", "check_prologue", "compile_module",
           "max_ptx_version", "ptx_version_of"]

TRIPLE = "nvptx64-nvidia-cuda"
_VERSION = re.compile(r"^\.version (\d+)\.(\d+)$", re.MULTILINE)

# The first CUDA release whose driver loads each PTX ISA version (x10), from
# NVIDIA's PTX ISA release history.
FIRST_CUDA_FOR_PTX: dict[int, tuple[int, int]] = {
    70: (11, 0), 71: (11, 1), 72: (11, 2), 73: (11, 3), 74: (11, 4), 75: (11, 5), 76: (11, 6),
    77: (11, 7), 78: (11, 8), 80: (12, 0), 81: (12, 1), 82: (12, 2), 83: (12, 3), 84: (12, 4),
    85: (12, 5), 86: (12, 7), 87: (12, 8), 88: (12, 9), 90: (13, 0), 91: (13, 1),
}

# A PTX identifier (PTX ISA, "Identifiers"): [a-zA-Z]{followsym}* or
# [_$%]{followsym}+ with followsym [a-zA-Z0-9_$]. A leading % is PTX-legal but
# LLVM's NVPTX printer aborts on it, so it is refused too. LLVM writes other
# names unchanged into PTX that ptxas rejects, or aborts.
_PTX_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_$]*|[_$][A-Za-z0-9_$]+")
PTX_NAME_RULE = (
    "NVIDIA kernel names must be PTX identifiers: a letter followed by letters, digits, "
    "`_` or `$`, or `_`/`$` followed by at least one of those"
)

# PTX instruction mnemonics up to the first `.` (PTX ISA 9.0, "Instructions"),
# and the directives a function body may hold. A prologue statement must start
# with one of them, so a typo or stray text is caught here rather than by
# ptxas at load time.
PTX_OPCODES = frozenset("""
abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev
brkpt brx call clusterlaunchcontrol clz cnot copysign cos cp createpolicy cvt cvta discard div
dp2a dp4a elect ex2 exit fence fma fns getctarank griddepcontrol isspacep istypeof ld ldmatrix
ldu lg2 lop3 mad mad24 madc mapa match max mbarrier membar min mma mov movmatrix mul mul24
multimem nanosleep neg not or pmevent popc prefetch prefetchu prmt rcp red redux rem ret rsqrt
sad selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore stacksave stmatrix
sub subc suld suq sured sust szext tanh tcgen05 tensormap testp tex tld4 trap txq vabsdiff
vabsdiff2 vabsdiff4 vadd vadd2 vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4 vmin vmin2 vmin4 vote
vset vset2 vset4 vshl vshr vsub vsub2 vsub4 wgmma wmma xor
""".split())
PTX_BODY_DIRECTIVES = frozenset({".reg", ".local", ".shared", ".param", ".pragma", ".loc"})
_PTX_STATEMENT = re.compile(
    r"(?:(?P<label>[A-Za-z_$][A-Za-z0-9_$]*)\s*:\s*)?"  # an optional label
    r"(?:@!?%?[A-Za-z_$][A-Za-z0-9_$]*\s+)?"  # an optional guard predicate
    r"(?P<op>\.?[A-Za-z_][A-Za-z0-9_]*)"
)
# PTX special registers (PTX ISA 9.0, "Special Registers"): what a prologue may
# read without declaring it.
_SPECIAL_REGISTER = re.compile(
    r"tid|ntid|laneid|warpid|nwarpid|ctaid|nctaid|smid|nsmid|gridid|is_explicit_cluster|clusterid|nclusterid"
    r"|cluster_ctaid|cluster_nctaid|cluster_ctarank|cluster_nctarank|lanemask_(?:eq|le|lt|ge|gt)|clock|clock_hi"
    r"|clock64|pm[0-7](?:_64)?|envreg(?:[0-9]|[12][0-9]|3[01])|globaltimer(?:_lo|_hi)?|total_smem_size"
    r"|aggr_smem_size|dynamic_smem_size|reserved_smem_offset_(?:begin|end|cap|2)|current_graph_exec")
_REGISTER_USE = re.compile(r"%([A-Za-z_$][A-Za-z0-9_$]*)")
_REGISTER_DECLARATION = re.compile(r"%([A-Za-z_$][A-Za-z0-9_$]*?)(?:<(\d+)>)?\s*(?:,|$)")


def _declared_registers(statement: str) -> set[str]:
    """Names a `.reg` statement declares: `%a, %b` or `%r<4>` (%r0 .. %r3)."""
    names: set[str] = set()
    registers = statement[statement.find("%"):] if "%" in statement else ""
    for name, count in _REGISTER_DECLARATION.findall(registers):
        names.update([f"{name}{i}" for i in range(int(count))] if count else [name])
    return names


def _check_registers(statements: list[str]) -> None:
    """Every %register a prologue uses is a special register or one its own `.reg` declared:
    the kernel's registers are LLVM's, named by it and unknown to the prologue."""
    declared: set[str] = set()
    for statement in statements:
        if statement.startswith(".reg"):
            declared |= _declared_registers(statement)
            continue
        for name in _REGISTER_USE.findall(statement):
            if name not in declared and not _SPECIAL_REGISTER.fullmatch(name):
                raise CodegenError(
                    f"PTX prologue statement {statement + ';'!r}: register %{name} is neither declared by the "
                    "prologue's own .reg nor a PTX special register (%tid, %clock64, %globaltimer, ...); the "
                    "kernel's registers are LLVM's and cannot be named from a prologue")


def arch_specific(sm: str) -> str | None:
    """The arch-specific target of a compute capability 9.0+ processor ("sm_90" -> "sm_90a",
    "sm_100" -> "sm_100a") where LLVM knows it, else None.

    An arch-specific target runs on exactly its compute capability and selects everything the
    plain one does, plus the instructions only that capability has (wgmma and setmaxnreg on
    sm_90a, tcgen05 on sm_100a): on a device of that capability it loses nothing.
    """
    number = re.fullmatch(r"sm_(\d+)", sm)
    if number is None or int(number.group(1)) < 90 or emit.check_target(TRIPLE, sm + "a"):
        return None
    return sm + "a"


def max_ptx_version(driver_version: int) -> int:
    """The newest PTX ISA version (x10) a driver loads; `driver_version` as
    cuDriverGetVersion reports it (13000 = CUDA 13.0)."""
    cuda = (driver_version // 1000, driver_version % 1000 // 10)
    loadable = [ptx for ptx, first in FIRST_CUDA_FOR_PTX.items() if first <= cuda]
    if not loadable:
        raise CodegenError(f"CUDA driver {cuda[0]}.{cuda[1]} predates PTX ISA 7.0 (CUDA 11.0); "
                           "pyhipbench needs CUDA 11 or newer")
    return max(loadable)


def ptx_version_of(ptx: bytes) -> int:
    """The `.version` (x10) PTX text declares."""
    m = _VERSION.search(ptx.decode(errors="replace"))
    if m is None:
        raise CodegenError("PTX text has no .version line")
    return int(m.group(1)) * 10 + int(m.group(2))


def check_kernel_names(kernels: list[str]) -> None:
    """Raise IRError for the first kernel whose name is not a PTX identifier."""
    for kernel in kernels:
        if not _PTX_NAME.fullmatch(kernel):
            raise IRError(f"kernel name {kernel!r} cannot be compiled for NVIDIA: {PTX_NAME_RULE}")


def _without_comments(prologue: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", prologue, flags=re.DOTALL)
    if "/*" in text:
        raise CodegenError(f"PTX prologue {prologue!r}: a /* comment is not closed")
    return re.sub(r"//[^\n]*", " ", text)


def check_prologue(prologue: str) -> None:
    """Raise CodegenError unless ``prologue`` is PTX that fits inside a kernel body.

    Checked: every statement ends in ``;``; braces balance and close only what
    the prologue opened; each statement starts with a PTX instruction
    (``PTX_OPCODES``, optionally guarded ``@p``/``@!p`` and labelled) or a
    directive a body may hold (``PTX_BODY_DIRECTIVES``), so no ``.entry``,
    ``.func``, ``.version`` or a stray ``}`` can end the kernel early.
    Every ``%register`` used is declared by the prologue's own ``.reg`` or is
    a special register. Other operands are left to ptxas, when the driver
    loads the PTX.
    """
    if not isinstance(prologue, str):
        raise CodegenError(f"prologue {prologue!r}: expected PTX text (str), got {type(prologue).__name__}")
    text = _without_comments(prologue)
    depth = 0
    statement = ""
    statements: list[str] = []
    for ch in text:
        if ch in "{};":
            stmt = " ".join(statement.split())
            statement = ""
            if ch == ";":
                if not stmt:
                    continue
                statements.append(stmt)
                m = _PTX_STATEMENT.match(stmt)
                op = m.group("op") if m else stmt.split()[0]
                known = op in PTX_BODY_DIRECTIVES if op.startswith(".") else op.split(".")[0] in PTX_OPCODES
                if not known:
                    kind = "directive a kernel body may hold" if op.startswith(".") else "PTX instruction"
                    raise CodegenError(
                        f"PTX prologue statement {stmt + ';'!r}: {op!r} is not a {kind}"
                        + (f" ({', '.join(sorted(PTX_BODY_DIRECTIVES))})" if op.startswith(".") else "")
                    )
            elif stmt:
                raise CodegenError(f"PTX prologue: {stmt!r} before {ch!r} does not end in ';'")
            elif ch == "{":
                depth += 1
            elif depth == 0:
                raise CodegenError(f"PTX prologue {prologue!r}: '}}' closes a brace it did not open "
                                   "(it would end the kernel)")
            else:
                depth -= 1
        else:
            statement += ch
    if statement.strip():
        raise CodegenError(f"PTX prologue statement {' '.join(statement.split())!r} does not end in ';'")
    if depth:
        raise CodegenError(f"PTX prologue {prologue!r}: {depth} '{{' not closed")
    if not text.strip().replace(";", "").strip():
        raise CodegenError(f"PTX prologue {prologue!r} holds no statement")
    _check_registers(statements)


def check_ptx_version(ptx_version: object, sm: str) -> int:
    """``ptx_version`` as an int if it is an integer LLVM knows as a PTX ISA
    version for NVPTX, else CodegenError."""
    if not isinstance(ptx_version, numbers.Integral) or isinstance(ptx_version, bool) or ptx_version <= 0:
        raise CodegenError(
            f"ptx_version {ptx_version!r}: expected the PTX ISA version times ten as a positive "
            "integer, e.g. 80 for PTX 8.0"
        )
    complaint = emit.check_target(TRIPLE, sm, f"+ptx{int(ptx_version)}")
    if complaint:
        raise CodegenError(
            f"ptx_version {ptx_version}: LLVM {llvm.llvm_version_info[0]} knows no PTX ISA version "
            f"{int(ptx_version) / 10:.1f} ({complaint})"
        )
    return int(ptx_version)


def compile_module(
    module: ir.Module, kernels: list[str], sm: str, *, prologue: str | None, ptx_version: int | None
) -> bytes:
    """PTX text (bytes, NUL-free) for ``sm`` (e.g. "sm_90") from a verified nvptx64 module.

    ``prologue`` is inline PTX injected first into every kernel; ``ptx_version``
    is the PTX ISA version times ten (78, 80, 90), or None for the IR's
    (its highest "+ptxNN" function feature), else LLVM's minimum for ``sm``.
    """
    check_kernel_names(kernels)
    if ptx_version is not None:
        ptx_version = check_ptx_version(ptx_version, sm)
    else:
        in_ir = [int(f[4:]) for f in module.target_features if re.fullmatch(r"\+ptx\d+", f)]
        ptx_version = max(in_ir, default=None)
    if prologue is not None:
        check_prologue(prologue)
        module = ir.inject_prologue(module, prologue, kernels)
    features = "" if ptx_version is None else f"+ptx{ptx_version}"
    ptx = emit.assembly(module, TRIPLE, sm, features, kernels)
    # LLVM never writes a version below what `sm` needs (and ignores a
    # "+ptxNN" from the IR it does not know): check what it wrote.
    m = _VERSION.search(ptx)
    written = int(m.group(1)) * 10 + int(m.group(2))
    if ptx_version is not None and written != ptx_version:
        raise CodegenError(
            f"PTX ISA version {ptx_version / 10:.1f} was asked for but LLVM "
            f"{llvm.llvm_version_info[0]} wrote .version {m.group(1)}.{m.group(2)} for {sm}: "
            "use a version this LLVM knows, at least the one the GPU needs"
        )
    return ptx.encode()
