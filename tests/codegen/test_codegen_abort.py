"""An LLVM fatal error ("LLVM ERROR: Cannot select ...",
then abort()) costs one compile, not the process. Emission runs in a worker
process of the compile pool; its death becomes a CodegenError quoting LLVM,
naming the kernel and the target, and a new worker takes the next compile."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from pyhipbench.codegen import CodegenError, compile_ir, emit, ir

import pool_tasks
from codegen_helpers import IR_DATA, require_toolchain

# Verifies everywhere, selects only on processors with MFMA (gfx90a/gfx942/gfx950).
MFMA = (IR_DATA / "mfma.ll").read_text()

# What Triton's Hopper matmul IR holds: wgmma, which only sm_90a can select.
WGMMA = (IR_DATA / "wgmma.ll").read_text()

COPY = """
target triple = "nvptx64-nvidia-cuda"
define ptx_kernel void @copy(ptr addrspace(1) %p, i32 %v) {
  store i32 %v, ptr addrspace(1) %p
  ret void
}
"""


def test_mfma_on_gfx1100_is_a_codegen_error_not_an_abort():
    require_toolchain("gfx1100")
    with pytest.raises(CodegenError, match=r"(?s)LLVM aborted while generating code for gfx1100 "
                       r"\(kernel mfma_tile; killed by SIGABRT\):\n"
                       r"LLVM ERROR: Cannot select: intrinsic %llvm\.amdgcn\.mfma\.f32\.32x32x8f16"
                       r".*MFMA on gfx11"):
        compile_ir(MFMA, "gfx1100")


def test_the_same_mfma_ir_compiles_for_gfx942():
    require_toolchain("gfx942")
    code = compile_ir(MFMA, "gfx942")
    assert code.kernels == ("mfma_tile",) and code.verification.ok


def test_wgmma_for_sm_90_is_a_codegen_error_and_compiles_for_sm_90a():
    with pytest.raises(CodegenError, match=r"(?s)generating code for sm_90 \(kernel matmul_kernel; "
                       r"killed by SIGABRT\):\nLLVM ERROR: Cannot select: intrinsic "
                       r"%llvm\.nvvm\.wgmma\.\w+\.sync\.aligned\n.*wgmma on sm_90 instead of sm_90a"):
        compile_ir(WGMMA, "sm_90")
    ptx = compile_ir(WGMMA, "sm_90a").data.decode()
    assert ".target sm_90a" in ptx and "wgmma.fence.sync.aligned;" in ptx


def test_compiling_goes_on_after_an_abort():
    with pytest.raises(CodegenError, match="LLVM aborted"):
        compile_ir(WGMMA, "sm_90")
    assert ".visible .entry copy(" in compile_ir(COPY, "sm_90").data.decode()


def test_an_abort_names_every_kernel_of_the_module():
    two = WGMMA + """
define ptx_kernel void @second(ptr addrspace(1) %out) {
  call void @llvm.nvvm.wgmma.fence.sync.aligned()
  ret void
}
"""
    with pytest.raises(CodegenError, match=r"for sm_90 \(kernels matmul_kernel, second; killed by SIGABRT\)"):
        compile_ir(two, "sm_90")


def worker_pid() -> int:
    """The pid of one of the emission's workers (an idle one: this process compiles nothing meanwhile)."""
    return emit.emission_pool().submit(os.getpid).result(timeout=60).value


def test_the_worker_is_reused_across_compiles():
    compile_ir(COPY, "sm_90")
    started = len(emit.emission_pool().startup_s)
    compile_ir(COPY, "sm_90")
    assert len(emit.emission_pool().startup_s) == started


def test_a_worker_that_died_while_idle_is_replaced():
    compile_ir(COPY, "sm_90")
    pid = worker_pid()
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:  # until the pool has seen it end
        time.sleep(0.01)
    assert ".visible .entry copy(" in compile_ir(COPY, "sm_90").data.decode()
    assert worker_pid() != pid


def test_threads_compile_in_parallel_workers():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: compile_ir(COPY, "sm_90").data, range(8)))
    assert len(set(results)) == 1 and b".visible .entry copy(" in results[0]


def test_a_forked_child_starts_its_own_worker():
    """The child's emission runs in a worker it started, not in one of its parent's."""
    def workers_parent() -> int:
        return emit.emission_pool().submit(pool_tasks.starter_pid).result(timeout=60).value

    compile_ir(COPY, "sm_90")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            ok = b"copy" in compile_ir(COPY, "sm_90").data and workers_parent() == os.getpid()
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)
    assert b"copy" in compile_ir(COPY, "sm_90").data and workers_parent() == os.getpid()


def test_a_worker_that_cannot_start_is_a_codegen_error(monkeypatch, tmp_path):
    emit.emission_pool().close()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(CodegenError, match=rf"^cannot start a compile worker \({tmp_path}/no-python\): "
                       r".*No such file"):
        emit.assembly(ir.parse(COPY), "nvptx64-nvidia-cuda", "sm_90", "", ["copy"])
