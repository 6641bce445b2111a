"""LLVM code emission in a compile pool's worker process, so that an LLVM abort costs one compile.

IR that verifies can still be impossible to select (an MFMA intrinsic for
gfx1100, ``llvm.nvvm.wgmma.*`` for sm_90 rather than sm_90a, a name NVPTX
cannot spell): LLVM then prints ``LLVM ERROR: ...`` and calls abort(), which
no Python code can catch. So emission runs as a task of a compile pool
(``pyhipbench._compile.pool``): its workers are started on first use and
reused across compiles, threads compile in parallel in several of them, a
forked child starts its own, and a worker's death costs only its task. The
emission's pool is its own, not the one Triton's and a sweep's compiles queue
in, so a compile_ir never waits behind a tuning.

What LLVM prints goes, for the task's length, to a file this process made and
reads afterwards: it outlives an abort, whose message becomes a
``CodegenError`` quoting it, and it carries what a target probe reports as
warnings. The cost, measured by bench/compile_cost.py, is in docs/codegen.md.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import llvmlite.binding as llvm

from .._compile.pool import CompilePool, shared_pool
from ..errors import CodegenError
from . import ir

__all__ = ["assembly", "check_target", "emission_pool", "known_processors"]

_UNKNOWN_PROCESSOR = "is not a recognized processor for this target"
_UNKNOWN_FEATURE = "is not a recognized feature for this target"


def emission_pool() -> CompilePool:
    """The process's pool for LLVM emission: a worker per CPU at most, since each compile's thread waits for
    its own task."""
    return shared_pool(len(os.sched_getaffinity(0)), "emission")


# What runs in a worker.

@contextmanager
def _printing_to(path: str) -> Iterator[None]:
    """The process's stdout and stderr (LLVM writes to the file descriptors) go to `path` meanwhile."""
    with open(path, "ab") as file:
        saved = [os.dup(1), os.dup(2)]
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(file.fileno(), 1)
        os.dup2(file.fileno(), 2)
        try:
            yield
        finally:
            for fd, copy in enumerate(saved, start=1):
                os.dup2(copy, fd)
                os.close(copy)


def _target_machine(triple: str, cpu: str, features: str) -> Any:
    ir._init_llvm()
    return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)


def _emit(printed: str, triple: str, cpu: str, features: str, bitcode: bytes) -> str:
    with _printing_to(printed):
        return str(_target_machine(triple, cpu, features).emit_assembly(llvm.parse_bitcode(bitcode)))


def _create_target_machine(printed: str, triple: str, cpu: str, features: str) -> None:
    """Only the target machine: LLVM reports an unknown processor or feature as a warning, and lists the
    target's processors and features for cpu "help"."""
    with _printing_to(printed):
        _target_machine(triple, cpu, features)


# What runs here.

class _Aborted(Exception):
    """The worker died during the task (LLVM aborted); `status` says how, `printed` what LLVM printed first."""

    def __init__(self, status: str, printed: str) -> None:
        super().__init__(status)
        self.status, self.printed = status, printed


def _run(pool: CompilePool, task: Callable[..., Any], *args: Any) -> tuple[Any, str]:
    """`task(file, *args)` in `pool`: what it returned and what LLVM printed in the file; raises _Aborted, or
    CodegenError for any other failure."""
    with tempfile.NamedTemporaryFile(prefix="pyhipbench-llvm-") as file:
        outcome = pool.submit(task, file.name, *args).result()
        printed = file.read().decode(errors="replace")
    if outcome.ok:
        return outcome.value, printed
    if outcome.exit_code is not None:
        raise _Aborted(_exit_status(outcome.exit_code), printed)
    if outcome.ended == "raised":
        raise CodegenError(f"LLVM failed: {outcome.error}\n{printed.strip()}".strip())
    raise CodegenError(str(outcome.error))


def _exit_status(exit_code: int) -> str:
    if exit_code < 0:
        try:
            return f"killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    return f"exit status {exit_code}"


def _quote(printed: str) -> str:
    lines = [line for line in printed.strip().splitlines() if line.strip()]
    # An abort prints LLVM's message, then a stack dump; the message is what
    # a user needs, so at most 20 lines are quoted.
    return "\n".join(lines[:20]) or "(LLVM printed nothing)"


def assembly(module: ir.Module, triple: str, cpu: str, features: str, kernels: list[str]) -> str:
    """The module's assembly (AMDGPU) or PTX text for ``cpu``, emitted in a worker.

    An LLVM abort raises CodegenError naming the kernels and the target and
    quoting LLVM's message. Warnings LLVM prints are discarded.
    """
    try:
        text, _ = _run(emission_pool(), _emit, triple, cpu, features, module.ref.as_bitcode())
    except _Aborted as e:
        raise CodegenError(
            f"LLVM aborted while generating code for {cpu} (kernel{'s' if len(kernels) > 1 else ''} "
            f"{', '.join(kernels)}; {e.status}):\n{_quote(e.printed)}\n"
            "The IR verifies but LLVM cannot compile it for this target: an intrinsic or "
            "feature the processor lacks is the usual cause (e.g. MFMA on gfx11, wgmma on "
            "sm_90 instead of sm_90a)."
        ) from None
    return str(text)


_probed: dict[tuple[str, str, str], str] = {}


def check_target(triple: str, cpu: str, features: str = "") -> str:
    """"" when LLVM knows processor ``cpu`` and ``features`` for ``triple``,
    else LLVM's complaint (e.g. "'sm_1' is not a recognized processor ...").
    Cached per process.
    """
    key = (triple, cpu, features)
    if key not in _probed:
        try:
            _, printed = _run(emission_pool(), _create_target_machine, triple, cpu, features)
        except _Aborted as e:
            raise CodegenError(
                f"LLVM aborted creating a target machine for {cpu}{' with ' + features if features else ''}: "
                f"{_quote(e.printed)}"
            ) from None
        complaints = [line.strip() for line in printed.splitlines()
                      if _UNKNOWN_PROCESSOR in line or _UNKNOWN_FEATURE in line]
        _probed[key] = "; ".join(dict.fromkeys(complaints))
    return _probed[key]


_listed: dict[str, tuple[str, ...]] = {}


def known_processors(triple: str) -> tuple[str, ...]:
    """The processors LLVM (llvmlite's) knows for ``triple``, sorted; cached.

    LLVM prints this list once per process, so a pool of its own starts a
    worker for it (only when an error message needs it).
    """
    if triple not in _listed:
        pool = CompilePool(1)
        try:
            _, printed = _run(pool, _create_target_machine, triple, "help", "")
        except _Aborted as e:
            raise CodegenError(f"LLVM aborted listing the processors of {triple}: {_quote(e.printed)}") from None
        finally:
            pool.close()
        listing = printed.split("Available CPUs for this target:", 1)[-1]
        listing = listing.split("Available features for this target:", 1)[0]
        _listed[triple] = tuple(sorted(re.findall(r"^\s+(\S+)\s+- ", listing, re.MULTILINE)))
    return _listed[triple]
