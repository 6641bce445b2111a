"""The fixtures of tests/helion: a device on the fake CUDA driver and Helion-shaped candidates that run on it."""
from __future__ import annotations

import pytest

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._measure.options import BenchOptions
from pyhipbench._tuning.engine import Policy

from fakes.host_backend import HostBackend


@pytest.fixture
def policy():
    """The engine's policy for a test's candidates: events on a warm cache, no warm-up, `options` added."""
    def make(race: bool = True, tie_hold_s: float | None = None, **options: object) -> Policy:
        keywords = {"timer": "events", "cache": "warm", "warmup": 0, **options}
        return Policy.checked(BenchOptions.from_keywords("test", keywords), race, tie_hold_s)
    return make


@pytest.fixture
def call(fake_driver_cuda, fake_cupti):
    """A candidate whose kernel takes `us` µs on the fake clock from its first call on (each call `step_us` more
    than the last: the fake adds the step at each launch). (fake_cupti: skipped in a process where the real
    driver is loaded, whose torch would capture the call.)"""
    def make(us: float, step_us: float = 0.0):
        calls = []

        def candidate() -> None:
            if not calls or step_us == 0:  # a candidate is measured in one piece: its first call sets the clock
                fake_driver_cuda.lib.fake_set_launch_ms(us / 1000)
                fake_driver_cuda.lib.fake_set_launch_ms_step(step_us / 1000)
            calls.append(1)
            fake_driver_cuda.runtime_launch(0xA1, 1, 64)
        return candidate
    return make


@pytest.fixture
def device(fake_libraries, fake_driver_cuda):
    return hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"),
                                  _core.load_driver("cuda", str(fake_libraries["cuda"])))
