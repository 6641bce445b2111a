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


def test_run_without_gpu_fails_clearly(no_gpu, capsys):
    assert cli.main(["run", "k.ll", "--kernel", "k", "--grid", "1", "--block", "1"]) == 1
    assert "pyhipbench run: no GPU found" in capsys.readouterr().err


def test_run_rejects_bad_dims(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "k.ll", "--kernel", "k", "--grid", "1,x", "--block", "1"])
    assert "'1,x': expected 1 to 3 comma-separated integers" in capsys.readouterr().err
