"""Device: one GPU through one backend, with the C++ core's driver for it."""
from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numpy.typing import DTypeLike

from .. import _core
from .._codeobject import image as codeobject
from .._codeobject.code_object import CodeObject
from .._values import integer, show
from ..errors import BenchError, NoDeviceError
from .backends import BACKEND_NAMES, open_backend
from .backends.base import Backend, BindingsMissing, DeviceProperties
from .memory import DeviceArray
from .module import Kernel, Module
from .stream import Stream

BUNDLED_KERNELS = ("copy", "clean", "empty", "spin")  # pyhipbench/kernels/
Made = TypeVar("Made")  # what Device.keep makes and keeps


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


class NoGpuFound(NoDeviceError):
    """No backend opened a GPU (`Device()`). The message is a line read at a glance, about the vendors whose
    Python bindings are installed (the others are not mentioned, unless none is installed: then how to
    install them is the news); `reasons` holds each backend's whole reason by name, its driver's own message
    included (`pyhipbench -v` shows them)."""

    def __init__(self, message: str, reasons: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.reasons = reasons or {}


VENDORS = {"hip": "AMD", "cuda": "NVIDIA"}
BINDINGS = {"hip": ("hip-python", "hip.hip"), "cuda": ("cuda-bindings", "cuda.bindings.driver")}  # (package, module)
_FIRST_CLAUSE_END = re.compile(r": |\. | \(|; ")


def installed_backends() -> list[str]:
    """The backends whose Python bindings import here, in preference order; no device is opened."""
    found = []
    for name in BACKEND_NAMES:
        try:
            importlib.import_module(BINDINGS[name][1])
        except ImportError:
            continue
        found.append(name)
    return found


def _gist(reason: NoDeviceError) -> str:
    """A backend's reason in its first clause ('no CUDA driver', 'HIP found no GPU'): the rest is detail; but
    whole where it says what was expected ('CUDA device index 5 is out of range: expected 0..0 (1 device)')."""
    text = str(reason)
    return text if ": expected " in text else _FIRST_CLAUSE_END.split(text, maxsplit=1)[0]


def _whole(reason: NoDeviceError) -> str:
    """A backend's reason with what its cause said (the bindings' or driver's own message) where it does not."""
    cause = reason.__cause__
    return f"{reason} ({cause})" if cause is not None and str(cause) not in str(reason) else str(reason)


def no_gpu_found(failures: list[tuple[str, NoDeviceError]]) -> NoGpuFound:
    """The error for every backend tried failing, each with its reason: in one line, only the vendors whose
    bindings are installed (of several tried), each by the first clause of its reason."""
    reasons = {name: _whole(e) for name, e in failures}
    installed = [(name, e) for name, e in failures if not isinstance(e, BindingsMissing)] if len(failures) > 1 \
        else failures
    if not installed:
        return NoGpuFound("no GPU bindings installed: pip install 'pyhipbench[cuda]' for NVIDIA GPUs, or "
                          "hip-python (the release for your ROCm) for AMD GPUs", reasons)
    if len(installed) == 1:
        name, e = installed[0]
        return NoGpuFound(f"no {VENDORS[name]} GPU found: {_gist(e)}", reasons)
    return NoGpuFound("no GPU found: " + "; ".join(f"{VENDORS[name]}: {_gist(e)}" for name, e in installed), reasons)


class Device:
    """A GPU. `Device()` takes the first backend that works (HIP, then CUDA);
    `Device("cuda", 0)` asks for one."""

    def __init__(self, backend: str | None = None, index: int = 0) -> None:
        if backend is not None and not (isinstance(backend, str) and backend in BACKEND_NAMES):
            raise BenchError(f"backend={show(backend)}: expected one of {', '.join(BACKEND_NAMES)}, "
                             "or None for the first that works")
        index = integer("index", index, 0)
        if backend is None:
            failures: list[tuple[str, NoDeviceError]] = []
            for name in BACKEND_NAMES:
                try:
                    self.backend: Backend = open_backend(name, index)
                    break
                except NoDeviceError as e:
                    failures.append((name, e))
            else:
                raise no_gpu_found(failures)
        else:
            self.backend = open_backend(backend, index)
        self.properties: DeviceProperties = self.backend.properties()
        # The timers' driver library; dlopen returns the one the bindings loaded.
        self.driver = _core.load_driver(self.backend.name)
        self.backend.check_same_driver()
        self._start_keeping()

    @classmethod
    def from_backend(cls, backend: Backend, driver: _core.Driver) -> "Device":
        """A Device over an already-open backend and core driver (embedding, tests)."""
        device = cls.__new__(cls)
        device.backend, device.driver = backend, driver
        device.properties = backend.properties()
        device._start_keeping()
        return device

    def _start_keeping(self) -> None:
        # `kept`: what is made once for this device and reused while it lives (the measurement's core
        # timers and clean step, the bundled modules), keyed by its maker. A reentrant lock, as one make
        # keeps another (the timer's probe loads a bundled module).
        self.kept: dict[object, Any] = {}
        self._keeping = threading.RLock()

    def keep(self, key: object, make: Callable[[], Made]) -> Made:
        """What `make()` returns, made once for this device under `key` and kept while it lives. Safe
        from several threads (a tuner makes them on a thread of its own while the caller goes on): a
        second caller waits for the first's make."""
        with self._keeping:
            if key not in self.kept:
                self.kept[key] = make()
            made: Made = self.kept[key]
            return made

    def __del__(self) -> None:
        # Timers free their events, graphs and pinned memory, and the clean step its buffer, in the
        # backend's context: release them, newest first, before the backend can release that context.
        kept = self.__dict__.pop("kept", {})
        for value in reversed(list(kept.values())):
            if hasattr(value, "free"):
                value.free()
        kept.clear()

    def bundled_kernel(self, name: str) -> Kernel:
        """The bundled kernel `name` ("copy", "clean", "empty", "spin"; pyhipbench/kernels/), loaded
        once: the demo's kernels, the clean step, the cupti probe, AMD's batched-timer spin kernel."""
        if name not in BUNDLED_KERNELS:
            raise BenchError(f"bundled kernel {show(name)}: expected one of {', '.join(BUNDLED_KERNELS)}")
        code = self.backend.bundled_code(name, self.arch)
        return self.keep(("bundled module", code), lambda: self.load_module(code)).kernel(name)

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
    def load_module(self, source: bytes | str | os.PathLike[str] | CodeObject) -> Module:
        """Loads a code object (PTX, cubin, fatbin or HSACO): bytes, a path, or what `compile_ir`,
        `compile_for_device` or `compile_source` returned (whose `target` the module then records,
        a cubin naming none itself). A `str` is a path, never the code: PTX text is passed as bytes
        (`text.encode()`); a str that holds code is refused saying so."""
        image = source.data if isinstance(source, CodeObject) else codeobject.read_image(source)
        image_format = codeobject.detect_format(image)
        if image_format not in self.backend.formats:
            raise BenchError(f"a {image_format} code object cannot load on the {self.backend.name} "
                             f"backend; expected {' or '.join(self.backend.formats)}")
        params = codeobject.kernels(image)
        target = source.target if isinstance(source, CodeObject) else codeobject.target(image)
        return Module(self, self.backend.load_module(image), image_format, params, target)

    # -- memory --------------------------------------------------------------
    def empty(self, shape: int | tuple[int, ...], dtype: DTypeLike = np.float32) -> DeviceArray:
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
