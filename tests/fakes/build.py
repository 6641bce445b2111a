"""Builds the fake GPU driver libraries the CPU-only tests load.

`build_fake(tmpdir, "libamdhip64.so")` gives a fake HIP runtime: the launch,
event and error symbols (fake_driver.c) plus devices, memory, modules and
versions (fake_hip_runtime.c), so hip-python and the C++ core can both load it.
`build_fake(tmpdir, "libcupti.so")` gives a fake CUPTI (fake_cupti.c), linked
to the fake libcuda.so.1 that must already be in `tmpdir`, as the real libcupti
is linked to the driver. Any other name (e.g. "libcuda.so.1") gives the fake
driver alone.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

FAKES = Path(__file__).resolve().parent
HIP_LIBRARY_NAME = "libamdhip64.so"
CUDA_LIBRARY_NAME = "libcuda.so.1"
CUPTI_LIBRARY_NAME = "libcupti.so"


def sources_for(name: str) -> list[Path]:
    """The C files that make the fake library `name`."""
    if name == CUPTI_LIBRARY_NAME:
        return [FAKES / "fake_cupti.c"]
    sources = [FAKES / "fake_driver.c"]
    if name == HIP_LIBRARY_NAME:
        sources.append(FAKES / "fake_hip_runtime.c")
    return sources


def version_define() -> list[str]:
    """Makes the fake HIP runtime report the HIP version the installed hip-python was built for.

    So a HipBackend over the fake passes the version pairing check by default;
    without hip-python the fake keeps its own default (ROCm 7.2).
    """
    try:
        import hip
    except ImportError:
        return []
    return [f"-DFAKE_HIP_DEFAULT_VERSION={int(hip.HIP_VERSION)}"]


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
            CUPTI_LIBRARY_NAME: [str(output.parent / CUDA_LIBRARY_NAME), "-Wl,-rpath,$ORIGIN"]}.get(name, [])
    command = [compiler, "-std=gnu11", "-O1", "-Wall", "-shared", "-fPIC", *version_define(),
               "-o", str(output), *map(str, sources_for(name)), *link]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building {name} failed ({' '.join(command)}):\n{result.stderr}")
    return output
