"""energy=True against the fake NVML, whose counter steps by power x period every sampling period."""
from __future__ import annotations

import re

import pytest
from test_measurement import copy, copy_args  # noqa: F401 (copy: the fixture)

import pyhipbench as hb
from pyhipbench._measure import energy
from pyhipbench._results import report

POWER_W, PERIOD_MS = 300.0, 2.0
# Long enough that a poll the loaded 2-core CI machine runs late moves the fitted slope by well under 10 %.
WINDOW_S = 0.3


@pytest.fixture
def backend_name():
    """NVIDIA: the energy counter is NVML's (the AMD test below asks for hip itself)."""
    return "cuda"


@pytest.fixture
def powered(fake_nvml, fake_driver, monkeypatch):
    """The fake GPU drawing POWER_W, its counter stepping every PERIOD_MS; a WINDOW_S energy window."""
    monkeypatch.setattr(energy, "WINDOW_S", WINDOW_S)
    fake_driver.lib.fake_set_launch_ms(0.004)
    fake_nvml.fake_nvml_set_power(int(POWER_W * 1000), int(PERIOD_MS * 1000))
    return fake_nvml


def test_energy_is_the_counters_steps_over_the_window(device, copy, powered):
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=20, warmup=0,
                   energy=True)
    e = res.energy
    assert e is not None and res.samples == 20  # the window's samples are not the result's
    assert e.mean_w == pytest.approx(POWER_W, rel=0.1)
    assert e.counter_step_ms == pytest.approx(PERIOD_MS, rel=0.5) and e.counter_unit_mj == 1.0
    assert e.samples >= WINDOW_S / 4e-6 * 0.99  # the window asked for WINDOW_S of 4 µs samples
    assert e.window_s > 0 and e.mj_per_sample > 0
    record = res.to_dict()["energy"]
    assert record == {**e.__dict__, "source": "NVML total energy counter"}
    assert f"energy {e.mj_per_sample:.4g} mJ per sample, {e.mean_w:.1f} W mean" in res.summary()
    row = report.to_csv([res.to_dict()]).splitlines()
    assert row[0].endswith(",energy_mj_per_sample,mean_power_w,candidate_id,tags")
    assert row[1].endswith(f",{e.mj_per_sample},{e.mean_w},,")


def test_without_energy_there_is_none(device, copy, powered):
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=5, warmup=0)
    assert res.energy is None and res.to_dict()["energy"] is None and "energy" not in res.summary()


def test_a_counter_that_does_not_step_gives_no_figure_and_keeps_the_timing(device, copy, fake_nvml, fake_driver,
                                                                           monkeypatch):
    monkeypatch.setattr(energy, "WINDOW_S", 0.01)
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=5, warmup=0,
                   energy=True)
    e = res.energy
    assert res.samples == 5 and res.median_us > 0
    assert e is not None and (e.mj_per_sample, e.mean_w, e.window_s, e.counter_step_ms) == (None, None, None, None)
    assert re.fullmatch(r"the NVML counter stepped 0 times in \S+ s of samples; expected at least 3 to give a "
                        r"figure", e.unreadable)
    assert res.summary().endswith(f"; energy not read: {e.unreadable}")
    record = res.to_dict()
    assert record["energy"]["unreadable"] == e.unreadable and record["energy"]["mj_per_sample"] is None
    row = report.to_csv([record]).splitlines()[1]
    assert row.endswith(",,,,")  # no energy per sample, no mean power (nor a candidate's id and tags)


def test_a_counter_that_stops_reading_in_the_window_is_named_and_keeps_the_timing(device, copy, powered,
                                                                                  monkeypatch):
    from pyhipbench._device.nvml import NvmlDevice, Unreadable
    read = NvmlDevice.energy_mj
    reads = []

    def lost_after_the_first(self):
        reads.append(1)
        if len(reads) > 1:
            raise Unreadable("nvmlDeviceGetTotalEnergyConsumption: GPU is lost")
        return read(self)
    monkeypatch.setattr(NvmlDevice, "energy_mj", lost_after_the_first)
    res = hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=5, warmup=0,
                   energy=True)
    assert res.samples == 5 and res.energy.mj_per_sample is None
    assert re.fullmatch(r"the NVML counter stopped reading during the \S+ s of samples "
                        r"\(nvmlDeviceGetTotalEnergyConsumption: GPU is lost\)", res.energy.unreadable)


def test_a_gpu_without_the_counter_is_refused_before_anything_runs(device, copy, fake_nvml, fake_driver):
    fake_nvml.fake_nvml_unsupported(b"nvmlDeviceGetTotalEnergyConsumption")
    before = len(fake_driver.work())
    with pytest.raises(hb.BenchError, match=r"^energy=True: Fake GPU has no readable energy counter "
                                            r"\(nvmlDeviceGetTotalEnergyConsumption: Not Supported\)"):
        hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=5, energy=True)
    assert len(fake_driver.work()) == before


def test_without_nvml_energy_is_refused(device, copy, fake_driver):
    with pytest.raises(hb.BenchError, match=r"^energy=True: Fake GPU has no readable energy counter \(NVML not "
                                            r"loaded"):
        hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=5, energy=True)


@pytest.mark.parametrize("options, message", [
    ({"energy": "yes"}, "energy='yes': expected True or False"),
    ({"energy": True}, "energy=True with cache='clean-cold' (the default): each sample's clean step would count"),
    ({"energy": True, "cache": "clean-cold"}, "energy=True with cache='clean-cold': each sample's clean step"),
])
def test_bad_energy_options_are_refused(options, message):
    with pytest.raises(hb.BenchError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        hb.BenchOptions(**options)


@pytest.mark.parametrize("backend_name", ["hip"])
def test_amd_has_no_energy_counter_here(device, copy, fake_driver):
    with pytest.raises(hb.BenchError, match=r"^energy=True: AMD GPUs have no energy counter in this version"):
        hb.bench(copy, 4, 256, copy_args(device), timer="events", cache="warm", iterations=5, energy=True)
