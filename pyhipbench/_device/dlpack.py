"""DLPack, both ways, without torch: the C structs through ctypes.

Consuming (`read`): any object with `__dlpack__` / `__dlpack_device__` (torch,
CuPy, JAX, numpy, pyhipbench's own arrays). The versioned capsule of DLPack 1.x
(`dltensor_versioned`, `DLManagedTensorVersioned`) is asked for first, with
`copy=False`; a producer that predates it gets the plain call and hands the
0.8 capsule (`dltensor`, `DLManagedTensor`). The capsule is renamed `used_*`,
so its owner is now the `Managed` returned, which calls the producer's
deleter when it is collected.

Producing (`export`): the capsule a consumer (`torch.from_dlpack`,
`cupy.from_dlpack`) takes, for a device array; it holds the array until the
consumer calls the deleter (or the capsule is dropped unconsumed).

`__cuda_array_interface__` is not read: DLPack covers torch, CuPy and JAX on
both vendors (CAI is CUDA only, and has no ROCm counterpart in these
libraries), so there is one way in. Its struct layouts are DLPack's
`dlpack.h` (v0.8 and v1.0 agree on `DLTensor`).
"""
from __future__ import annotations

import ctypes
import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._values import show
from ..errors import BenchError

# DLDeviceType (dlpack.h)
CPU, CUDA, CUDA_HOST, ROCM, ROCM_HOST, CUDA_MANAGED = 1, 2, 3, 10, 11, 13
DEVICE_TYPE_NAMES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal",
                     9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev", 13: "kDLCUDAManaged",
                     14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA"}
# DLDataTypeCode (dlpack.h) -> numpy kind; bfloat16 (4), the float8 codes and opaque handles have no numpy dtype
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_TYPE_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat", 5: "complex", 6: "bool"}
READ_ONLY, IS_COPIED = 1 << 0, 1 << 1  # DLPACK_FLAG_BITMASK_* of DLManagedTensorVersioned.flags
VERSION = (1, 0)  # the DLPack version pyhipbench reads and writes
INT32_MAX = 2**31 - 1  # DLDevice's fields are C int32s
MAX_NDIM = 64  # more dimensions than numpy or torch allow: a corrupt capsule
DEVICE_EXPECTED = (f"expected a (device_type, device_id) pair of ints (a DLDeviceType in [1, {INT32_MAX}] and a "
                   f"device id in [0, {INT32_MAX}]), such as (2, 0) for CUDA device 0")


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# Both managed structs' deleters take the struct's own address.
Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):  # DLPack 0.8, capsule "dltensor"
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", Deleter)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):  # DLPack 1.x, capsule "dltensor_versioned"
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", Deleter),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# The capsule API, on object arguments (a live capsule) and on raw pointers (a
# capsule being destroyed: no new reference to it may be made).
_API = ctypes.pythonapi
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _API))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _API))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _API))
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _API))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _API))
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor)(
    ("PyCapsule_New", _API))

# PyCapsule_SetName and PyCapsule_New keep the name's address: these bytes live as long as the module.
_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}
_USED_NAMES = {False: b"used_dltensor", True: b"used_dltensor_versioned"}


