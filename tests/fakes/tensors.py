"""A stand-in for a GPU tensor library (torch, CuPy, JAX) on the CPU: DLPack producers with fake devices.

`FakeTensor` exports memory through `__dlpack__` / `__dlpack_device__` as a
GPU library would, with every field a test may want wrong: the device,
strides, element type, flags, DLPack version, and the memory itself. By
default that is plain host memory (numpy's), which no driver knows as device
memory: a producer that claims a GPU over host memory. `memory=backend` puts
it in memory allocated through a backend (the host backend), which that
backend reports as device memory of its device, as a GPU library's
allocations are. It counts the capsules it hands out and the deleter calls
that give them back.
"""
from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from pyhipbench._device import dlpack

_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

_NUMPY_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class FakeTensor:
    """`host`'s memory as a tensor on (device_type, device_id); DLPack 1.0 unless `version` says otherwise.

    `version` None: a producer from before DLPack 1.0 (no max_version
    keyword, 0.8 capsules only). `strides` in elements, None for contiguous.
    `dtype`: (type code, bits, lanes) to override the host array's. `refusal`: __dlpack__ raises
    BufferError(refusal) instead of exporting. `memory`: None for `host`'s own (host) memory, or a
    backend whose `allocate` gives the memory, filled with `host`'s contents (`self.host` views it).
    """

    def __init__(self, host: np.ndarray, device: tuple[int, int] = (dlpack.CUDA, 0), *,
                 strides: tuple[int, ...] | None = None, dtype: tuple[int, int, int] | None = None,
                 flags: int = 0, version: tuple[int, int] | None = (1, 0), refusal: str | None = None,
                 memory: Any = None) -> None:
        self.host = np.ascontiguousarray(host)
        if memory is not None:
            nbytes = max(self.host.nbytes, 1)
            buffer = (ctypes.c_char * nbytes).from_address(memory.allocate(nbytes))
            view = np.frombuffer(buffer, self.host.dtype, self.host.size).reshape(self.host.shape)
            view[...] = self.host
            self.host = view
        self.device, self.strides, self.flags, self.version = device, strides, flags, version
        self.refusal = refusal  # raised as a BufferError by __dlpack__, as torch does for a tensor that needs grad
        self.dtype = dtype or (_NUMPY_CODES[self.host.dtype.kind], self.host.dtype.itemsize * 8, 1)
        self.exported = self.deleted = 0
        self.streams: list[Any] = []  # the stream each __dlpack__ call was given
        self._live: dict[int, tuple] = {}
        self._deleter = dlpack.Deleter(self._delete)

    @property
    def address(self) -> int:
        return self.host.ctypes.data

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, **keywords: Any) -> object:
        if self.version is None and keywords:
            raise TypeError(f"__dlpack__() got unexpected keyword arguments {sorted(keywords)}")
        self.streams.append(stream)
        if self.refusal:
            raise BufferError(self.refusal)
        versioned = self.version is not None and keywords.get("max_version") is not None
        struct = (dlpack.DLManagedTensorVersioned if versioned else dlpack.DLManagedTensor)()
        shape = (ctypes.c_int64 * max(self.host.ndim, 1))(*self.host.shape)
        strides = None if self.strides is None else (ctypes.c_int64 * len(self.strides))(*self.strides)
        tensor = struct.dl_tensor
        tensor.data, tensor.ndim = self.address if self.host.size else None, self.host.ndim  # as torch: no memory
        tensor.device = dlpack.DLDevice(*self.device)
        tensor.dtype = dlpack.DLDataType(*self.dtype)
        tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        if strides is not None:
            tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        struct.deleter = self._deleter
        if versioned:
            struct.version = dlpack.DLPackVersion(*self.version)
            struct.flags = self.flags
        self._live[ctypes.addressof(struct)] = (struct, shape, strides)
        self.exported += 1
        # No capsule destructor: a consumer that takes the capsule owns the struct; one that does not leaks it,
        # which `exported - deleted` shows.
        return _new_capsule(ctypes.addressof(struct), b"dltensor_versioned" if versioned else b"dltensor", None)

    def _delete(self, address: int) -> None:
        del self._live[address]
        self.deleted += 1


def legacy(tensor: np.ndarray | FakeTensor) -> object:
    """A producer from before DLPack 1.0 wrapping `tensor`: `__dlpack__(stream)` only."""
    class Legacy:
        def __dlpack__(self, stream: Any = None) -> object:
            return tensor.__dlpack__(stream=stream)

        def __dlpack_device__(self) -> tuple[int, int]:
            return tensor.__dlpack_device__()
    return Legacy()
