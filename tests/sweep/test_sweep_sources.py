"""Sweep candidates from CUDA C++ source (real NVRTC, on the CPU) and Triton functions (real Triton),
measured by the real scheduler and Worker on a fake CUDA device in this process, and read from space files."""
from __future__ import annotations

import json
import pickle
import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): the Triton "
                                                "sweep source's tests need it")

import pyhipbench as hb
from pyhipbench import (
    BenchError,
    Candidate,
    CompileTarget,
    CudaSource,
    HipSource,
    IRSource,
    Store,
    TritonSource,
    candidates_from_json,
    load_space,
)
from pyhipbench._codeobject import elf
from pyhipbench._codeobject import image as codeobject
from pyhipbench._device.backends.base import KernelParam
from pyhipbench._sweep.scheduler import run
from pyhipbench._sweep.worker import INVALID
from pyhipbench.errors import CodegenError

from codegen_helpers import require_nvrtc, require_toolchain
from fakes.build import HIPRTC_LIBRARY_NAME, build_fake
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from fakes.host_backend import HostBackend
from sweep_helpers import ARGS, FAST, InProcess, sweep_environment

CUDA = """
extern "C" __global__ void copy(const float* src, float* dst, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
template <int N> __global__ void scale(const float* src, float* dst, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i] * N;
}
"""
SCALE_LOWERED = "_Z5scaleILi2EEvPKfPfl"  # scale<2>, as NVRTC mangles it
TRITON_ADD = {"kind": "triton", "function": "triton_kernels:add", "constexprs": {"BLOCK": 256}, "num_warps": 4}
TRITON_ARGS = ["array:float32:4096", "array:float32:4096", "array:float32:4096", "int64:4096"]


EIFMT_SVAL, EIATTR_KPARAM_INFO = 4, 0x17  # a cubin's .nv.info attribute format and kind


def cubin_params(image: bytes) -> dict[str, list[KernelParam]]:
    """Each kernel's parameters in a cubin, as the CUDA driver reads them: from its .nv.info.<kernel>
    section's KPARAM_INFO attributes (index, ordinal, offset, flags with the size in bits 18-31)."""
    cubin, kernels = elf.ElfFile(image), {}
    for section in cubin.sections:
        if not section.name.startswith(".nv.info."):
            continue
        data, at, params = cubin.data(section), 0, {}
        while at < len(data):
            form, attribute = data[at], data[at + 1]
            size = struct.unpack_from("<H", data, at + 2)[0] if form == EIFMT_SVAL else 2 * (form == 3)
            if attribute == EIATTR_KPARAM_INFO:
                _index, ordinal, offset, flags = struct.unpack_from("<IHHI", data, at + 4)
                params[ordinal] = KernelParam(f"param_{ordinal}", offset, (flags >> 18) & 0x3FFF)
            at += 2 + (2 + size if form == EIFMT_SVAL else size)
        kernels[section.name[len(".nv.info."):]] = [params[i] for i in sorted(params)]
    return kernels


class CubinHost(HostBackend):
    """A HostBackend that also lists a cubin's kernels and their parameters (the plain one cannot)."""

    def load_module(self, image: bytes) -> int:
        handle = super().load_module(image)
        if codeobject.detect_format(image) == "cubin":
            self.modules[handle] = cubin_params(image)
        return handle

    def kernel_params(self, module: int, function: int) -> list[KernelParam] | None:
        params = self.modules[module]
        return None if params is None else params[sorted(params)[function - module - 1]]


@pytest.fixture
def cuda_device(fake_libraries, fake_driver_cuda):
    return hb.Device.from_backend(CubinHost(backend="cuda", arch="sm_90"),
                                  hb._core.load_driver("cuda", str(fake_libraries["cuda"])))


