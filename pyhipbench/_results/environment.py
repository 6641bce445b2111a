"""What a report records of where its numbers were taken: the package, the host and each device.

`environment(devices)` is read when a run or sweep starts, `finish` when it
ends (the temperatures again). A device's record holds what its backend
reports (DeviceProperties, `Backend.facts`) and, on NVIDIA, what NVML reads
by the device's PCI bus id: the driver's version, UUID, clocks, ECC,
persistence mode, power limit, temperature. A field that could not be read
is None, and `unreadable` maps it to the reason (NVML's own words, or that
AMD devices are read through HIP only): never a guess.
"""
from __future__ import annotations

import platform
import socket
import sys
from datetime import datetime, timezone
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, Callable

from .._device.nvml import NvmlDevice, Unreadable, nvml
from ..errors import Error

if TYPE_CHECKING:
    from .._device.device import Device

SCHEMA_VERSION = 2  # of a JSON report; docs/reports.md describes each version

# NVML's readings of a device, by field; read at the start (temperature_end_c again at the end).
_NVML_FIELDS: dict[str, Callable[[NvmlDevice], Any]] = {
    "uuid": NvmlDevice.uuid,
    "default_sm_clock_mhz": NvmlDevice.default_sm_clock_mhz,
    "max_sm_clock_mhz": NvmlDevice.max_sm_clock_mhz,
    "max_memory_clock_mhz": NvmlDevice.max_memory_clock_mhz,
    "persistence_mode": NvmlDevice.persistence_mode,
    "power_limit_w": NvmlDevice.power_limit_w,
    "temperature_start_c": NvmlDevice.temperature_c,
}
NOT_MONITORED = "not read: this version reads AMD devices through HIP only (no amdsmi)"
_PACKAGES = ("numpy", "llvmlite", "torch", "triton")  # their versions, where imported already


def environment(devices: list[Device]) -> dict[str, Any]:
    """The report's header: schema version, package version, time (UTC, ISO 8601), host, devices."""
    return {"schema_version": SCHEMA_VERSION, "pyhipbench_version": version("pyhipbench"),
            "created": datetime.now(timezone.utc).isoformat(), "host": host(),
            "devices": [device_record(d) for d in devices]}


def host() -> dict[str, Any]:
    """The machine and Python: hostname, OS, Python's version, and the versions of the packages
    already imported among numpy, llvmlite, torch and triton (none imported for this)."""
    return {"hostname": socket.gethostname(), "os": platform.platform(), "python": platform.python_version(),
            "packages": {name: version(name) for name in _PACKAGES if name in sys.modules}}


def device_record(device: Device) -> dict[str, Any]:
    """One device as its backend and (NVIDIA) NVML report it; see the module docstring."""
    props = device.properties
    record: dict[str, Any] = {"backend": props.backend, "index": props.index, "name": props.name,
                              "arch": props.arch, "compute_units": props.compute_units,
                              "memory_bytes": props.total_bytes}
    unreadable: dict[str, str] = {}
    try:
        record.update(device.backend.facts())
    except Error as e:
        unreadable["driver facts"] = str(e)
    monitored = device.backend.device_monitor == "nvml"
    for name in ("driver_version", *_NVML_FIELDS) if monitored else _NVML_FIELDS:
        record.setdefault(name, None)
    if monitored:
        _read_nvml(record, unreadable)
    else:
        for name in _NVML_FIELDS:
            unreadable[name] = NOT_MONITORED
    record["temperature_end_c"] = None
    unreadable.setdefault("temperature_end_c", "not read yet: the run had not ended")
    record["unreadable"] = unreadable
    return record


def _read_nvml(record: dict[str, Any], unreadable: dict[str, str]) -> None:
    try:
        library = nvml()
        record["driver_version"] = library.driver_version()
        device = library.device(str(record.get("pci_bus_id")))
    except Unreadable as e:
        for name in ("driver_version", *_NVML_FIELDS):
            if record.get(name) is None:
                unreadable[name] = str(e)
        return
    for name, read in _NVML_FIELDS.items():
        try:
            record[name] = read(device)
        except Unreadable as e:
            unreadable[name] = str(e)


def finish(env: dict[str, Any]) -> dict[str, Any]:
    """`env` with each NVIDIA device's temperature read again, as the run ends (`temperature_end_c`)."""
    for record in env["devices"]:
        if record["unreadable"].get("temperature_start_c") == NOT_MONITORED:
            record["unreadable"]["temperature_end_c"] = NOT_MONITORED
            continue
        try:
            record["temperature_end_c"] = nvml().device(str(record.get("pci_bus_id"))).temperature_c()
            record["unreadable"].pop("temperature_end_c", None)
        except Unreadable as e:
            record["unreadable"]["temperature_end_c"] = str(e)
    return env