@dataclass(frozen=True)
class Managed:
    """A consumed DLPack tensor: what it describes, and ownership of it.

    When this is collected the producer's deleter runs, releasing the
    producer's hold on the memory; keep this alive while the memory is used.
    """
    address: int                 # data + byte_offset
    device_type: int             # DLDeviceType
    device_id: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None  # elements; None: C-contiguous
    type_code: int               # DLDataTypeCode
    bits: int
    lanes: int
    flags: int                   # DLPack 1.x flags (0 for a 0.8 capsule)
    version: tuple[int, int]     # (0, 8) for a 0.8 capsule
    _release: Any                # the struct whose deleter frees it

    def __del__(self) -> None:
        self._release()

    @property
    def device_name(self) -> str:
        return f"{DEVICE_TYPE_NAMES.get(self.device_type, 'unknown')} ({self.device_type}) {self.device_id}"

    def dtype(self) -> np.dtype | None:
        """The numpy dtype of one element, or None where numpy has none (bfloat16, float8, vectors)."""
        kind = _KINDS.get(self.type_code)
        if kind is None or self.lanes != 1 or self.bits % 8:
            return None
        try:
            return np.dtype(f"{kind}{self.bits // 8}") if kind != "b" else np.dtype(bool)
        except TypeError:  # a width numpy lacks, such as float128 on some machines
            return None

    def type_name(self) -> str:
        """The element type in DLPack's words: 'bfloat16', 'float32x4'."""
        name = f"{_TYPE_CODE_NAMES.get(self.type_code, f'type code {self.type_code} ')}{self.bits}"
        return name + (f"x{self.lanes}" if self.lanes != 1 else "")

    def contiguous(self) -> bool:
        """Row-major and dense: the strides (if given) are the shape's, size-1 dimensions aside."""
        if self.strides is None or 0 in self.shape:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


class _Release:
    """Calls a consumed struct's deleter exactly once."""

    def __init__(self, struct: DLManagedTensor | DLManagedTensorVersioned) -> None:
        self._struct = struct

    def __call__(self) -> None:
        struct, self._struct = self._struct, None
        if struct is not None and struct.deleter:
            struct.deleter(ctypes.addressof(struct))


def shown(value: object) -> str:
    """`show(value)`, or the type's name where the value's own repr fails (a producer's object)."""
    try:
        return show(value)
    except Exception:
        return f"<a {type(value).__name__} whose repr() raised>"


def device_of(obj: object, label: str | None = None) -> tuple[int, int]:
    """`obj.__dlpack_device__()` as (DLDeviceType, device id) Python ints.

    Anything but a tuple of two integers in DLDevice's ranges (a string, a
    float, None, a negative id, one beyond int32), and any exception the
    producer raises, is a BenchError naming `label` (default: the type's
    name) and the value; the producer's exception is chained.
    """
    label = label or type(obj).__name__
    try:
        device = obj.__dlpack_device__()
    except Exception as e:
        raise BenchError(f"{label}: its __dlpack_device__() raised {type(e).__name__}: {_text_of(e)}") from e
    if not isinstance(device, tuple) or len(device) != 2:
        raise BenchError(f"{label}: its __dlpack_device__() returned {shown(device)}; {DEVICE_EXPECTED}")
    checked = []
    for what, value, low in (("device_type", device[0], 1), ("device id", device[1], 0)):
        if isinstance(value, (bool, np.bool_)):
            why = "a bool, not an integer"
        else:
            try:
                number = operator.index(value)
            except TypeError:
                why = f"a {type(value).__name__}, not an integer"
            else:
                if low <= number <= INT32_MAX:
                    checked.append(number)
                    continue
                why = "out of range"
        raise BenchError(f"{label}: its __dlpack_device__() returned {shown(device)}, whose {what} is "
                         f"{shown(value)}, {why}; {DEVICE_EXPECTED}")
    return checked[0], checked[1]


def _text_of(error: BaseException) -> str:
    """str(error), or its type's name where even that fails."""
    try:
        return str(error)
    except Exception:
        return f"(a {type(error).__name__} whose str() raised)"


