"""Shared fixtures: the fake driver libraries, and a Device over them."""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._device import nvml

from fakes.build import NVML_LIBRARY_NAME, build_fake
from fakes.cupti import FakeCupti
from fakes.driver import FakeDriver, mapped_libraries
from fakes.host_backend import HostBackend


@pytest.fixture(scope="session")
def fake_libraries(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fake-drivers")
    libraries = {"cuda": build_fake(directory, "libcuda.so.1"), "hip": build_fake(directory, "libamdhip64.so")}
    libraries["cupti"] = build_fake(directory, "libcupti.so")  # linked to the fake libcuda beside it
    return libraries


@pytest.fixture
def no_real_cupti(tmp_path_factory, monkeypatch):
    """Points PYHIPBENCH_CUPTI_LIBRARY at a libcupti that does not exist.

    Tests on the fake drivers must not load the machine's real libcupti (the
    default timer probes CUPTI on a CUDA device): it would look for the real
    driver and find the fake libcuda.so.1 by its soname, so what it does
    depends on the machine. Without it the probe fails the same way everywhere.
    """
    monkeypatch.setenv("PYHIPBENCH_CUPTI_LIBRARY", str(tmp_path_factory.getbasetemp() / "no-libcupti" / "libcupti.so"))


@pytest.fixture(autouse=True)
def no_real_nvml(request, tmp_path_factory, monkeypatch):
    """Points PYHIPBENCH_NVML_LIBRARY at an NVML that does not exist, outside tests/gpu.

    A fake device's environment must not depend on the machine's NVML (which
    knows none of its devices): without one, every NVML field reads as not
    loaded, everywhere. `fake_nvml` points it at the fake instead.
    """
    if "gpu" in Path(str(request.node.fspath)).parent.parts[-1:]:
        yield
        return
    monkeypatch.setenv(nvml.LIBRARY_ENV, str(tmp_path_factory.getbasetemp() / "no-nvml" / nvml.LIBRARY_NAME))
    nvml.nvml.cache_clear()
    yield
    nvml.nvml.cache_clear()


@pytest.fixture(scope="session")
def fake_nvml_library(tmp_path_factory):
    return build_fake(tmp_path_factory.mktemp("fake-nvml"), NVML_LIBRARY_NAME)


@pytest.fixture
def fake_nvml(fake_nvml_library, monkeypatch):
    """The fake NVML (fake_nvml.c), reset, and named by PYHIPBENCH_NVML_LIBRARY; its ctypes handle."""
    monkeypatch.setenv(nvml.LIBRARY_ENV, str(fake_nvml_library))
    nvml.nvml.cache_clear()
    library = ctypes.CDLL(str(fake_nvml_library))
    library.fake_nvml_reset()
    return library


@pytest.fixture(params=["cuda", "hip"])
def backend_name(request):
    return request.param


@pytest.fixture
def fake_driver(fake_libraries, backend_name, no_real_cupti):
    return FakeDriver(fake_libraries[backend_name])


@pytest.fixture
def fake_driver_cuda(fake_libraries, no_real_cupti):
    return FakeDriver(fake_libraries["cuda"])


@pytest.fixture
def fake_cupti(fake_libraries, monkeypatch, no_real_cupti):
    """The fake libcupti, reset, and named by PYHIPBENCH_CUPTI_LIBRARY for the core to load."""
    fakes = str(fake_libraries["cupti"].parent)
    real = [path for path in mapped_libraries("libcuda.so") if not path.startswith(fakes)]
    if real:  # the fake libcupti finds "its" driver by soname, and would bind to the real one
        pytest.skip(f"the real CUDA driver ({real[0]}) is loaded in this process (the GPU tests ran first): "
                    "run the CPU tests in a process of their own: python -m pytest -rs --ignore tests/gpu")
    monkeypatch.setenv("PYHIPBENCH_CUPTI_LIBRARY", str(fake_libraries["cupti"]))
    return FakeCupti(fake_libraries["cupti"])


@pytest.fixture
def fake_driver_hip(fake_libraries, no_real_cupti):
    return FakeDriver(fake_libraries["hip"])


@pytest.fixture
def driver(fake_libraries, backend_name, fake_driver):
    """The core's driver over the fake library."""
    return _core.load_driver(backend_name, str(fake_libraries[backend_name]))


@pytest.fixture
def device(driver, backend_name):
    """A Device whose memory is host memory and whose driver is the fake."""
    arch = {"cuda": "sm_90", "hip": "gfx942"}[backend_name]
    return hb.Device.from_backend(HostBackend(backend=backend_name, arch=arch), driver)
