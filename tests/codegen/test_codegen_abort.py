"""An LLVM fatal error ("LLVM ERROR: Cannot select ...",
then abort()) costs one compile, not the process. Emission runs in a worker
process; its death becomes a CodegenError quoting LLVM, naming the kernel
and the target, and the next compile starts a new worker."""

from __future__ import annotations

import signal

import pytest

from pyhipbench.codegen import CodegenError, compile_ir, emit, ir

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


def test_the_worker_is_reused_across_compiles():
    compile_ir(COPY, "sm_90")
    worker = emit._idle[-1]
    compile_ir(COPY, "sm_90")
    assert emit._idle[-1] is worker and worker.alive()


def test_a_worker_that_died_while_idle_is_replaced():
    compile_ir(COPY, "sm_90")
    worker = emit._idle[-1]
    worker.process.send_signal(signal.SIGKILL)
    worker.process.wait()
    assert ".visible .entry copy(" in compile_ir(COPY, "sm_90").data.decode()
    assert worker not in emit._idle and all(w.alive() for w in emit._idle)


def test_threads_compile_in_parallel_workers():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: compile_ir(COPY, "sm_90").data, range(8)))
    assert len(set(results)) == 1 and b".visible .entry copy(" in results[0]
    assert all(w.alive() for w in emit._idle)


def test_a_forked_child_starts_its_own_worker():
    import os
    compile_ir(COPY, "sm_90")
    parents = list(emit._idle)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: must not talk to the parent's workers
        try:
            ok = not emit._idle and b"copy" in compile_ir(COPY, "sm_90").data
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)
    assert emit._idle[: len(parents)] == parents and all(w.alive() for w in parents)
    assert b"copy" in compile_ir(COPY, "sm_90").data


def test_a_worker_that_cannot_start_is_a_codegen_error(monkeypatch, tmp_path):
    emit._close_workers()
    monkeypatch.setattr(emit.sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(CodegenError, match=rf"^cannot start the code generator process \({tmp_path}/no-python\): "
                       r".*No such file"):
        emit.assembly(ir.parse(COPY), "nvptx64-nvidia-cuda", "sm_90", "", ["copy"])


def test_a_worker_found_dead_only_on_sending_is_replaced(monkeypatch):
    compile_ir(COPY, "sm_90")
    worker = emit._idle[-1]
    worker.process.send_signal(signal.SIGKILL)
    worker.process.wait()
    monkeypatch.setattr(worker, "alive", lambda: True)  # as if it died after the check
    assert ".visible .entry copy(" in compile_ir(COPY, "sm_90").data.decode()
    assert worker not in emit._idle
