"""The examples (examples/*.py, run by hand on a GPU) on the CPU.

Their compile, tuning and bench steps run against the fake CUDA driver with pyhipbench arrays in
place of torch tensors; the fake driver runs no kernel, so the examples' output checks are
switched off by their explicit parameters (`check_output=False`, `reference=None`), and where an
output check can still be exercised (a reference equal to the untouched output) it is. The scripts
themselves, run without torch or without a GPU, must say so and exit with status 1.
"""
from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyhipbench as hb
import pyhipbench.triton as ht
from pyhipbench import _core
from pyhipbench._codeobject import elf
from pyhipbench._device.backends.base import KernelParam

from codegen_helpers import require_nvrtc
from fakes.host_backend import HostBackend

EXAMPLES = Path(__file__).parents[2] / "examples"


def load(name: str):
    """examples/<name>.py as a module (not run as a script: its main() is not called)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(name: str, torch_stub: str) -> subprocess.CompletedProcess:
    """examples/<name>.py run as a script in a fresh interpreter whose `import torch` is `torch_stub`'s doing."""
    script = (f"import runpy, sys, types\n{torch_stub}\n"
              f"runpy.run_path({str(EXAMPLES / f'{name}.py')!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)


NO_TORCH = "sys.modules['torch'] = None  # as on a machine without torch"
NO_GPU = ("torch = types.ModuleType('torch'); torch.__version__ = '2.9.0+cpu'\n"
          "torch.cuda = types.SimpleNamespace(is_available=lambda: False)  # torch without a CUDA device\n"
          "sys.modules['torch'] = torch")


# -- examples/triton_matmul_tune.py ------------------------------------------

@pytest.fixture
def matmul_example():
    pytest.importorskip("triton", reason="Triton is not installed (pip install triton): the example needs it")
    return load("triton_matmul_tune")


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_triton_matmul_tune_on_the_fake_driver(matmul_example, device, fake_driver, monkeypatch):
    """Every config compiles for sm_90 and is timed; the fake's launch time depends on the block
    (4 warps: 9 µs, 8 warps: 4 µs), so the first 8-warp config wins; shared memory above 48 KB
    reaches the launches."""
    real_bench = ht._bench.bench_with

    def bench_with_fake_time(launches, options, **launch):
        fake_driver.lib.fake_set_launch_ms({128: 9.0, 256: 4.0}[launches[0].block[0]] / 1000)
        return real_bench(launches, options, **launch)
    monkeypatch.setattr(ht._bench, "bench_with", bench_with_fake_time)

    a, b, c = (device.empty((256, 512), np.float16), device.empty((512, 384), np.float16),
               device.empty((256, 384), np.float16))
    tuning, matches = matmul_example.tune(device, a, b, c, check_output=False, iterations=3, warmup_samples=0,
                                          timer="events")
    configs = matmul_example.CONFIGS
    assert matches is None and not tuning.failed and tuning.key == (256, 384, 512, "float16", "float16", "float16")
    assert tuning.best is configs[3]  # 128x128x64 w8 s3: the first 8-warp config
    results = [row.result for row in tuning.results]
    assert [r.median_us for r in results] == pytest.approx([9.0, 9.0, 9.0, 4.0, 4.0], rel=1e-4)
    assert all(r.samples == 3 and r.timer == "events" and r.cache_state == "clean-cold" for r in results)
    assert all(r.ci_us[0] <= r.median_us <= r.ci_us[1] for r in results)
    shared = [r.config.shared_bytes for r in results]
    assert shared == [s * 1024 for s in (24, 48, 64, 96, 144)]  # as the example's comment says
    assert [r.config.grid for r in results] == [(4, 6, 1), (2, 6, 1), (2, 3, 1), (2, 3, 1), (2, 2, 1)]
    launches = fake_driver.records("cuLaunchKernel")
    assert set(shared) <= {r.shared_bytes for r in launches} and max(shared) > 48 * 1024  # (0: the clean step)

    lines = matmul_example.report(tuning)
    assert len(lines) == 6 and lines[-1] == "winner: 128x128x64 w8 s3, 4.00 µs"
    assert lines[3].startswith("128x128x64 w8 s3      96 KB shared  median      4.00 µs (95 % CI 4.00-4.00)")
    assert lines[0].endswith("timer events, cache clean-cold, 3 samples")


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_triton_matmul_tune_reports_a_config_that_failed(matmul_example, device, monkeypatch):
    """A config over the device's shared-memory limit is reported with its error, not as a time."""
    a, b, c = (device.empty((256, 256), np.float16) for _ in range(3))
    monkeypatch.setattr(matmul_example, "CONFIGS", matmul_example.CONFIGS[:1] + [
        matmul_example.triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128}, num_warps=8, num_stages=4)])
    tuning, _ = matmul_example.tune(device, a, b, c, check_output=False, iterations=2, warmup_samples=0, timer="events")
    (failed,) = tuning.failed
    assert failed.error.startswith("BenchError: shared_bytes=524288: out of range") and "232448" in failed.error
    lines = matmul_example.report(tuning)
    assert lines[1] == f"256x256x128 w8 s4  failed: {failed.error}" and lines[-1].startswith("winner: 64x64x32 w4 s3, ")