def read(obj: object, stream: int | None) -> Managed:
    """Consumes `obj.__dlpack__(stream=stream)`: the tensor it describes, now owned by the result.

    `stream`: the stream the memory will be used on, in DLPack's terms
    (CUDA: 1 = the legacy default stream; ROCm: 0 = the default stream);
    None for a CPU producer.
    """
    producer = type(obj).__name__
    try:
        try:
            capsule = obj.__dlpack__(stream=stream, max_version=VERSION, copy=False)
        except TypeError:  # a producer from before DLPack 1.0 knows neither keyword
            capsule = obj.__dlpack__(stream=stream)
    except BufferError:  # DLPack's "cannot export this one": the caller words it
        raise
    except Exception as e:
        raise BenchError(f"{producer}.__dlpack__() raised {type(e).__name__}: {_text_of(e)}") from e
    for versioned in (True, False):
        if _is_valid(capsule, _NAMES[versioned]):
            break
    else:
        raise BenchError(f"{type(obj).__name__}.__dlpack__() returned {type(capsule).__name__}, not an unused "
                         "DLPack capsule ('dltensor' or 'dltensor_versioned')")
    address = _get_pointer(capsule, _NAMES[versioned])
    struct = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(address)
    version = (struct.version.major, struct.version.minor) if versioned else (0, 8)
    if versioned and version[0] > VERSION[0]:  # its layout may differ: leave the capsule to its owner
        raise BenchError(f"{type(obj).__name__} exported DLPack {version[0]}.{version[1]}; "
                         f"expected DLPack {VERSION[0]}.x or 0.8")
    _set_name(capsule, _USED_NAMES[versioned])  # ours now: the capsule's destructor leaves it alone
    release = _Release(struct)
    tensor = struct.dl_tensor
    ndim = tensor.ndim
    if not 0 <= ndim <= MAX_NDIM or (ndim and not tensor.shape):
        release()
        what = f"ndim {ndim}" if not 0 <= ndim <= MAX_NDIM else f"ndim {ndim} and no shape (a NULL pointer)"
        raise BenchError(f"{producer} exported a DLPack tensor of {what}; expected 0 to {MAX_NDIM} dimensions "
                         "and their sizes")
    shape = tuple(tensor.shape[i] for i in range(ndim))
    if any(size < 0 for size in shape):
        release()
        raise BenchError(f"{producer} exported a DLPack tensor of shape {shape}; expected sizes >= 0")
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    return Managed(address=(tensor.data or 0) + tensor.byte_offset, device_type=tensor.device.device_type,
                   device_id=tensor.device.device_id, shape=shape, strides=strides,
                   type_code=tensor.dtype.code, bits=tensor.dtype.bits, lanes=tensor.dtype.lanes,
                   flags=struct.flags if versioned else 0, version=version, _release=release)


# -- producing ---------------------------------------------------------------
# Exports alive: the managed struct's address -> (struct, shape array, the exported object).
_exports: dict[int, tuple] = {}


@Deleter
def _delete_export(address: int) -> None:
    _struct, _shape, owner = _exports.pop(address)
    owner._exports -= 1


@_CapsuleDestructor
def _destroy_capsule(capsule: int) -> None:
    # A capsule never consumed still holds its export: release it as its deleter would.
    for versioned in (True, False):
        if _raw_is_valid(capsule, _NAMES[versioned]):
            _delete_export(_raw_get_pointer(capsule, _NAMES[versioned]))


def export(owner: Any, address: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int],
           versioned: bool) -> object:
    """A DLPack capsule for the C-contiguous memory at `address`, held by the capsule's consumer.

    `owner` (a DeviceArray) is kept alive, and its `_exports` count raised,
    until the consumer calls the deleter. `device`: (DLDeviceType, id).
    `versioned`: a DLPack 1.0 capsule (else 0.8).
    """
    code = {v: k for k, v in _KINDS.items()}[dtype.kind]
    struct = (DLManagedTensorVersioned if versioned else DLManagedTensor)()
    dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    tensor = struct.dl_tensor
    tensor.data, tensor.ndim = address, len(shape)
    tensor.device = DLDevice(*device)
    tensor.dtype = DLDataType(code, dtype.itemsize * 8, 1)
    tensor.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    tensor.strides = None  # C-contiguous, which DLPack 0.8 and 1.0 allow saying so
    struct.deleter = _delete_export
    if versioned:
        struct.version = DLPackVersion(*VERSION)
    _exports[ctypes.addressof(struct)] = (struct, dims, owner)
    owner._exports += 1
    return _capsule_new(ctypes.addressof(struct), _NAMES[versioned], _destroy_capsule)
