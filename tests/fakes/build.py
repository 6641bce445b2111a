"""Builds the fake GPU driver libraries the CPU-only tests load.

`build_fake(tmpdir, "libamdhip64.so")` gives a fake HIP runtime: the launch,
event and error symbols (fake_driver.c) plus devices, memory, modules and
versions (fake_hip_runtime.c), so hip-python and the C++ core can both load it.
`build_fake(tmpdir, "libcupti.so")` gives a fake CUPTI (fake_cupti.c), linked
to the fake libcuda.so.1 that must already be in `tmpdir`, as the real libcupti
is linked to the driver. `build_fake(tmpdir, "libhiprtc.so")` gives a fake hiprtc
(fake_hiprtc.c), `build_fake(tmpdir, "libnvidia-ml.so.1")` a fake NVML
(fake_nvml.c), `build_fake(tmpdir, "librocprofiler-sdk.so")` a fake
rocprofiler-sdk (fake_rocprofiler.c), linked to the fake libamdhip64.so that
must already be in `tmpdir`. Any other name (e.g. "libcuda.so.1") gives the fake driver alone.
"""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

FAKES = Path(__file__).resolve().parent
HIP_LIBRARY_NAME = "libamdhip64.so"
CUDA_LIBRARY_NAME = "libcuda.so.1"
CUPTI_LIBRARY_NAME = "libcupti.so"
HIPRTC_LIBRARY_NAME = "libhiprtc.so"
NVML_LIBRARY_NAME = "libnvidia-ml.so.1"
ROCPROFILER_LIBRARY_NAME = "librocprofiler-sdk.so"


def sources_for(name: str) -> list[Path]:
    """The C files that make the fake library `name`."""
    if name == CUPTI_LIBRARY_NAME:
        return [FAKES / "fake_cupti.c"]
    if name == HIPRTC_LIBRARY_NAME:
        return [FAKES / "fake_hiprtc.c"]
    if name == NVML_LIBRARY_NAME:
        return [FAKES / "fake_nvml.c"]
    if name == ROCPROFILER_LIBRARY_NAME:
        return [FAKES / "fake_rocprofiler.c"]
    sources = [FAKES / "fake_driver.c"]
    if name == HIP_LIBRARY_NAME:
        sources.append(FAKES / "fake_hip_runtime.c")
    return sources


# hip-python's declaration of the struct hipGetDeviceProperties fills, e.g.
#     cdef struct hipDeviceProp_t "hipDeviceProp_tR0600":
DEVICE_PROP_DECLARATION = re.compile(r'cdef struct hipDeviceProp_t "hipDeviceProp_t(R\d+)"')


def bindings_declarations() -> Path:
    """The installed hip-python's C declarations: hip/chip.pxd (7.x) or rocm/bindings/cyhip.pxd (10.x)."""
    for module in ("hip.chip", "rocm.bindings.cyhip"):
        try:
            spec = importlib.util.find_spec(module)
        except ImportError:  # its parent package is absent
            continue
        if spec is not None and spec.origin is not None:
            return Path(spec.origin).parent / (module.rsplit(".", 1)[1] + ".pxd")
    raise RuntimeError("hip-python is installed but neither hip.chip nor rocm.bindings.cyhip was found")


def hip_python_defines() -> list[str]:
    """Pairs the fake HIP runtime with the installed hip-python.

    FAKE_HIP_DEFAULT_VERSION: the HIP version its bindings were generated for
    (hip.HIP_VERSION; 10.x re-exports rocm.version's), so a HipBackend over the
    fake passes the version check by default. FAKE_HIP_DEVICE_PROP: the
    hipDeviceProp_t revision its bindings declare (600 for hipDeviceProp_tR0600),
    whose layout the fake must mirror. Without hip-python the fake keeps its
    defaults (hip-python 7.2's).
    """
    try:
        import hip
    except ImportError:
        return []
    declarations = bindings_declarations()
    match = DEVICE_PROP_DECLARATION.search(declarations.read_text())
    if match is None:
        raise RuntimeError(f"{declarations} declares no hipDeviceProp_t revision "
                           f"(expected a match for {DEVICE_PROP_DECLARATION.pattern})")
    revision = int(match[1][1:])  # "R0600" -> 600
    return [f"-DFAKE_HIP_DEFAULT_VERSION={int(hip.HIP_VERSION)}", f"-DFAKE_HIP_DEVICE_PROP={revision}"]


def build_fake(tmpdir: str | Path, name: str) -> Path:
    """Compiles the fake library `name` into `tmpdir`; its path.

    Needs a C compiler (gcc or cc) on PATH; raises RuntimeError with the
    compiler's output if the build fails.
    """
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise RuntimeError("building the fake driver needs a C compiler: found neither gcc nor cc on PATH")
    output = Path(tmpdir) / name
    output.parent.mkdir(parents=True, exist_ok=True)
    # The fake libcupti finds the fake driver as the real one does: by the
    # driver's soname, already loaded or beside it.
    link = {CUDA_LIBRARY_NAME: [f"-Wl,-soname,{CUDA_LIBRARY_NAME}"],
            CUPTI_LIBRARY_NAME: [str(output.parent / CUDA_LIBRARY_NAME), "-Wl,-rpath,$ORIGIN"],
            ROCPROFILER_LIBRARY_NAME: [str(output.parent / HIP_LIBRARY_NAME)]}.get(name, [])
    command = [compiler, "-std=gnu11", "-O1", "-Wall", "-shared", "-fPIC", *hip_python_defines(),
               "-o", str(output), *map(str, sources_for(name)), *link]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building {name} failed ({' '.join(command)}):\n{result.stderr}")
    return output
