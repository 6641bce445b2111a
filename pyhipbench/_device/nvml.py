"""NVML through ctypes: what a report records of an NVIDIA GPU, and its energy counter.

NVML ships with the driver (libnvidia-ml.so.1) and needs no CUDA context, so
reading it costs the measured process nothing on the GPU. It is loaded on
first use, from $PYHIPBENCH_NVML_LIBRARY when set, else by the loader's
search; a device is found by its PCI bus id (the CUDA driver's
cuDeviceGetPCIBusId), since NVML's indices need not follow CUDA's. Nothing
here raises for a GPU or driver that cannot answer: each reading is a value
or the reason it was not read, which the report keeps beside it.
"""
from __future__ import annotations

import ctypes
import os
from functools import lru_cache
from typing import Any

LIBRARY_ENV = "PYHIPBENCH_NVML_LIBRARY"
LIBRARY_NAME = "libnvidia-ml.so.1"
_SUCCESS = 0
_CLOCK_SM, _CLOCK_MEMORY = 1, 2    # nvmlClockType_t
_TEMPERATURE_GPU = 0               # nvmlTemperatureSensors_t
_BUFFER = 96                       # NVML_DEVICE_NAME_V2_BUFFER_SIZE, _UUID_V2_, the driver version's 80


class _Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class Unreadable(Exception):
    """A reading NVML could not give; the message says why, in NVML's words."""


class Nvml:
    """The loaded, initialised library (one per process: `nvml()`)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._lib = library
        self._lib.nvmlErrorString.restype = ctypes.c_char_p
        self._call("nvmlInit_v2")

    def _call(self, name: str, *args: Any) -> None:
        try:
            function = getattr(self._lib, name)
        except AttributeError:
            raise Unreadable(f"{name} is not in this NVML") from None
        status = function(*args)
        if status != _SUCCESS:
            message = self._lib.nvmlErrorString(status)
            raise Unreadable(f"{name}: {message.decode(errors='replace') if message else status}")

    def driver_version(self) -> str:
        text = ctypes.create_string_buffer(_BUFFER)
        self._call("nvmlSystemGetDriverVersion", text, ctypes.c_uint(_BUFFER))
        return text.value.decode(errors="replace")

    def device(self, pci_bus_id: str) -> "NvmlDevice":
        handle = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByPciBusId_v2", pci_bus_id.encode(), ctypes.byref(handle))
        return NvmlDevice(self, handle)


class NvmlDevice:
    """One GPU's readings; each method returns its value or raises Unreadable."""

    def __init__(self, nvml: Nvml, handle: ctypes.c_void_p) -> None:
        self._nvml, self._handle = nvml, handle

    def _text(self, name: str) -> str:
        text = ctypes.create_string_buffer(_BUFFER)
        self._nvml._call(name, self._handle, text, ctypes.c_uint(_BUFFER))
        return text.value.decode(errors="replace")

    def _uint(self, name: str, *args: int) -> int:
        value = ctypes.c_uint()
        self._nvml._call(name, self._handle, *map(ctypes.c_int, args), ctypes.byref(value))
        return value.value

    def name(self) -> str:
        return self._text("nvmlDeviceGetName")

    def uuid(self) -> str:
        return self._text("nvmlDeviceGetUUID")

    def max_sm_clock_mhz(self) -> int:
        return self._uint("nvmlDeviceGetMaxClockInfo", _CLOCK_SM)

    def max_memory_clock_mhz(self) -> int:
        return self._uint("nvmlDeviceGetMaxClockInfo", _CLOCK_MEMORY)

    def default_sm_clock_mhz(self) -> int:
        """The default applications clock: what the SM runs at unless raised by boost or set by an admin."""
        return self._uint("nvmlDeviceGetDefaultApplicationsClock", _CLOCK_SM)

    def memory_bytes(self) -> int:
        memory = _Memory()
        self._nvml._call("nvmlDeviceGetMemoryInfo", self._handle, ctypes.byref(memory))
        return int(memory.total)

    def ecc_enabled(self) -> bool:
        current, pending = ctypes.c_int(), ctypes.c_int()
        self._nvml._call("nvmlDeviceGetEccMode", self._handle, ctypes.byref(current), ctypes.byref(pending))
        return bool(current.value)

    def persistence_mode(self) -> bool:
        return bool(self._uint("nvmlDeviceGetPersistenceMode"))

    def power_limit_w(self) -> float:
        return self._uint("nvmlDeviceGetPowerManagementLimit") / 1000

    def temperature_c(self) -> int:
        return self._uint("nvmlDeviceGetTemperature", _TEMPERATURE_GPU)

    def energy_mj(self) -> int:
        """The energy the GPU has used since the driver loaded, mJ (Volta and later)."""
        value = ctypes.c_ulonglong()
        self._nvml._call("nvmlDeviceGetTotalEnergyConsumption", self._handle, ctypes.byref(value))
        return int(value.value)


@lru_cache(maxsize=1)
def nvml() -> Nvml:
    """NVML, loaded and initialised once; Unreadable saying why where it cannot be (no NVIDIA driver)."""
    path = os.environ.get(LIBRARY_ENV) or LIBRARY_NAME
    try:
        library = ctypes.CDLL(path)
    except OSError as e:
        raise Unreadable(f"NVML not loaded ({e})") from None
    return Nvml(library)
