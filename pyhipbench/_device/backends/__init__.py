"""Backends: hip-python (AMD GPUs) and cuda-bindings (NVIDIA GPUs)."""
from __future__ import annotations

from .base import Backend, DeviceProperties, FunctionLimits, KernelParam, PointerMemory

BACKEND_NAMES = ("hip", "cuda")  # AMD first: pyhipbench's primary target


def backend_class(name: str) -> type[Backend]:
    """Backend `name`'s class, no device opened: its class attributes (kernel_timer, formats, ...)
    answer what differs between vendors where there is no GPU (the demo's plan)."""
    if name == "cuda":
        from .cuda import CudaBackend
        return CudaBackend
    if name == "hip":
        from .hip import HipBackend
        return HipBackend
    raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(BACKEND_NAMES)}")


def open_backend(name: str, index: int) -> Backend:
    """Opens device `index` through backend `name`; raises NoDeviceError if it can't."""
    return backend_class(name)(index)


__all__ = ["Backend", "DeviceProperties", "FunctionLimits", "KernelParam", "PointerMemory", "BACKEND_NAMES",
           "backend_class", "open_backend"]
