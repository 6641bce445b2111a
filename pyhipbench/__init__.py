"""pyhipbench: GPU kernel timing for autotuners.

A C++ launch loop (pyhipbench._core) times each launch with driver events while
rotating R copies of the argument buffers, so no iteration reads the previous
one's cached data. Python sets the run up: devices and memory through
hip-python or cuda-bindings, parameter checks from the code object, the
rotation count, statistics.
"""
from importlib.metadata import version as _distribution_version

from ._launch.args import Pointer, Scalar, float16, float32, float64, int8, int16, int32, int64, shared
from ._launch.args import uint8, uint16, uint32, uint64
from ._measure.bench import bench
from ._cpp import cmake_dir, include_dir
from ._device.device import Device, available_backends
from .errors import (BenchError, CodegenError, DriverError, Error, IRError, KernelFault, LibraryError,
                     MeasurementError, NoDeviceError, OutputMismatch, ToolchainError, VerificationError)
from ._launch.launch_config import LaunchConfig
from ._device.memory import DeviceArray
from ._device.module import Kernel, Module
from ._measure.result import Result
from ._measure.rotation import Rotation, RotationCapped, plan_rotation
from . import sweep  # a callable package: hb.sweep(candidates, db=...), hb.sweep.Candidate

__version__ = _distribution_version("pyhipbench")  # pyproject.toml holds the one version

__all__ = [
    "bench", "sweep", "cmake_dir", "include_dir", "Device", "available_backends", "DeviceArray", "Module", "Kernel", "LaunchConfig",
    "Result", "Rotation", "RotationCapped", "plan_rotation", "shared", "Pointer", "Scalar",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    "Error", "BenchError", "IRError", "CodegenError", "VerificationError", "ToolchainError",
    "NoDeviceError", "LibraryError", "MeasurementError", "OutputMismatch", "DriverError", "KernelFault",
]