def space(tmp_path: Path) -> list[Candidate]:
    """A CUDA source (two kernels, one a template), a Triton function, and one failing compile of each."""
    (tmp_path / "k.cu").write_text(CUDA)
    (tmp_path / "space.json").write_text(json.dumps({
        "defaults": {"bench": {**FAST, "timer": "events"}, "args": ARGS, "grid": [16]},
        "candidates": [
            {"source": {"kind": "cuda-source", "path": "k.cu", "name_expressions": ["scale<2>"]},
             "kernel": "copy", "block": [256]},
            {"source": {"kind": "cuda-source", "path": "k.cu", "name_expressions": ["scale<2>"]},
             "kernel": "scale<2>", "block": [128]},
            {"source": {"kind": "cuda-source", "text": CUDA + "\nnot C++;\n", "options": ["-DTILE=4"]},
             "kernel": "copy", "block": [256]},
            {"source": TRITON_ADD, "args": TRITON_ARGS},
            {"source": {**TRITON_ADD, "constexprs": {"BLOCK": 100}}, "args": TRITON_ARGS},
        ]}))
    return load_space(tmp_path / "space.json")


def test_a_sweep_of_cuda_source_and_triton_candidates(tmp_path, cuda_device, fake_driver_cuda, monkeypatch):
    require_nvrtc()
    candidates = space(tmp_path)
    assert candidates[0].source is candidates[1].source  # the file is read once, compiled once
    summary = run(candidates, Store(tmp_path / "r.db"), InProcess(cuda_device), compile_workers=1)
    assert (summary.measured, summary.failed) == (3, 2)
    rows = {cid: (status, reason, error, json.loads(result) if result else None)
            for cid, status, reason, error, result in sqlite3.connect(tmp_path / "r.db").execute(
                "SELECT candidate_id, status, reason, error, result FROM results")}
    copy, scale, bad_cuda, add, bad_triton = (rows[c.id] for c in candidates)
    assert copy[3]["kernel"] == "copy" and copy[3]["block"] == [256, 1, 1]
    assert scale[3]["kernel"] == SCALE_LOWERED  # launched by the name expression's lowered name
    assert bad_cuda[:2] == ("failed", INVALID)
    assert bad_cuda[2].startswith("CodegenError: NVRTC could not compile source.cu for sm_90a")
    assert "not C++" in bad_cuda[2] and "error" in bad_cuda[2]  # the compiler's log
    # Triton's launch facts: num_warps 4 x 32 threads, its shared memory; n=4096 an i32 as Triton's launcher makes it.
    assert add[0] == "ok" and add[3]["kernel"] == "add" and add[3]["block"] == [128, 1, 1]
    assert bad_triton[:2] == ("failed", INVALID)
    assert bad_triton[2].startswith("CodegenError: Triton could not compile 'add' for sm_90 with BLOCK=100")
    launches = fake_driver_cuda.records("cuLaunchKernel")
    assert {(r.grid[0], r.block[0]) for r in launches} == {(16, 256), (16, 128)}  # copy; scale<2> and add


def test_a_racing_sweep_passes_the_bound_to_a_triton_kernel(tmp_path, cuda_device,
                                                                                     monkeypatch):
    # The fake driver times num_warps 4 (128 threads) at 2 µs a launch, 8 (256) at 7 ± 0.5 µs, alternating.
    monkeypatch.setenv("FAKE_LAUNCH_US_BY_BLOCK", "128:2,256:7~0.5")
    candidates = candidates_from_json({
        "defaults": {"bench": {"cache": "warm", "max_time_s": 0.5, "timer": "events"}, "grid": [16],
                     "args": TRITON_ARGS},
        "candidates": [{"source": TRITON_ADD}, {"source": {**TRITON_ADD, "num_warps": 8}}]})
    summary = run(candidates, Store(tmp_path / "r.db"), InProcess(cuda_device), race=True)
    assert (summary.measured, summary.failed) == (2, 0)
    rows = {cid: (stop, ci_high, json.loads(result)["slower_than_us"], json.loads(result)["block"]) for
            cid, stop, ci_high, result in sqlite3.connect(tmp_path / "r.db").execute(
                "SELECT candidate_id, stop_reason, ci_high_us, result FROM results")}
    fast, slow = (rows[c.id] for c in candidates)
    assert fast[0] == "precision" and fast[2] is None and fast[3] == [128, 1, 1]
    assert slow[0] == "slower" and slow[2] == fast[1] and slow[3] == [256, 1, 1]  # raced the first's bound


