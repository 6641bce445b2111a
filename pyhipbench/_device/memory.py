"""Device arrays: a typed, shaped block of device memory owned by a backend.

Tensors from elsewhere (torch, CuPy, JAX) come in through DLPack as views
(`DeviceArray.from_dlpack`), and pyhipbench's arrays go out the same way
(`__dlpack__`, `__dlpack_device__`; `__cuda_array_interface__` on CUDA), so
torch.from_dlpack or cupy.from_dlpack see the same memory.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .._values import integer, show
from ..errors import BenchError
from . import dlpack
from .backends.base import Backend

# What a backend's device memory is, in DLPack's device types: (its own, others that kernels read as device memory)
DLPACK_DEVICE_TYPES = {"cuda": (dlpack.CUDA, (dlpack.CUDA, dlpack.CUDA_MANAGED)),
                       "hip": (dlpack.ROCM, (dlpack.ROCM,))}
# The stream DLPack producers are asked to make the memory ready on: the legacy default stream, which
# pyhipbench's own streams (blocking) wait for. CUDA spells it 1, ROCm 0.
DLPACK_DEFAULT_STREAM = {"cuda": 1, "hip": 0}

# Kinds the kernels can read as plain numbers: bool, signed, unsigned, float, complex.
SUPPORTED_KINDS = "biufc"


def check_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """`dtype` as a numpy dtype of a SUPPORTED_KINDS kind; BenchError naming it otherwise."""
    try:  # np.dtype(None) is float64: a missing dtype must not become one
        checked = None if dtype is None else np.dtype(dtype)
    except (TypeError, ValueError):
        checked = None
    if checked is None:
        raise BenchError(f"dtype {show(dtype)} is not a numpy dtype; expected a bool, integer, "
                         "float or complex dtype such as 'float32'")
    if checked.kind not in SUPPORTED_KINDS or checked.fields is not None:
        raise BenchError(f"unsupported array dtype {checked}; expected a bool, integer, "
                         "float or complex dtype")
    return checked


def check_shape(shape: object) -> tuple[int, ...]:
    """`shape` (one integer, or a tuple, list or 1-D array of them; numpy integers
    included) as a tuple of Python ints >= 0."""
    if isinstance(shape, (tuple, list)) or (isinstance(shape, np.ndarray) and shape.ndim == 1):
        return tuple(integer(f"shape[{i}]", n, 0) for i, n in enumerate(shape))
    return (integer("shape", shape, 0),)


class DeviceArray:
    """`nbytes` bytes of device memory at `address`, viewed as `shape` x `dtype`.

    The size is computed with Python ints (no overflow) and checked against
    the device's free memory before anything is allocated.
    """

    def __init__(self, backend: Backend, shape: int | tuple[int, ...], dtype: DTypeLike) -> None:
        self.address, self._exports = 0, 0  # until allocated: __del__ then frees nothing
        self.shape = check_shape(shape)
        self.dtype = check_dtype(dtype)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        free, _ = backend.memory_info()
        if self.nbytes > free:
            raise BenchError(f"an array of shape {self.shape} {self.dtype} needs {self.nbytes} bytes; "
                             f"the device has {free} bytes free")
        self._backend = backend
        self._owner, self._source, self._exports = True, None, 0
        self.address = backend.allocate(max(self.nbytes, 1))

    @classmethod
    def view(cls, backend: Backend, address: int, shape: tuple[int, ...], dtype: np.dtype,
             source: Any = None) -> "DeviceArray":
        """An array over memory something else owns (a slice of a larger block, a tensor):
        `free()` releases nothing. `source` is kept alive as long as the view."""
        array = cls.__new__(cls)
        array.shape, array.dtype = tuple(shape), np.dtype(dtype)
        array.nbytes = math.prod(array.shape) * array.dtype.itemsize
        array._backend, array._owner, array.address = backend, False, address
        array._source, array._exports = source, 0
        return array

    @classmethod
    def from_dlpack(cls, backend: Backend, tensor: object, what: str = "") -> "DeviceArray":
        """A view of `tensor`'s own memory (no copy), taken through DLPack, holding the tensor.

        `tensor` must be on this backend's device (same device type and
        ordinal), C-contiguous, writable, and of a numpy element type, and
        the driver must know its memory as this device's (a producer that
        claims a GPU over host memory is refused); each refusal is a
        BenchError naming `what` (the argument) and the value. An exception
        the producer's `__dlpack_device__` or `__dlpack__` raises becomes a
        BenchError too, chained to it.
        """
        label = f"{what + ': ' if what else ''}a {_type_name(tensor)}"
        index = backend.properties().index
        _, accepted = DLPACK_DEVICE_TYPES[backend.name]
        wanted = (f"memory on {backend.name.upper()} device {index} (DLPack "
                  f"{' or '.join(dlpack.DEVICE_TYPE_NAMES[t] for t in accepted)}, device id {index}), "
                  "the bench's device")
        device_type, device_id = dlpack.device_of(tensor, label)
        if device_type not in accepted or device_id != index:
            name = dlpack.DEVICE_TYPE_NAMES.get(device_type, "unknown device type")
            raise BenchError(f"{label} on {name} ({device_type}) device {device_id}; expected {wanted}")
        try:
            managed = dlpack.read(tensor, DLPACK_DEFAULT_STREAM[backend.name])
        except BufferError as e:  # DLPack's "cannot export this one", e.g. torch's tensors that require grad
            raise BenchError(f"{label} refused to export itself through DLPack: {e}") from None
        except BenchError as e:  # the capsule, or an exception the producer raised (its cause)
            raise BenchError(f"{label}: {e}") from e.__cause__
        if (managed.device_type, managed.device_id) != (device_type, device_id):
            raise BenchError(f"{label}: its DLPack capsule is on {managed.device_name} but __dlpack_device__ said "
                             f"{dlpack.DEVICE_TYPE_NAMES.get(device_type)} ({device_type}) {device_id}")
        if not managed.address:  # torch gives an empty tensor no memory at all
            raise BenchError(f"{label} of shape {managed.shape} has no memory (its data pointer is NULL); "
                             "expected a tensor with at least one element")
        if managed.flags & dlpack.IS_COPIED:
            raise BenchError(f"{label}: its producer exported a copy (DLPack flag IS_COPIED); "
                             "expected its own memory")
        if managed.flags & dlpack.READ_ONLY:
            raise BenchError(f"{label} is read-only (DLPack flag READ_ONLY) and a kernel may write to its "
                             "arguments; expected a writable tensor")
        dtype = managed.dtype()
        if dtype is None or dtype.kind not in SUPPORTED_KINDS:
            raise BenchError(f"{label} of {managed.type_name()} has no numpy dtype; pass it reinterpreted as "
                             f"an integer type of the same width (torch: tensor.view(torch.int{managed.bits})): "
                             "the kernel gets the same memory")
        if not managed.contiguous():
            raise BenchError(f"{label} of shape {managed.shape} with strides {managed.strides} (elements) is not "
                             "C-contiguous; expected a dense row-major tensor (torch: tensor.contiguous())")
        _check_memory(backend, managed, math.prod(managed.shape) * dtype.itemsize, label, wanted)
        return cls.view(backend, managed.address, managed.shape, dtype, source=(managed, tensor))

    # -- DLPack and CUDA array interface export --------------------------------
    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLDeviceType, device ordinal): kDLCUDA (2) or kDLROCM (10)."""
        own, _ = DLPACK_DEVICE_TYPES[self._backend.name]
        return own, self._backend.properties().index

    def __dlpack__(self, *, stream: int | None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> object:
        """A DLPack capsule of this array's memory (no copy): 1.0 when `max_version` allows, else 0.8.

        `stream` is accepted and needs no wait: pyhipbench's copies and runs
        have finished when they return. The array stays allocated (`free()`
        refuses) until the consumer releases the capsule.
        """
        if not self.address:
            raise BenchError("__dlpack__: this device array has been freed; expected a live one")
        if copy:
            raise BenchError("__dlpack__(copy=True): pyhipbench exports its own memory, it does not copy; "
                             "expected copy=None or False")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BenchError(f"__dlpack__(dl_device={show(dl_device)}): this array is on "
                             f"{self.__dlpack_device__()}; expected that or None")
        if stream is not None and not isinstance(stream, int):
            raise BenchError(f"__dlpack__(stream={show(stream)}): expected an integer stream or None")
        versioned = max_version is not None and max_version[0] >= dlpack.VERSION[0]
        return dlpack.export(self, self.address, self.shape, self.dtype, self.__dlpack_device__(), versioned)

    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        """CUDA array interface v3 (CUDA backend only): shape, typestr, data (address, read-only False)."""
        if not self._backend.cuda_array_interface:
            raise AttributeError(f"__cuda_array_interface__ is CUDA's; this array is on the "
                                 f"{self._backend.name} backend (use DLPack: __dlpack__)")
        if not self.address:
            raise BenchError("__cuda_array_interface__: this device array has been freed; expected a live one")
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.address, False),
                "strides": None, "stream": None, "version": 3}

    def copy_from(self, host: np.ndarray) -> None:
        """Copies a host array of the same shape and dtype to the device."""
        if not isinstance(host, np.ndarray):
            raise BenchError(f"copy_from takes a numpy array, got {type(host).__name__}")
        if host.shape != self.shape or host.dtype != self.dtype:
            raise BenchError(f"host array {host.shape} {host.dtype} does not match "
                             f"device array {self.shape} {self.dtype}")
        self._backend.copy_to_device(self.address, np.ascontiguousarray(host))

    def to_numpy(self) -> np.ndarray:
        """A host copy of the contents."""
        host = np.empty(self.shape, self.dtype)
        self._backend.copy_to_host(host, self.address)
        return host

    def free(self) -> None:
        """Releases the memory now rather than when the array is collected."""
        if self._exports:
            raise BenchError(f"free(): {self._exports} DLPack consumer(s) (torch, CuPy, ...) still use this "
                             "array; expected it freed after they release it")
        if self.address:
            address, self.address = self.address, 0  # freed at most once, even if the driver fails
            if self._owner:
                self._backend.free(address)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown or a dead context: nothing to release into
            pass

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, address=0x{self.address:x})"


