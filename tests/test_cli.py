"""The CLI on a machine without a GPU: demo plans, info refuses."""
from __future__ import annotations

import pytest

from pyhipbench import cli


@pytest.fixture
def no_gpu(monkeypatch):
    def refuse(backend):
        raise cli.NoDeviceError("no GPU found; cuda: no CUDA driver")
    monkeypatch.setattr(cli, "_open_device", refuse)


def test_demo_without_gpu_shows_the_plan_and_succeeds(no_gpu, capsys):
    assert cli.main(["demo", "--profile", "mi300x"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("no GPU here (no GPU found; cuda: no CUDA driver); showing the plan for AMD Instinct MI300X")
    assert "last-level cache 256 MiB" in out[1]
    assert any("32.0 MiB" in line and " 8 " in line for line in out)     # LLC/8 per buffer: 8 sets
    assert any("1024.0 MiB" in line and " 2 " in line for line in out)   # 4 x LLC: 2 sets


def test_info_without_gpu_fails_clearly(no_gpu, capsys):
    assert cli.main(["info"]) == 1
    assert "pyhipbench info: no GPU found" in capsys.readouterr().err


def test_sizes():
    assert cli._size("64M") == 64 << 20 and cli._size("1GiB") == 1 << 30 and cli._size("4096") == 4096
    with pytest.raises(Exception, match="'12Q' is not a size"):
        cli._size("12Q")


def test_unknown_profile_is_refused(capsys):
    with pytest.raises(SystemExit):
        cli.main(["demo", "--profile", "a100"])
    assert "invalid choice: 'a100'" in capsys.readouterr().err


def test_run_arguments(device):
    import numpy as np
    import pyhipbench as hb
    array = cli._kernel_arg(device, "array:float32:16:arange")
    assert isinstance(array, hb.DeviceArray) and np.array_equal(array.to_numpy(), np.arange(16, dtype=np.float32))
    assert isinstance(cli._kernel_arg(device, "shared:int8:4"), hb.args.Shared)
    assert cli._kernel_arg(device, "int64:0x10") == hb.int64(16)
    assert cli._kernel_arg(device, "float32:2.5") == hb.float32(2.5)
    with pytest.raises(hb.BenchError, match="fill 'noise' is not one of zeros, ones, arange, random"):
        cli._kernel_arg(device, "array:float32:16:noise")
    with pytest.raises(hb.BenchError, match="expected TYPE:VALUE, array:DTYPE:COUNT"):
        cli._kernel_arg(device, "vector:3")
    with pytest.raises(hb.BenchError, match="int32\\(4294967296\\): out of range"):
        cli._kernel_arg(device, "int32:4294967296")
    with pytest.raises(hb.BenchError, match="'foo' is not a numpy dtype such as float32"):
        cli._kernel_arg(device, "array:foo:4")
    with pytest.raises(hb.BenchError, match="element count 'x' is not a whole number"):
        cli._kernel_arg(device, "array:float32:x")
    with pytest.raises(hb.BenchError, match="'1.5' is not a int64 value"):
        cli._kernel_arg(device, "int64:1.5")


def test_run_without_gpu_fails_clearly(no_gpu, capsys):
    assert cli.main(["run", "k.ll", "--kernel", "k", "--grid", "1", "--block", "1"]) == 1
    assert "pyhipbench run: no GPU found" in capsys.readouterr().err


def test_run_rejects_bad_dims(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "k.ll", "--kernel", "k", "--grid", "1,x", "--block", "1"])
    assert "'1,x': expected 1 to 3 comma-separated integers" in capsys.readouterr().err


@pytest.fixture
def fake_gpu(monkeypatch, device):
    monkeypatch.setattr(cli, "_open_device", lambda backend: device)
    return device


def test_run_a_code_object_on_the_fake(fake_gpu, tmp_path, capsys):
    from importlib import resources
    import json
    ptx = resources.files("pyhipbench") / "kernels" / "copy.ptx"
    out = tmp_path / "r.json"
    assert cli.main(["run", str(ptx), "--kernel", "copy", "--grid", "4", "--block", "256",
                     "--arg", "array:float32:1024:random", "--arg", "array:float32:1024",
                     "--arg", "int64:1024", "--iterations", "12", "--rotate", "3", "--json", str(out)]) == 0
    assert "copy on Fake GPU" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["rotation"]["sets"] == 3 and result["iterations"] == 12 and result["grid"] == [4, 1, 1]


def test_run_reports_bad_ir_and_bad_input_without_a_traceback(fake_gpu, tmp_path, capsys):
    bad = tmp_path / "bad.ll"
    bad.write_text("define void @f( {")
    assert cli.main(["run", str(bad), "--kernel", "f", "--grid", "1", "--block", "1"]) == 1
    assert "pyhipbench run: invalid LLVM IR" in capsys.readouterr().err
    from importlib import resources
    ptx = resources.files("pyhipbench") / "kernels" / "copy.ptx"
    assert cli.main(["run", str(ptx), "--kernel", "copy", "--grid", "1", "--block", "1"]) == 2
    assert "pyhipbench run: kernel 'copy' takes 3 arguments" in capsys.readouterr().err