SM90 = CompileTarget("sm_90", 13000, ("cuda", 90, 32))


def test_a_triton_compile_fixes_the_launch_as_triton_s_launcher_makes_it():
    """On the CPU: the cubin, the block (num_warps x 32), the arguments the kernel keeps (the strides equal
    to 1 folded in as constants), numbers typed as Triton typed them (an int64 spec of 64 passed as i32),
    and no scratch buffer where Triton asks for none."""
    n = 64
    args = tuple(hb._launch.arg_spec.parse_arg(a) for a in
                 [f"array:float16:{n * n}"] * 3 + [f"int64:{n}"] * 3 + [f"int32:{n}", "int32:1"] * 3)
    source = TritonSource("triton_kernels:matmul", {"BM": 64, "BN": 64, "BK": 32}, num_warps=4)
    code = source.compile(SM90, args)
    assert codeobject.detect_format(code.data) == "cubin"
    launch = code.launch
    assert (launch.kernel, launch.block) == ("matmul", (128, 1, 1)) and launch.shared_bytes > 0
    assert launch.params == ((0, None), (1, None), (2, None), (3, "int32"), (4, "int32"), (5, "int32"),
                             (6, "int32"), (8, "int32"), (10, "int32"))
    made = launch.args(args, (1, 1, 1))
    assert made[:3] == args[:3] and made[3] == hb._launch.arg_spec.ScalarSpec("int32", n)
    assert made[9:] == (hb._launch.arg_spec.ScalarSpec("uint64", 0),) * 2  # null scratch pointers


def test_triton_s_global_scratch_becomes_one_buffer_for_the_grid_not_rotated():
    args = tuple(hb._launch.arg_spec.parse_arg(a) for a in
                 ["array:float32:16384", "array:float32:16384", "int32:256", "int32:64"])
    code = TritonSource("triton_kernels:descriptor_copy", {"BM": 64, "BN": 64}).compile(SM90, args)
    per_program = code.launch.scratch_bytes[0]
    assert per_program > 0
    scratch = code.launch.args(args, (4, 1, 1))[4]
    assert scratch == hb._launch.arg_spec.ArraySpec("uint8", 4 * per_program, shared=True)


def test_a_triton_compile_that_cannot_be_specialised_names_the_argument():
    with pytest.raises(BenchError, match=r"Triton kernel 'add' takes \(x, y, out, n, BLOCK\)"):
        TritonSource("triton_kernels:add", {"BLOCK": 64}).compile(SM90, ())
    with pytest.raises(BenchError, match="no Triton target is known"):
        TritonSource("triton_kernels:add", {"BLOCK": 64}).compile(CompileTarget("sm_90"), ())


def test_a_triton_parameter_left_to_its_default_is_refused_by_name():
    """The launch passes the candidate's args by position: a parameter the kernel keeps needs a value."""
    args = tuple(hb._launch.arg_spec.parse_arg(a) for a in ["array:float32:1024", "array:float32:1024", "int32:1024"])
    with pytest.raises(BenchError) as refused:
        TritonSource("triton_kernels:scale_by_default").compile(SM90, args)
    assert str(refused.value) == ("parameter factor of triton_kernels:scale_by_default takes its default; expected "
                                  "a value for every parameter that is not a constexpr in args (3 given)")


def test_cuda_source_compiles_on_the_cpu_and_names_its_kernels():
    require_nvrtc()
    source = CudaSource(CUDA, name_expressions=("scale<2>",))
    code = source.compile(CompileTarget("sm_90", 13000))
    assert hb._codeobject.image.detect_format(code.data) == "cubin"
    assert code.kernel_name("scale<2>") == SCALE_LOWERED and code.kernel_name("copy") == "copy"
    with pytest.raises(CodegenError, match="cuda-source text: CUDA C.. compiles for NVIDIA GPUs; the sweep's "
                                           "GPUs are gfx942, expected a hip-source"):
        source.compile(CompileTarget("gfx942"))
    with pytest.raises(CodegenError, match="hip-source text: HIP C.. compiles for AMD GPUs; the sweep's GPUs are "
                                           "sm_90, expected a cuda-source"):
        HipSource(CUDA).compile(CompileTarget("sm_90"))


