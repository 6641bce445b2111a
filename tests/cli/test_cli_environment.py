"""The environment as the CLI writes it in a report and compare reads it: fresh processes, warnings, bad headers."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._results import report

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()


RUN = ["--kernel", "copy", "--grid", "4", "--block", "256", "--arg", "array:float32:256", "--arg",
       "array:float32:256", "--arg", "int64:256", "--timer", "events", "--cache", "warm", "--iterations", "3"]


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_a_json_report_opened_in_a_fresh_process_gives_its_environment(fake_gpu, fake_nvml, tmp_path, capsys):
    ptx, out = tmp_path / "k.ptx", tmp_path / "r.json"
    ptx.write_bytes(COPY_PTX)
    fake_nvml.fake_nvml_set_temperature(44)
    assert cli.main(["run", str(ptx), *RUN, "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert list(written) == ["schema_version", "pyhipbench_version", "created", "host", "devices", "results"]
    [record] = written["devices"]
    assert record["driver_version"] == "999.12.34" and record["temperature_start_c"] == 44
    assert record["temperature_end_c"] == 44
    read = subprocess.run([sys.executable, "-c", "import json, sys; from pyhipbench._results import report; "
                           "r = report.read(sys.argv[1]); print(json.dumps(r.environment))", str(out)],
                          capture_output=True, text=True, check=True)
    assert json.loads(read.stdout) == {k: v for k, v in written.items() if k != "results"}


def _report(path, driver_version="580.159.04", uuid="GPU-1", clock_mhz=1980.0, environment=True):
    result = {"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "timer": "cupti", "cache_state": "warm",
              "stats_us": {"median": 2.0, "ci_low": 1.99, "ci_high": 2.01, "rel_ci": 0.005, "p10": 1.99,
                           "p90": 2.01, "outliers": 0},
              "samples": 3, "stop_reason": "precision", "rotation": {"sets": 1}, "host_us_per_kernel": 1.0,
              "wall_s": 0.01, "device": {"name": "GPU"}, "times_us": [1.99, 2.0, 2.01],
              "clock_mhz": {"mean": clock_mhz, "min": clock_mhz, "max": clock_mhz, "rated": 1980.0}}
    device = {"backend": "cuda", "index": 0, "name": "NVIDIA H200", "uuid": uuid, "driver_version": driver_version,
              "api_version": "CUDA 13.0", "unreadable": {}}
    data = {"schema_version": 2, "pyhipbench_version": "1", "created": "2026-12-02T00:00:00+00:00",
            "host": {"hostname": "h"}, "devices": [device], "results": [result]} if environment else [result]
    path.write_text(json.dumps(data))
    return str(path)


def test_compare_warns_when_the_devices_drivers_or_clocks_differ(tmp_path, capsys):
    a = _report(tmp_path / "a.json")
    assert cli.main(["compare", a, _report(tmp_path / "same.json")]) == 0
    assert capsys.readouterr().err == ""
    b = _report(tmp_path / "b.json", driver_version="575.1", uuid="GPU-2", clock_mhz=1500.0)
    assert cli.main(["compare", a, b]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[2].startswith("k grid 1x1x1 block 32x1x1 (warm, cupti)")
    assert captured.err.splitlines() == [
        "pyhipbench compare: warning: device 0: uuid differs: A GPU-1, B GPU-2",
        "pyhipbench compare: warning: device 0: driver_version differs: A 580.159.04, B 575.1",
        "pyhipbench compare: warning: k grid 1x1x1 block 32x1x1 (warm, cupti): SM clock A 1980 MHz, B 1500 MHz"]
    old = _report(tmp_path / "old.json", environment=False)
    assert cli.main(["compare", old, a]) == 0
    assert capsys.readouterr().err == ("pyhipbench compare: warning: A recorded no environment (schema version 1): "
                                       "cannot check that both ran on the same device, driver and clocks\n")


@pytest.mark.parametrize("change, message", [
    ({"schema_version": 3}, "schema_version=3: expected 2 to 2, the versions this pyhipbench reads"),
    ({"schema_version": "2"}, "schema_version='2': expected 2 to 2"),
    ({"results": {}}, "results={}: expected a list"),
    ({"devices": None}, "devices=None: expected a list"),
    ({"devices": [1]}, "devices[0]=1: expected an object"),
    ({"host": []}, "host=[]: expected an object"),
])
def test_a_report_whose_header_is_not_one_is_refused(tmp_path, change, message):
    path = tmp_path / "r.json"
    data = json.loads(open(_report(path)).read())
    path.write_text(json.dumps({**data, **change}))
    with pytest.raises(hb.BenchError, match=f"^{path}: ") as e:
        report.read(path)
    assert message in str(e.value)


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_run_energy_prints_and_writes_the_energy(fake_gpu, fake_nvml, fake_driver, tmp_path, capsys, monkeypatch):
    from pyhipbench._measure import energy
    monkeypatch.setattr(energy, "WINDOW_S", 0.05)
    fake_driver.lib.fake_set_launch_ms(0.004)
    fake_nvml.fake_nvml_set_power(250000, 2000)
    ptx, out = tmp_path / "k.ptx", tmp_path / "r.json"
    ptx.write_bytes(COPY_PTX)
    assert cli.main(["run", str(ptx), *RUN, "--energy", "--out", str(out)]) == 0
    assert " W mean over " in capsys.readouterr().out
    [result] = json.loads(out.read_text())["results"]
    assert result["energy"]["mean_w"] == pytest.approx(250, rel=0.15)


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_run_energy_that_gives_no_figure_keeps_the_measurement_and_says_why(fake_gpu, fake_nvml, fake_driver,
                                                                           tmp_path, capsys, monkeypatch):
    from pyhipbench._measure import energy
    monkeypatch.setattr(energy, "WINDOW_S", 0.01)  # the fake's counter draws no power: it never steps
    ptx, out = tmp_path / "k.ptx", tmp_path / "r.json"
    ptx.write_bytes(COPY_PTX)
    assert cli.main(["run", str(ptx), *RUN, "--energy", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    [summary, wrote] = printed.out.splitlines()
    assert printed.err == "" and wrote == f"wrote {out}"
    assert summary.startswith("copy on Fake GPU") and " 3 samples " in summary
    assert summary.endswith("; energy not read: the NVML counter stepped 0 times in "
                            f"{summary.rsplit(' in ', 1)[1].split(' s ')[0]} s of samples; expected at least 3 to "
                            "give a figure")
    [result] = json.loads(out.read_text())["results"]
    assert result["samples"] == 3 and result["energy"]["mj_per_sample"] is None
    assert result["energy"]["unreadable"].startswith("the NVML counter stepped 0 times")


def test_run_energy_refuses_the_default_cache_state(tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(COPY_PTX)
    code = cli.main(["run", str(ptx), *[a for a in RUN if a not in ("--cache", "warm")], "--energy"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("pyhipbench run: --energy with --cache clean-cold (the default)"), err
