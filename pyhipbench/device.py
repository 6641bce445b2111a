"""Device: one GPU through one backend, with the C++ core's driver and timer for it."""
from __future__ import annotations

import os

import numpy as np

from . import _core, codeobject
from .backends import BACKEND_NAMES, open_backend
from .backends.base import Backend, DeviceProperties
from .errors import BenchError, NoDeviceError
from .memory import DeviceArray
from .module import Module
from .stream import Stream


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


class Device:
    """A GPU. `Device()` takes the first backend that works (HIP, then CUDA);
    `Device("cuda", 0)` asks for one."""

    def __init__(self, backend: str | None = None, index: int = 0) -> None:
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
        self.timer = _core.make_timer("events", self.driver, self.backend.context)

    @classmethod
    def from_backend(cls, backend: Backend, driver: _core.Driver) -> "Device":
        """A Device over an already-open backend and core driver (embedding, tests)."""
        device = cls.__new__(cls)
        device.backend, device.driver = backend, driver
        device.properties = backend.properties()
        device.timer = _core.make_timer("events", driver, backend.context)
        return device

    def __del__(self) -> None:
        # The timer frees its events, graphs and pinned memory in the backend's
        # context: drop it before the backend can release that context.
        self.__dict__.pop("timer", None)

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
    def load_module(self, source: bytes | str | os.PathLike) -> Module:
        """Loads a code object (PTX, cubin, fatbin or HSACO; bytes or a path)."""
        image = codeobject.read_image(source)
        image_format = codeobject.detect_format(image)
        if image_format not in self.backend.formats:
            raise BenchError(f"a {image_format} code object cannot load on the {self.backend.name} "
                             f"backend; expected {' or '.join(self.backend.formats)}")
        params = codeobject.kernels(image)
        return Module(self, self.backend.load_module(image), image_format, params)

    # -- memory --------------------------------------------------------------
    def empty(self, shape: int | tuple[int, ...], dtype: np.dtype | str = np.float32) -> DeviceArray:
        """Uninitialised device memory of `shape` x `dtype`."""
        return DeviceArray(self.backend, (shape,) if isinstance(shape, int) else shape, np.dtype(dtype))

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
