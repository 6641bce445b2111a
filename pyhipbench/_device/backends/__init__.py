"""Backends: hip-python (AMD GPUs) and cuda-bindings (NVIDIA GPUs)."""
from __future__ import annotations

from .base import Backend, DeviceProperties, FunctionLimits, KernelParam

BACKEND_NAMES = ("hip", "cuda")  # AMD first: pyhipbench's primary target


def open_backend(name: str, index: int) -> Backend:
    """Opens device `index` through backend `name`; raises NoDeviceError if it can't."""
    if name == "cuda":
        from .cuda import CudaBackend
        return CudaBackend(index)
    if name == "hip":
        from .hip import HipBackend
        return HipBackend(index)
    raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(BACKEND_NAMES)}")


__all__ = ["Backend", "DeviceProperties", "FunctionLimits", "KernelParam", "BACKEND_NAMES", "open_backend"]
