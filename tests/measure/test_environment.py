"""The environment in every report: what is read, and what could not be and why."""
from __future__ import annotations

import sys

import pytest

import pyhipbench as hb
from pyhipbench._results.environment import SCHEMA_VERSION, environment, finish

NVML_FIELDS = ("uuid", "default_sm_clock_mhz", "max_sm_clock_mhz", "max_memory_clock_mhz", "persistence_mode",
               "power_limit_w", "temperature_start_c")


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_an_nvidia_device_as_nvml_reads_it(device, fake_nvml):
    fake_nvml.fake_nvml_set_temperature(41)
    env = environment([device])
    assert env["schema_version"] == SCHEMA_VERSION == 2 and env["pyhipbench_version"] == hb.__version__
    assert env["created"].endswith("+00:00") and env["host"]["python"] == sys.version.split()[0]
    [record] = env["devices"]
    assert record == {
        "backend": "cuda", "index": 0, "name": "Fake GPU", "arch": "sm_90", "compute_units": 4,
        "memory_bytes": 1024 << 20, "pci_bus_id": "0000:01:00.0", "rated_sm_clock_mhz": 1980,
        "memory_clock_mhz": 3201, "ecc_enabled": True, "api_version": "CUDA 13.0", "bindings": "fake bindings 1.0",
        "driver_version": "999.12.34", "uuid": "GPU-00000000-1111-2222-3333-444444444444",
        "default_sm_clock_mhz": 1755, "max_sm_clock_mhz": 1980, "max_memory_clock_mhz": 3201,
        "persistence_mode": False, "power_limit_w": 700.0, "temperature_start_c": 41, "temperature_end_c": None,
        "unreadable": {"temperature_end_c": "not read yet: the run had not ended"}}
    fake_nvml.fake_nvml_set_temperature(57)
    [ended] = finish(env)["devices"]
    assert ended["temperature_end_c"] == 57 and ended["unreadable"] == {}


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_a_reading_nvml_refuses_is_none_with_nvmls_reason(device, fake_nvml):
    fake_nvml.fake_nvml_unsupported(b"nvmlDeviceGetPowerManagementLimit,nvmlDeviceGetDefaultApplicationsClock")
    [record] = environment([device])["devices"]
    assert record["power_limit_w"] is None and record["default_sm_clock_mhz"] is None
    assert record["unreadable"]["power_limit_w"] == "nvmlDeviceGetPowerManagementLimit: Not Supported"
    assert record["unreadable"]["default_sm_clock_mhz"] == "nvmlDeviceGetDefaultApplicationsClock: Not Supported"
    assert record["uuid"].startswith("GPU-") and record["temperature_start_c"] == 35


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_without_nvml_every_nvml_field_says_why(device):
    [record] = environment([device])["devices"]
    for name in ("driver_version", *NVML_FIELDS):
        assert record[name] is None and record["unreadable"][name].startswith("NVML not loaded ("), name
    assert record["pci_bus_id"] == "0000:01:00.0" and record["api_version"] == "CUDA 13.0"  # the driver's own


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_an_nvml_that_does_not_start_says_so(device, fake_nvml):
    fake_nvml.fake_nvml_fail_init(1)
    [record] = environment([device])["devices"]
    assert record["unreadable"]["uuid"] == "nvmlInit_v2: Driver Not Loaded"


@pytest.mark.parametrize("backend_name", ["hip"])
def test_an_amd_device_is_read_through_hip_only(device, fake_nvml):
    [record] = finish(environment([device]))["devices"]
    assert record["api_version"] == "HIP 6.2.41134" and record["pci_bus_id"] == "0000:01:00.0"
    for name in (*NVML_FIELDS, "temperature_end_c"):
        assert record[name] is None and "through HIP only" in record["unreadable"][name], name
    assert fake_nvml.fake_nvml_init_calls() == 0  # NVML not asked about an AMD GPU
