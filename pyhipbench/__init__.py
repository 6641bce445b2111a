"""pyhipbench: GPU kernel timing for autotuners.

A C++ launch loop (pyhipbench._core) times each launch of a kernel, with no
Python in the timed loop, until the median's 95 % confidence interval is
within the asked precision. The default timer reads each kernel's own start
and end (CUPTI) on NVIDIA and brackets the dispatch with events on AMD; the
default cache state is clean-cold (an untimed read of 1.25x the last-level
cache before each launch). Python sets the run up: devices and memory through
hip-python or cuda-bindings, argument checks from the code object, rotating
argument sets, statistics.

This module is the public API; the packages whose names start with `_` are the
implementation. `pyhipbench.codegen` (LLVM IR to code objects),
`pyhipbench.triton` (Triton kernels and autotuning), the sweep and source names load
their dependencies (llvmlite, Triton, SQLite) only when first used.
"""
from importlib import import_module as _import_module
from importlib.metadata import version as _distribution_version

from ._core import request_interrupt
from ._cpp import cmake_dir, include_dir
from ._device.device import Device, available_backends
from ._device.memory import DeviceArray
from ._device.module import Kernel, Module
from ._launch.args import (
    Pointer,
    Scalar,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    shared,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._launch.launch import Launch, module_launches
from ._launch.launch_config import LaunchConfig
from ._measure.bench import bench, bench_chain
from ._measure.callable import bench_callable
from ._measure.do_bench import do_bench
from ._measure.options import BenchOptions
from ._measure.result import Clock, KernelTime, Result
from ._measure.rotation import Rotation, RotationCapped, plan_rotation
from ._tuning.contenders import SourceLaunch
from ._tuning.tune import tune
from ._tuning.tuning import CandidateResult, Tuning
from .errors import (
    BenchError,
    CodegenError,
    DriverError,
    Error,
    IRError,
    KernelFault,
    LibraryError,
    MeasurementError,
    NoDeviceError,
    OutputMismatch,
    ToolchainError,
    VerificationError,
)

__version__ = _distribution_version("pyhipbench")  # pyproject.toml holds the one version

# Names loaded on first use (PEP 562), so `import pyhipbench` does not import what they need:
# name -> the module that defines it, relative to this package.
_LAZY: dict[str, str] = {
    **{name: "._sweep" for name in ("sweep", "Candidate", "load_space", "candidates_from_json", "SweepSummary",
                                    "SweepInterrupted", "watchdog_s")},
    **{name: "._results.store" for name in ("Store", "export_best", "load_results")},
    **{name: "._sources" for name in ("Source", "CodeObjectSource", "IRSource", "CudaSource", "HipSource", "Code",
                                      "CompileTarget", "register_source_kind")},
    # Triton's kind is the Triton front end's; its module hands out the registry with the kind in it.
    "TritonSource": ".triton._source", "SOURCE_KINDS": ".triton._source",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(_LAZY[name], __name__), name)
    globals()[name] = value  # found here from now on, without this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "bench", "bench_chain", "bench_callable", "do_bench", "tune", "Tuning", "CandidateResult", "SourceLaunch",
    "request_interrupt",
    "Launch", "module_launches", "KernelTime",
    "BenchOptions", "cmake_dir", "include_dir", "Device", "available_backends", "DeviceArray", "Module",
    "Kernel", "LaunchConfig",
    "Result", "Clock", "Rotation", "RotationCapped", "plan_rotation", "shared", "Pointer", "Scalar",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
    "Error", "BenchError", "IRError", "CodegenError", "VerificationError", "ToolchainError",
    "NoDeviceError", "LibraryError", "MeasurementError", "OutputMismatch", "DriverError", "KernelFault",
    *_LAZY,
]
