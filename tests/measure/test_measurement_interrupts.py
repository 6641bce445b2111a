"""Interrupts inside the C++ core, on the fake CUDA driver: Ctrl-C and SIGTERM stop `pyhipbench run` within a
second wherever the measurement is (a hold, a kernel that never returns), and request_interrupt() stops another
thread's measurement."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import _core

COPY_PTX = resources.files("pyhipbench") / "kernels" / "copy.ptx"
TESTS = Path(__file__).resolve().parents[1]
RUN = ["run", str(COPY_PTX), "--kernel", "copy", "--grid", "4", "--block", "256", "--arg", "array:float32:1024",
       "--arg", "array:float32:1024", "--arg", "int64:1024", "--cache", "warm"]
# `pyhipbench run` in a process of its own, on a Device over the fake CUDA driver (as tests/conftest.py makes it).
SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import pyhipbench as hb
    from pyhipbench import _core, cli
    from fakes.driver import FakeDriver
    from fakes.host_backend import HostBackend
    driver = _core.load_driver("cuda", {library!r})
    device = hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"), driver)
    device.backend.driver_version = lambda: 12040
    fake, function = FakeDriver({library!r}), device.backend.function
    def named(module, name):  # the fake driver knows a kernel by name (FAKE_KERNEL_HANG names one)
        handle = function(module, name)
        fake.name_function(handle, name)
        return handle
    device.backend.function = named
    cli._open_device = lambda backend, index=0: device
    print("started", flush=True)
    sys.exit(cli.main({argv!r}))
""")


def _start(fake_libraries, argv: list[str], **env: str) -> subprocess.Popen:
    script = SCRIPT.format(tests=str(TESTS), library=str(fake_libraries["cuda"]), argv=argv)
    running = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, **env})
    assert running.stdout.readline() == "started\n"
    return running


def _stop(running: subprocess.Popen, signum: int, after_s: float) -> tuple[float, str]:
    """Sends `signum` `after_s` after the command started measuring; how long it took to exit, and its stderr."""
    time.sleep(after_s)
    assert running.poll() is None, running.communicate()
    sent = time.monotonic()
    running.send_signal(signum)
    _, err = running.communicate(timeout=30)
    return time.monotonic() - sent, err


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_hold_within_a_second_with_one_line(fake_libraries, no_real_cupti, signum, status):
    running = _start(fake_libraries, [*RUN, "--hold", "30"])
    took_s, err = _stop(running, signum, after_s=1.5)
    assert running.returncode == status and took_s < 1.0
    expected = "interrupted" if signum == signal.SIGINT else "terminated (SIGTERM)"
    assert err == f"pyhipbench run: {expected}\n"


def test_ctrl_c_gives_up_a_device_whose_kernel_never_returns(fake_libraries, no_real_cupti):
    running = _start(fake_libraries, RUN, FAKE_KERNEL_HANG="copy")
    took_s, err = _stop(running, signal.SIGINT, after_s=1.0)
    assert running.returncode == 130 and took_s < 1.5
    assert err == ("pyhipbench run: interrupted while measuring kernel 'copy', whose work still ran on the GPU 500 ms "
                   "later: the device is given up (nothing on it can be freed while a kernel runs); end this "
                   "process to release it\n")


def test_request_interrupt_stops_another_threads_measurement(device):
    src = device.array(np.zeros(256, np.float32))
    kernel = device.load_module(COPY_PTX).kernel("copy")
    stopper = threading.Timer(0.3, _core.request_interrupt)
    stopper.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted while measuring kernel 'copy'$"):
        hb.bench(kernel, grid=1, block=256, args=[src, device.empty_like(src), hb.int64(256)], cache="warm",
                 hold_s=30)
    assert time.monotonic() - started < 1.3
    # The request was used up: the next measurement runs.
    assert hb.bench(kernel, grid=1, block=256, args=[src, device.empty_like(src), hb.int64(256)], cache="warm",
                    iterations=4).samples == 4


def test_a_request_while_a_kernel_never_returns_gives_the_device_up(device, fake_driver, monkeypatch):
    """Seen among the launches of a run: what was issued gets its grace, then the device is given up."""
    kernel = device.load_module(COPY_PTX).kernel("copy")
    fake_driver.name_function(kernel.handle, "copy")
    monkeypatch.setenv("FAKE_KERNEL_HANG", "copy")
    src = device.array(np.zeros(256, np.float32))
    threading.Timer(0.3, _core.request_interrupt).start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted while measuring kernel 'copy', whose work still ran "
                                                r"on the GPU 500 ms later: the device is given up") as raised:
        hb.bench(kernel, grid=1, block=256, args=[src, device.empty_like(src), hb.int64(256)], cache="warm",
                 hold_s=30)
    assert raised.value.device_abandoned is True and time.monotonic() - started < 1.5


def test_a_request_stops_a_callable_between_two_calls(device):
    """A call that asks for the interrupt itself: the next call is not made."""
    calls = []

    def call():
        calls.append(1)
        if len(calls) == 5:
            _core.request_interrupt()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted while measuring call 'asks'$") as raised:
        hb.bench_callable(call, device=device, timer="events", graph=False, iterations=50, name="asks")
    assert len(calls) == 5 and raised.value.device_abandoned is False


def test_a_request_while_nothing_measures_stops_the_next_measurement_only(device):
    kernel = device.load_module(COPY_PTX).kernel("copy")
    src = device.array(np.zeros(256, np.float32))
    args = [src, device.empty_like(src), hb.int64(256)]
    _core.request_interrupt()
    with pytest.raises(KeyboardInterrupt, match=r"^interrupted while measuring kernel 'copy'$"):
        hb.bench(kernel, grid=1, block=256, args=args, cache="warm", iterations=4)
    assert hb.bench(kernel, grid=1, block=256, args=args, cache="warm", iterations=4).samples == 4