# -- examples/cuda_source_with_torch.py --------------------------------------

EIFMT_SVAL, EIATTR_KPARAM_INFO = 4, 0x17  # an .nv.info record with a payload; a parameter's index, offset, size


def cubin_kernels(image: bytes) -> dict[str, list[KernelParam]]:
    """Kernel name -> parameters, read from a cubin's .nv.info.<kernel> sections (their
    EIATTR_KPARAM_INFO records) as the CUDA driver's cuFuncGetParamInfo reports them."""
    cubin = elf.ElfFile(image, "cubin")
    found = {}
    for section in cubin.sections:
        if not section.name.startswith(".nv.info."):
            continue
        data, position, params = cubin.data(section), 0, []
        while position < len(data):
            form, attribute, size = struct.unpack_from("<BBH", data, position)
            position += 4
            if form == EIFMT_SVAL:
                if attribute == EIATTR_KPARAM_INFO:
                    _, ordinal, offset, flags = struct.unpack_from("<IHHI", data, position)
                    params.append(KernelParam(f"param{ordinal}", offset, (flags >> 18) & 0x3FFF))
                position += size
        found[section.name.removeprefix(".nv.info.")] = sorted(params, key=lambda p: p.offset)
    return found


class CubinBackend(HostBackend):
    """The host backend, which lists no cubin's kernels (only a driver can), plus the cubin's
    kernels and parameters as the CUDA driver reads them."""

    def load_module(self, image: bytes) -> int:
        handle = super().load_module(image)
        if self.modules[handle] is None:
            self.modules[handle] = cubin_kernels(image)
        return handle

    def kernel_params(self, module: int, function: int) -> list[KernelParam]:
        kernels = self.modules[module]
        return kernels[sorted(kernels)[function - module - 1]]  # function(): module + 1 + the name's rank


@pytest.fixture
def softmax_example():
    require_nvrtc()
    return load("cuda_source_with_torch")


@pytest.fixture
def cubin_device(fake_libraries, fake_driver_cuda):
    """A fake CUDA device (an H200's sm_90) that loads NVRTC's cubins."""
    return hb.Device.from_backend(CubinBackend(backend="cuda", arch="sm_90"),
                                  _core.load_driver("cuda", str(fake_libraries["cuda"])))