def _check_memory(backend: Backend, managed: dlpack.Managed, nbytes: int, label: str, wanted: str) -> None:
    """Refuses a capsule whose memory the driver does not know as this device's: host memory (a producer
    that claims a GPU over it), another device's memory, or a shape that runs past its allocation."""
    address, index, vendor = managed.address, backend.properties().index, backend.name.upper()
    where = f"{label}: its memory at 0x{address:x}"
    if address >= 1 << 64:
        raise BenchError(f"{where} is beyond a 64-bit address space; expected {wanted}")
    memory = backend.pointer_memory(address)
    if memory.kind == "unknown":
        raise BenchError(f"{where} is not device memory: the {vendor} driver does not know it (host memory, "
                         f"such as a numpy array's, or no memory at all); expected {wanted}")
    if memory.kind == "host":
        raise BenchError(f"{where} is host memory (pinned, mapped or registered with the {vendor} driver), not "
                         f"device memory; expected {wanted}")
    if memory.kind == "device" and memory.device != index:
        raise BenchError(f"{where} is device memory of {vendor} device {memory.device}, not memory of device "
                         f"{index} (the capsule says device {managed.device_id}); expected {wanted}")
    if memory.start is not None and memory.size is not None and address + nbytes > memory.start + memory.size:
        held = max(memory.start + memory.size - address, 0)
        raise BenchError(f"{label} of shape {managed.shape} needs {nbytes} bytes from 0x{address:x}, but its "
                         f"allocation (0x{memory.start:x}, {memory.size} bytes) holds {held} from there; expected "
                         "a tensor that fits in its memory")


def _type_name(value: object) -> str:
    """'torch.Tensor', 'cupy.ndarray': the top-level package and the class name."""
    return f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"