def test_candidate_ids_cover_the_new_fields():
    def cuda(**fields) -> str:
        return Candidate(CudaSource(**{"text": CUDA, **fields}), "copy", 4, 64, ARGS).id

    def add(**fields) -> str:
        source = TritonSource(**{"function": "triton_kernels:add", "constexprs": {"BLOCK": 256}, **fields})
        return Candidate(source, source.kernel_name, 4, args=TRITON_ARGS).id

    ids = [cuda(), cuda(text=CUDA + " "), cuda(options=("-DTILE=4",)), cuda(name_expressions=("scale<2>",)),
           add(), add(constexprs={"BLOCK": 128}), add(num_warps=8), add(num_stages=2),
           add(function="triton_kernels:scale")]
    assert len(set(ids)) == len(ids)
    assert cuda() == cuda() and add() == add()
    source = TritonSource("triton_kernels:add", {"BLOCK": 256}, 4)
    assert pickle.loads(pickle.dumps(source)) == source
    assert source.to_json() == {"kind": "triton", "function": "triton_kernels:add",
                                "sha256": source.source_sha256, "constexprs": {"BLOCK": 256}, "num_warps": 4,
                                "num_stages": None}


@pytest.mark.parametrize("source, fields, error, message", [
    ({"kind": "cuda-source"}, {"block": 1}, BenchError, "expected exactly one of path, text"),
    ({"kind": "cuda-source", "text": CUDA, "options": "-O3"}, {"block": 1}, BenchError,
     "options='-O3': expected a list of non-empty strings"),
    ({"kind": "cuda-source", "path": "none.cu"}, {"block": 1}, BenchError, "CUDA C.. source '.*none.cu' is not a file"),
    ({"kind": "hip-source", "text": CUDA, "flags": []}, {"block": 1}, BenchError,
     r"hip-source source: unknown field\(s\) flags"),
    ({"kind": "triton", "function": "triton_kernels.add"}, {}, BenchError,
     "function='triton_kernels.add': expected \"module:function\""),
    ({"kind": "triton", "function": "no_such_module:add"}, {}, BenchError,
     "function='no_such_module:add': cannot import 'no_such_module'"),
    ({"kind": "triton", "function": "triton_kernels:nothing"}, {}, BenchError,
     "function='triton_kernels:nothing': triton_kernels has no @triton.jit function 'nothing'"),
    ({"kind": "triton", "function": "triton_kernels:add", "constexprs": {"BLOK": 4}}, {}, BenchError,
     r"constexprs: 'BLOK' is not a tl.constexpr parameter of triton_kernels:add \(BLOCK\)"),
    ({"kind": "triton", "function": "triton_kernels:add", "constexprs": {"n": 4}}, {}, BenchError,
     r"constexprs: 'n' is not a tl.constexpr parameter of triton_kernels:add \(BLOCK\); its other parameters "
     "come from args"),
    ({"kind": "triton", "function": "triton_kernels:add", "num_warps": 0}, {}, BenchError, "num_warps=0: out of range"),
    ({"kind": "triton", "function": "triton_kernels:add"}, {"block": [128]}, BenchError,
     "block=.128.*: a Triton kernel's block .num_warps x warp size. and shared memory come from its compile"),
    ({"kind": "triton", "function": "triton_kernels:add"}, {"kernel": "scale"}, BenchError,
     "kernel='scale': a Triton source's kernel is its function, expected 'add'"),
    ({"kind": "llvm-ir", "text": "; IR"}, {}, BenchError, "missing block"),
    ({"kind": "llvm-ir", "path": __file__, "text": "; IR"}, {"block": 1}, BenchError,  # the text was ignored
     "expected exactly one of path, text"),
])
def test_bad_source_fields_are_named(tmp_path, source, fields, error, message):
    with pytest.raises(error, match=f"candidate 0: .*{message}"):
        candidates_from_json([{"source": source, "kernel": "add", "grid": 1, **fields}], tmp_path)


