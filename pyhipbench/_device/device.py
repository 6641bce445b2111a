"""Device: one GPU through one backend, with the C++ core's driver and timer for it."""
from __future__ import annotations

import functools
import os
from importlib import resources

import numpy as np

from .. import _core
from .._codeobject import image as codeobject
from .backends import BACKEND_NAMES, open_backend
from .backends.base import Backend, DeviceProperties
from .._measure.cache import CleanStep
from ..codegen import CodeObject, compile_ir
from ..errors import BenchError, NoDeviceError
from .memory import DeviceArray
from .module import Module
from .stream import Stream
from .._measure.timers import MAX_LAUNCHES_PER_SAMPLE, TIMERS
from .._values import integer, show


def available_backends() -> list[str]:
    """The backends that can open device 0 here, in preference order (HIP first)."""
    found = []
    for name in BACKEND_NAMES:
        try:
            open_backend(name, 0)
        except NoDeviceError:
            continue
        found.append(name)
    return found


@functools.lru_cache(maxsize=None)
def _bundled_amd_code_object(arch: str) -> bytes:
    """pyhipbench/kernels/amdgpu.ll compiled for `arch`, once per process."""
    source = resources.files("pyhipbench") / "kernels" / "amdgpu.ll"
    return compile_ir(source.read_bytes(), arch).data


class Device:
    """A GPU. `Device()` takes the first backend that works (HIP, then CUDA);
    `Device("cuda", 0)` asks for one."""

    def __init__(self, backend: str | None = None, index: int = 0) -> None:
        if backend is not None and not (isinstance(backend, str) and backend in BACKEND_NAMES):
            raise BenchError(f"backend={show(backend)}: expected one of {', '.join(BACKEND_NAMES)}, "
                             "or None for the first that works")
        index = integer("index", index, 0)
        if backend is None:
            reasons = []
            for name in BACKEND_NAMES:
                try:
                    self.backend: Backend = open_backend(name, index)
                    break
                except NoDeviceError as e:
                    reasons.append(f"{name}: {e}")
            else:
                raise NoDeviceError("no GPU found; " + "; ".join(reasons))
        else:
            self.backend = open_backend(backend, index)
        self.properties: DeviceProperties = self.backend.properties()
        # The timers' driver library; dlopen returns the one the bindings loaded.
        self.driver = _core.load_driver(self.backend.name)
        self._timers: dict[tuple[str, int], _core.Timer] = {}
        self.cupti_works: bool | None = None  # found out on first need (timers.default_timer)

    @classmethod
    def from_backend(cls, backend: Backend, driver: _core.Driver) -> "Device":
        """A Device over an already-open backend and core driver (embedding, tests)."""
        device = cls.__new__(cls)
        device.backend, device.driver = backend, driver
        device.properties = backend.properties()
        device._timers = {}
        device.cupti_works = None
        return device

    def __del__(self) -> None:
        # Timers free their events, graphs and pinned memory, and the clean step
        # its buffer, in the backend's context: drop them before the backend can
        # release that context.
        self.__dict__.pop("_timers", None)
        clean = self.__dict__.pop("_clean_step", None)
        if clean is not None:
            clean.free()

    # -- timing --------------------------------------------------------------
    def timer(self, name: str = "events", launches_per_sample: int = 0) -> _core.Timer:
        """The core's timer `name` on this device (made once, then reused).

        `launches_per_sample`: graph nodes / batch length for "graph" and
        "batched" (0: the core's default); 1 (or 0) for "events" and "cupti".
        """
        if not (isinstance(name, str) and name in TIMERS):
            raise BenchError(f"timer {show(name)}: expected one of {', '.join(TIMERS)}")
        key = (name, integer("launches_per_sample", launches_per_sample, 0, MAX_LAUNCHES_PER_SAMPLE))
        if key not in self._timers:
            spin = self.bundled_amd_module().kernel("spin").handle \
                if name == "batched" and self.backend.name == "hip" else 0
            self._timers[key] = _core.make_timer(name, self.driver, self.backend.context,
                                                 launches_per_sample=key[1], spin_function=spin)
        return self._timers[key]

    def clean_step(self) -> CleanStep:
        """The clean-cold state's clean step on this device: its buffer
        (cache.CLEAN_BYTES_PER_LLC times the last-level cache, bytes) is allocated on first use and kept."""
        if "_clean_step" not in self.__dict__:
            self._clean_step = CleanStep(self)
        return self._clean_step

    def bundled_amd_module(self) -> Module:
        """pyhipbench/kernels/amdgpu.ll compiled for this AMD device and loaded (once):
        the demo's kernels, the batched timer's spin kernel, the clean step."""
        if "_amd_module" not in self.__dict__:
            self._amd_module = self.load_module(_bundled_amd_code_object(self.arch))
        return self._amd_module

    # -- facts ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.properties.name

    @property
    def arch(self) -> str:
        return self.properties.arch

    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory, bytes."""
        return self.backend.memory_info()

    # -- code ----------------------------------------------------------------
    def load_module(self, source: bytes | str | os.PathLike | CodeObject) -> Module:
        """Loads a code object (PTX, cubin, fatbin or HSACO): bytes, a path, or what `compile_ir`,
        `compile_for_device` or `compile_source` returned (whose `target` the module then records,
        a cubin naming none itself)."""
        image = source.data if isinstance(source, CodeObject) else codeobject.read_image(source)
        image_format = codeobject.detect_format(image)
        if image_format not in self.backend.formats:
            raise BenchError(f"a {image_format} code object cannot load on the {self.backend.name} "
                             f"backend; expected {' or '.join(self.backend.formats)}")
        params = codeobject.kernels(image)
        target = source.target if isinstance(source, CodeObject) else codeobject.target(image)
        return Module(self, self.backend.load_module(image), image_format, params, target)

    # -- memory --------------------------------------------------------------
    def empty(self, shape: int | tuple[int, ...], dtype: np.dtype | str = np.float32) -> DeviceArray:
        """Uninitialised device memory of `shape` x `dtype` (any integral sizes, numpy's included).
        Refused before allocating if larger than the device's free memory."""
        return DeviceArray(self.backend, shape, dtype)

    def empty_like(self, array: DeviceArray | np.ndarray) -> DeviceArray:
        """Uninitialised device memory of `array`'s shape and dtype."""
        return self.empty(array.shape, array.dtype)

    def array(self, host: np.ndarray) -> DeviceArray:
        """A device copy of a host array."""
        host = np.asarray(host)
        device_array = self.empty(host.shape, host.dtype)
        device_array.copy_from(host)
        return device_array

    def stream(self) -> Stream:
        """A new stream on this device."""
        return Stream(self)

    def synchronize(self) -> None:
        self.backend.synchronize()

    def __repr__(self) -> str:
        return f"Device({self.backend.name!r}, {self.properties.index}: {self.name}, {self.arch})"
