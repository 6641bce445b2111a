"""What the CLI tests share: the fake device as the one the commands open, or none allowed."""
from __future__ import annotations

import pytest

from pyhipbench import cli


@pytest.fixture
def fake_gpu(monkeypatch, device):
    # compile_for_device asks a CUDA driver which PTX it loads; the fake's is CUDA 12.4
    monkeypatch.setattr(device.backend, "driver_version", lambda: 12040, raising=False)
    monkeypatch.setattr(cli, "_open_device", lambda backend, index=0: device)
    return device


@pytest.fixture
def no_device_wanted(monkeypatch):
    """Fails the test if the command gets as far as opening a device."""
    def refuse(backend, index=0):
        raise AssertionError("the device was opened before the bad input was refused")
    monkeypatch.setattr(cli, "_open_device", refuse)
