"""Shared by the IR/codegen tests: test data, and the LLVM toolchain rule.

The AMD code generation tests need llvm-mc, ld.lld and llvm-objdump. Where
they are missing the tests skip with the reason, except in CI (CI=true),
where a missing toolchain is a failure: CI must run the real code
generation and disassembly.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from pyhipbench.codegen.source import compile_source
from pyhipbench.codegen.toolchain import Toolchain, ToolchainError, find_toolchain

IR_DATA = Path(__file__).parent / "data" / "ir"
AMD_TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require(what: str, reason: str) -> None:
    """Skip with ``reason`` for want of ``what``; fail instead in CI."""
    if in_ci():
        pytest.fail(f"CI must provide {what}: {reason}")
    pytest.skip(f"needs {what}: {reason}")


def require_toolchain(mcpu: str) -> Toolchain:
    try:
        return find_toolchain(mcpu)
    except ToolchainError as e:
        require(f"an LLVM toolchain for {mcpu}", str(e))


def many_kernels(n: int) -> str:
    """AMD IR text with `n` small kernels k0 .. k{n-1}: for compile-time scaling."""
    return 'target triple = "amdgcn-amd-amdhsa"\n' + "".join(
        f"define amdgpu_kernel void @k{i}(ptr addrspace(1) %p, i32 %v) {{\n"
        f"  %q = getelementptr i32, ptr addrspace(1) %p, i32 {i}\n"
        "  store i32 %v, ptr addrspace(1) %q\n  ret void\n}\n"
        for i in range(n)
    )


FLUSH = ["s_icache_inv"] + ["s_nop 0"] * 16  # the prologue, as llvm-objdump prints it


def disassemble(code_object: bytes, mcpu: str, tmp_path: Path) -> dict[str, list[str]]:
    """Function symbol -> its instructions, from llvm-objdump."""
    path = tmp_path / f"{mcpu}.hsaco"
    path.write_bytes(code_object)
    tools = require_toolchain(mcpu)
    listing = subprocess.run([tools.disassembler, "-d", f"--mcpu={mcpu}", path],
                             capture_output=True, text=True, check=True).stdout
    functions: dict[str, list[str]] = {}
    current = None
    for line in listing.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            current = functions.setdefault(m.group(1), [])
        elif current is not None and line.startswith("\t"):
            current.append(" ".join(line.split("//")[0].split()))
    return functions


def require_nvrtc() -> None:
    """Skips without libnvrtc, or fails in CI, where the test dependencies install it (nvidia-cuda-nvrtc)."""
    try:
        compile_source("sm_90", 'extern "C" __global__ void k() {}')
    except ToolchainError as e:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must provide NVRTC: {e}", pytrace=False)
        pytest.skip(f"needs NVRTC (pip install nvidia-cuda-nvrtc): {e}")
