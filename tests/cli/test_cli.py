"""The CLI: demo plans and info shows a profile without a GPU; run on the fake driver; option types."""
from __future__ import annotations

import argparse
import ctypes
import json
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench.cli import run as run_command
from pyhipbench.cli import values

COPY_PTX = resources.files("pyhipbench") / "kernels" / "copy.ptx"


@pytest.fixture
def no_gpu(monkeypatch):
    def refuse(backend, index=0):
        raise hb.NoDeviceError("no GPU found; cuda: no CUDA driver")
    monkeypatch.setattr(cli, "_open_device", refuse)


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"pyhipbench {hb.__version__}\n"
    from importlib.metadata import version
    assert hb.__version__ == version("pyhipbench")


def test_demo_without_gpu_shows_the_plan_and_succeeds(no_gpu, capsys):
    assert cli.main(["demo", "--profile", "mi300x"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "no GPU here: the plan for AMD Instinct MI300X (--profile mi300x), nothing is run"
    assert out[1] == "  why no GPU: no GPU found; cuda: no CUDA driver"
    assert "last-level cache 256 MiB" in out[2]
    assert any("32.0 MiB" in line and " 8 " in line for line in out)     # LLC/8 per buffer: 8 sets
    assert any("1024.0 MiB" in line and " 2 " in line for line in out)   # 4 x LLC: 2 sets


def test_info_without_gpu_shows_the_profile_saying_so(no_gpu, capsys):
    assert cli.main(["info", "--profile", "mi300x", "--size", "1G"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "no GPU here: what follows is the profile of an AMD Instinct MI300X (--profile mi300x), not a device of "
        "this machine",
        "  why no GPU: no GPU found; cuda: no CUDA driver",
        "backend        hip (the profile's)",
        "device         AMD Instinct MI300X",
        "arch           gfx942",
        "L2             4.0 MiB",
        "last-level     256.0 MiB",
        "memory         178.8 GiB, all of it taken as free",
        "rotation       2 sets for 1073741824 bytes: one set (1024.0 MiB) >= last-level cache (256.0 MiB): 2 sets"]


def test_info_on_the_fake_plans_the_given_size(fake_gpu, capsys):
    assert cli.main(["info", "--size", "1.5M"]) == 0
    assert "rotation       " in (out := capsys.readouterr().out) and "for 1572864 bytes" in out


@pytest.mark.parametrize("text, size", [
    ("4096", 4096), ("64M", 64 << 20), ("1GiB", 1 << 30), ("1gb", 1 << 30), ("1.5K", 1536), (".5M", 1 << 19),
    ("8T", 8 << 40),
])
def test_sizes(text, size):
    assert values.size(text) == size


def test_unknown_profile_is_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["demo", "--profile", "a100"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("pyhipbench demo: --profile a100: expected one of h100, h200, mi250x, mi300x, "
                                       "mi355x, rx7900xtx; did you mean h100? (pyhipbench demo -h for help)\n")


def test_dims_and_rotate():
    """The converters give what bench() takes, ranges unchecked (the library checks them)."""
    assert values.dims("1024") == 1024 and values.dims("64,4") == (64, 4) and values.dims("2,3,4") == (2, 3, 4)
    assert values.dims("0") == 0 and values.dims("1,2,3,4") == (1, 2, 3, 4)
    assert values.count_or_word("auto") == "auto" and values.count_or_word("3") == 3
    assert values.count_or_word("many") == "many"  # BenchOptions refuses it, naming 'auto'
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected comma-separated whole numbers"):
        values.dims("1,x")


def test_numbers_keep_the_form_they_were_written_in():
    assert values.number("2") == 2 and isinstance(values.number("2"), int)
    assert values.number("2.5") == 2.5 and values.number("1e-3") == 1e-3
    assert values.fraction("1%") == 0.01 and values.fraction("0.05") == 0.05
    assert values.integers("0,1") == [0, 1] and values.integer(" 7 ") == 7


def test_run_without_gpu_fails_clearly(no_gpu, tmp_path, capsys):
    assert cli.main(["run", str(COPY_PTX), "--kernel", "copy", "--grid", "1", "--block", "1"]) == 1
    assert capsys.readouterr().err == "pyhipbench run: no GPU found; cuda: no CUDA driver\n"


def test_run_a_code_object_on_the_fake(fake_gpu, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["run", str(COPY_PTX), "--kernel", "copy", "--grid", "4", "--block", "256",
                     "--arg", "array:float32:1024:random", "--arg", "array:float32:1024",
                     "--arg", "int64:1024", "--iterations", "12", "--rotate", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "copy on Fake GPU" in printed and f"wrote {out}" in printed
    [result] = json.loads(out.read_text())["results"]
    assert result["rotation"]["sets"] == 3 and result["samples"] == 12 and result["grid"] == [4, 1, 1]


def test_run_races_against_a_bound(fake_gpu, fake_driver, tmp_path, capsys):
    """--slower-than: a kernel whose CI lies above the bound stops after its first chunk ("slower");
    with --iterations it is refused, naming both."""
    fake_driver.lib.fake_set_launch_ms_step(0.0001)  # launch k takes 4 + 0.1 k µs: never within ±1 % soon
    out = tmp_path / "r.json"
    run = ["run", str(COPY_PTX), "--kernel", "copy", "--grid", "4", "--block", "256", "--arg",
           "array:float32:1024", "--arg", "array:float32:1024", "--arg", "int64:1024", "--cache", "warm"]
    assert cli.main([*run, "--warmup", "0", "--slower-than", "3.5", "--out", str(out)]) == 0
    [result] = json.loads(out.read_text())["results"]
    assert result["stop_reason"] == "slower" and result["samples"] == 6 and result["stats_us"]["ci_low"] > 3.5
    assert result["slower_than_us"] == 3.5 and "(stopped: slower, racing 3.500 µs)" in capsys.readouterr().out
    assert cli.main([*run, "--iterations", "8", "--slower-than", "3.5"]) == 2
    assert "--slower-than 3.5 with --iterations 8: racing stops a run early" in capsys.readouterr().err


def test_run_passes_random_integers_not_zeros(fake_gpu, capsys, monkeypatch):
    """`array:int32:N:random` reaches the kernel as random integers, not zeros."""
    seen = []
    real_bench = run_command.bench_with

    def spy(launches, options, **keywords):
        seen.extend(launches[0].args)
        return real_bench(launches, options, **keywords)
    monkeypatch.setattr(run_command, "bench_with", spy)
    assert cli.main(["run", str(COPY_PTX), "--kernel", "copy", "--grid", "1", "--block", "256",
                     "--arg", "array:int32:256:random", "--arg", "array:int32:256", "--arg", "int64:256",
                     "--iterations", "2", "--rotate", "1"]) == 0
    values = seen[0].to_numpy()
    assert values.dtype == np.int32 and np.count_nonzero(values) > 200 and values.max() <= 127


def test_run_reports_bad_ir_and_bad_input_without_a_traceback(fake_gpu, tmp_path, capsys):
    bad = tmp_path / "bad.ll"
    bad.write_text("define void @f( {")
    assert cli.main(["run", str(bad), "--kernel", "f", "--grid", "1", "--block", "1"]) == 1
    assert capsys.readouterr().err.startswith(f"pyhipbench run: invalid LLVM IR in {bad}:")
    assert cli.main(["run", str(COPY_PTX), "--kernel", "copy", "--grid", "1", "--block", "1"]) == 2
    assert capsys.readouterr().err.startswith("pyhipbench run: kernel 'copy' takes 3 arguments")


def _copy_on_launch(params) -> None:
    """What copy.ptx does (dst[i] = src[i] for float32), played on the fake driver's host memory."""
    src, dst, n = (ctypes.cast(params[i], ctypes.POINTER(ctypes.c_uint64)).contents.value for i in range(3))
    ctypes.memmove(dst, src, 4 * n)


def test_run_expect_checks_the_output_of_every_set(fake_gpu, fake_driver, tmp_path, capsys):
    fake_driver.run_kernel(_copy_on_launch)
    right, wrong = tmp_path / "right.npy", tmp_path / "wrong.npy"
    np.save(right, np.arange(256, dtype=np.float32))
    np.save(wrong, np.arange(256, dtype=np.float32) + 1)
    out = tmp_path / "r.json"
    run = ["run", str(COPY_PTX), "--kernel", "copy", "--grid", "1", "--block", "256", "--arg",
           "array:float32:256:arange", "--arg", "array:float32:256", "--arg", "int64:256", "--iterations", "3",
           "--rotate", "3"]
    try:
        assert cli.main(run + ["--expect", f"1={right}", "--out", str(out)]) == 0
        assert capsys.readouterr().out.splitlines()[0].endswith("; outputs verified")
        assert json.loads(out.read_text())["results"][0]["verified"] is True
        assert cli.main(run + ["--expect", f"1={wrong}", "--atol", "0.5"]) == 1
        assert capsys.readouterr().err == ("pyhipbench run: kernel 'copy', argument 1, set 0: element [0] is 0.0, "
                                           "expected 1.0 (rtol=1e-05, atol=0.5); 256 of 256 elements differ\n")
    finally:
        fake_driver.lib.fake_set_kernel_body(None)