HIP = 'extern "C" __global__ void copy(const float* src, float* dst, long n) { /* ... */ }\n'


def test_hip_source_and_triton_in_worker_processes(fake_hip_library, tmp_path, monkeypatch):  # noqa: F811 (the fixture imported above)
    """The local pool's spawned workers on a fake MI300X: HIP C++ through hiprtc in the compiler pool
    (the fake libhiprtc answers with a real gfx942 HSACO), Triton compiled in the compiler pool for gfx942."""
    require_hip_python()
    require_toolchain("gfx942")
    from pyhipbench.codegen import compile_ir
    hsaco = tmp_path / "kernels.hsaco"
    compile_ir(Path(__file__).parents[1] / "data" / "ir" / "kernels_gfx942.ll", "gfx942").save(hsaco)
    hiprtc = build_fake(tmp_path / "fake-hiprtc", HIPRTC_LIBRARY_NAME)
    for name, value in {**sweep_environment(fake_hip_library, devices=1), "FAKE_HIPRTC_CODE_OBJECT": str(hsaco),
                        "LD_LIBRARY_PATH": f"{fake_hip_library.parent}:{hiprtc.parent}",
                        "AMDGCN_USE_BUFFER_OPS": "0"}.items():  # Triton's buffer loads would need torch
        monkeypatch.setenv(name, value)
    candidates = candidates_from_json({
        "defaults": {"bench": {**FAST, "timer": "events"}, "grid": [16]},
        "candidates": [
            {"source": {"kind": "hip-source", "text": HIP, "options": ["-DTILE=4"]}, "kernel": "copy",
             "block": [256], "args": ARGS},
            {"source": {"kind": "hip-source", "text": HIP + "#error no tile\n"}, "kernel": "copy", "block": [256],
             "args": ARGS},
            {"source": TRITON_ADD, "args": TRITON_ARGS}]})
    summary = hb.sweep(candidates, db=tmp_path / "r.db", progress=False, compile_workers=1)
    assert (summary.measured, summary.failed, summary.gpus) == (2, 1, 1)
    rows = {cid: (status, reason, error, json.loads(result) if result else None)
            for cid, status, reason, error, result in sqlite3.connect(tmp_path / "r.db").execute(
                "SELECT candidate_id, status, reason, error, result FROM results")}
    copy, broken, add = (rows[c.id] for c in candidates)
    assert copy[0] == "ok" and copy[3]["target"].startswith("gfx942")
    assert broken[:2] == ("failed", INVALID)
    assert broken[2].startswith("CodegenError: hiprtc could not compile source.hip for gfx942")
    assert "source.hip:2:2: error: no tile" in broken[2]  # the compiler's log
    assert add[0] == "ok" and add[3]["block"] == [256, 1, 1]  # num_warps 4 x AMD's wave of 64


@pytest.mark.parametrize("value, kept", [(True, True), (np.True_, True), (np.False_, False), (None, None)])
def test_an_ir_sources_icache_flush_takes_bools_numpy_bools_included(value, kept):
    source = IRSource(b'target triple = "amdgcn-amd-amdhsa"\n', icache_flush=value)
    assert source.icache_flush is kept
    candidate = Candidate(source, "k", (1,), (64,))
    assert candidate.id == Candidate(IRSource(source.ir, icache_flush=kept), "k", (1,), (64,)).id


@pytest.mark.parametrize("value", [1, 0, "yes", 1.0])
def test_an_ir_sources_icache_flush_refuses_what_is_not_a_bool(value):
    with pytest.raises(BenchError, match=r"^icache_flush=.*: expected True, False or None \(the default\)$"):
        IRSource(b'target triple = "amdgcn-amd-amdhsa"\n', icache_flush=value)