def test_cuda_source_with_torch_on_the_fake_driver(softmax_example, cubin_device, fake_driver_cuda):
    device, fake_driver = cubin_device, fake_driver_cuda
    fake_driver.read_args(3)
    kernel = softmax_example.compile_softmax(device)
    assert kernel.name == "_Z11row_softmaxIfLi256EEvPKT_PS0_i"  # row_softmax<float, 256>, NVRTC's lowered name
    assert [(p.offset, p.size) for p in kernel.params] == [(0, 8), (8, 8), (16, 4)]  # x, y, cols
    rng = np.random.default_rng(0)
    x = device.array(rng.standard_normal((64, 1024)).astype(np.float32))
    y = device.array(np.zeros((64, 1024), np.float32))
    results = softmax_example.bench_softmax(kernel, x, y, reference=None, iterations=3, warmup=0, timer="events")
    assert list(results) == ["clean-cold", "warm"]
    for cache, result in results.items():
        assert result.cache_state == cache and result.samples == 3 and not result.verified
        assert result.config.grid == (64, 1, 1) and result.config.block == (256, 1, 1)
        assert result.median_us > 0 and result.ci_us[0] <= result.median_us <= result.ci_us[1]
    launches = [r for r in fake_driver.records("cuLaunchKernel") if r.function == kernel.handle]  # not the clean step's
    assert len(launches) == 6 and {tuple(r.arg_values[:3]) for r in launches} == {(x.address, y.address, 1024)}


def test_cuda_source_with_torch_checks_the_output_it_is_given(softmax_example, cubin_device):
    """The fake driver runs no kernel, so y keeps its contents: a reference equal to them passes in both
    cache states, and one that differs stops the run with OutputMismatch naming y (argument 1)."""
    device = cubin_device
    kernel = softmax_example.compile_softmax(device)
    x, y = device.array(np.ones((8, 64), np.float32)), device.array(np.full((8, 64), 0.5, np.float32))
    results = softmax_example.bench_softmax(kernel, x, y, reference=np.full((8, 64), 0.5, np.float32),
                                            iterations=2, warmup=0, timer="events")
    assert all(result.verified for result in results.values())
    wrong = np.full((8, 64), 0.5, np.float32)
    wrong[3, 7] = 0.25
    with pytest.raises(hb.OutputMismatch, match=r"argument 1, set 0: element \[3, 7\] is 0\.5, expected 0\.25 "
                                                r"\(rtol=0\.0001, atol=1e-07\)"):
        softmax_example.bench_softmax(kernel, x, y, reference=wrong, iterations=2, warmup=0, timer="events")


# -- the scripts without torch or a GPU ---------------------------------------

@pytest.mark.parametrize("name, needs", [("triton_matmul_tune", "triton"), ("cuda_source_with_torch", None)])
@pytest.mark.parametrize("stub, message", [
    (NO_TORCH, "{name}.py needs torch with CUDA (import of torch halted; None in sys.modules): pip install torch"),
    (NO_GPU, "{name}.py needs an NVIDIA GPU: torch 2.9.0+cpu sees no CUDA device"),
])
def test_scripts_without_torch_or_a_gpu_say_so(name, needs, stub, message):
    if needs:
        pytest.importorskip(needs, reason=f"examples/{name}.py imports {needs} first")
    run = run_script(name, stub)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == message.format(name=name) + "\n"


@pytest.mark.parametrize("name, argv, message", [
    ("triton_matmul_tune", ["--size", "0"], "argument --size: '0': expected an integer >= 1"),
    ("cuda_source_with_torch", ["--rows", "-4"], "argument --rows: '-4': expected an integer >= 1"),
    ("cuda_source_with_torch", ["--cols", "1k"], "argument --cols: '1k': expected an integer >= 1"),
])
def test_bad_sizes_are_refused_before_anything_runs(name, argv, message, capsys):
    if name == "triton_matmul_tune":
        pytest.importorskip("triton", reason="examples/triton_matmul_tune.py imports triton first")
    with pytest.raises(SystemExit) as exit_info:
        load(name).main(argv)
    assert exit_info.value.code == 2 and capsys.readouterr().err.endswith(f"error: {message}\n")
