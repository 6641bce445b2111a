"""Device.bundled_kernel: the kernels pyhipbench ships, by name; any other name refused in one line."""
from __future__ import annotations

import pytest

import pyhipbench as hb


def test_the_bundled_copy_kernel_loads_once(device):
    copy = device.bundled_kernel("copy")
    assert copy.name == "copy" and device.bundled_kernel("copy") is copy


@pytest.mark.parametrize("name", ["nope", "", None, 3, ["copy"], "../copy"])
def test_an_unknown_name_is_refused_naming_it(device, name):
    with pytest.raises(hb.BenchError, match=r"^bundled kernel .*: expected one of copy, clean, empty, spin$"):
        device.bundled_kernel(name)


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_nvidia_has_no_bundled_spin_kernel(device):
    """The core's batched timer brings its own PTX spin kernel on NVIDIA."""
    with pytest.raises(hb.BenchError, match=r"^bundled kernel 'spin': expected one of copy, clean, empty on NVIDIA$"):
        device.bundled_kernel("spin")
