"""Arch-specific targets (sm_90a, sm_100a, ...): chosen for the device, and recorded in code objects and results."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._codeobject import image as codeobject
from pyhipbench._results.report import to_csv
from pyhipbench.codegen import compile_for_device, compile_ir, device_target, ir
from pyhipbench.codegen.nvptx import arch_specific

from code_objects import COPY_METADATA, hsaco_with_metadata, minimal_cubin, msgpack
from fakes.host_backend import HostBackend

IR_DATA = Path(__file__).parents[1] / "data" / "ir"
WGMMA = IR_DATA / "wgmma.ll"
COPY_SM_90 = IR_DATA / "copy_sm_90.ll"  # clang wrote "target-cpu"="sm_90" on its kernel
COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()


def cuda_device(arch: str, driver: int = 13000):
    return SimpleNamespace(arch=arch, backend=SimpleNamespace(compile_driver_version=lambda: driver))


@pytest.mark.parametrize("sm, specific", [("sm_90", "sm_90a"), ("sm_100", "sm_100a"), ("sm_120", "sm_120a"),
                                          ("sm_89", None), ("sm_80", None), ("gfx942", None)])
def test_arch_specific_exists_from_compute_capability_9(sm, specific):
    assert arch_specific(sm) == specific


def test_compile_for_device_picks_the_arch_specific_target_wgmma_needs():
    code = compile_for_device(WGMMA, cuda_device("sm_90"))
    assert code.target == "sm_90a" and code.kernels == ("matmul_kernel",)
    assert codeobject.target(code.data) == "sm_90a" and b"wgmma.fence.sync.aligned;" in code.data


@pytest.mark.parametrize("arch, target", [("sm_90", "sm_90a"), ("sm_100", "sm_100a"), ("sm_89", "sm_89")])
def test_ir_without_a_processor_gets_the_devices_arch_specific_target(arch, target):
    module = ir.parse(COPY_SM_90.read_text().replace('"target-cpu"="sm_90"', ""))
    assert device_target(module, arch) == target
    assert compile_for_device(module, cuda_device(arch)).target == target


def test_ir_generated_for_the_plain_processor_is_compiled_for_it():
    module = ir.parse(COPY_SM_90)
    assert module.target_cpus == {"sm_90"} and device_target(module, "sm_90") == "sm_90"
    assert compile_for_device(module, cuda_device("sm_90")).target == "sm_90"


def test_ir_generated_for_the_arch_specific_processor_compiles_on_its_device():
    module = ir.parse(COPY_SM_90.read_text().replace('"target-cpu"="sm_90"', '"target-cpu"="sm_90a"'))
    assert compile_for_device(module, cuda_device("sm_90")).target == "sm_90a"


def test_code_objects_say_their_target():
    assert codeobject.target(compile_ir(COPY_SM_90, "sm_90").data) == "sm_90"
    assert codeobject.target(COPY_PTX) == "sm_52"
    metadata = dict(COPY_METADATA, **{"amdhsa.target": "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"})
    assert codeobject.target(hsaco_with_metadata(msgpack(metadata))) == "gfx942:sramecc+:xnack-"
    assert codeobject.target(hsaco_with_metadata(msgpack(COPY_METADATA))) is None  # no amdhsa.target
    assert codeobject.target(minimal_cubin()) is None


def test_a_loaded_code_object_records_the_target_it_was_compiled_for(device):
    code = compile_ir(WGMMA, "sm_90a")
    assert device.load_module(code).target == "sm_90a"
    assert device.load_module(code.data).target == "sm_90a"  # read from the PTX's .target


def test_the_result_records_the_target_of_the_kernels_code(device):
    ptx = compile_ir(WGMMA, "sm_90a").data
    kernel = device.load_module(ptx).kernel("matmul_kernel")
    assert kernel.module.target == "sm_90a"
    out = device.array(np.zeros(4, np.int32))
    result = hb.bench(kernel, 1, 128, [out], iterations=2, warmup=0, cache="warm", timer="events")
    assert result.target == "sm_90a" and "code for sm_90a" in result.summary()
    data = json.loads(json.dumps(result.to_dict()))
    assert data["target"] == "sm_90a"
    header, row = to_csv([data]).splitlines()
    assert dict(zip(header.split(","), row.split(",")))["target"] == "sm_90a"


def test_run_compiles_wgmma_ir_for_sm_90a_on_an_sm_90_device(monkeypatch, fake_libraries, fake_driver_cuda,
                                                             tmp_path, capsys):
    backend = HostBackend(backend="cuda", arch="sm_90")
    backend.driver_version = lambda: 13000  # which PTX compile_for_device may write
    device = hb.Device.from_backend(backend, hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    monkeypatch.setattr(cli, "_open_device", lambda backend, index=0: device)
    out = tmp_path / "r.json"
    assert cli.main(["run", str(WGMMA), "--kernel", "matmul_kernel", "--grid", "1", "--block", "128",
                     "--arg", "array:int32:4", "--iterations", "2", "--rotate", "1", "--out", str(out)]) == 0
    assert "target: sm_90a (ptx," in capsys.readouterr().out
    assert json.loads(out.read_text())["results"][0]["target"] == "sm_90a"
