"""The CLI on an NVIDIA GPU: info, and run from LLVM IR to a JSON result."""
from __future__ import annotations

import json
from pathlib import Path

from pyhipbench import cli

from gpu_bounds import hbm_floor_us, peak_time_us

IR = Path(__file__).parent.parent / "data" / "ir" / "copy_sm_90.ll"


def test_info(cuda_device, capsys):
    assert cli.main(["info", "--backend", "cuda", "--size", "16M"]) == 0
    out = capsys.readouterr().out
    assert f"device         0: {cuda_device.name}\n" in out and "arch           sm_90" in out
    assert "rotation       8 sets for 16777216 bytes" in out  # 2 x ceil(60 MiB / 16 MiB)


def test_run_compiles_ir_and_times_it(cuda_device, tmp_path, capsys):
    out_json = tmp_path / "result.json"
    n = 64 << 20  # 256 MiB per buffer: each launch reads most of its source from HBM
    code = cli.main(["run", str(IR), "--kernel", "copy", "--grid", str(n // 256), "--block", "256",
                     "--arg", f"array:float32:{n}:random", "--arg", f"array:float32:{n}",
                     "--arg", f"int64:{n}", "--iterations", "50", "--backend", "cuda", "--cache", "dirty-cold",
                     "--out", str(out_json)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "target: sm_90 (ptx" in printed and f"copy on {cuda_device.name}" in printed  # H200 or H100
    [result] = json.loads(out_json.read_text())["results"]
    assert result["kernel"] == "copy" and result["samples"] == 50
    assert result["rotation"]["sets"] == 2 * -(-cuda_device.properties.llc_bytes // (8 * n))
    stats = result["stats_us"]
    assert hbm_floor_us(cuda_device, 4 * n) <= stats["min"] <= stats["median"] < 5 * peak_time_us(cuda_device, 8 * n)


def test_run_compiles_cuda_source_with_nvrtc(cuda_device, tmp_path, capsys):
    out_json = tmp_path / "result.json"
    n = 1 << 20
    code = cli.main(["run", str(Path(__file__).parent / "data" / "scale.cu"), "--kernel", "scale<float>",
                     "--grid", str(n // 256), "--block", "256", "--arg", f"array:float32:{n}:random",
                     "--arg", f"array:float32:{n}", "--arg", f"int64:{n}", "--iterations", "5", "--backend", "cuda",
                     "--compile-option=-DFACTOR=2", "--out", str(out_json)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "target: sm_90a (cubin" in printed.out
    [result] = json.loads(out_json.read_text())["results"]
    assert result["kernel"] == "_Z5scaleIfEvPKT_PS0_l" and result["target"] == "sm_90a"
