"""Device.keep: what a device makes once (timers, the clean step, bundled modules), made once however
many threads ask for it at the same time."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


def test_what_two_threads_ask_for_at_once_is_made_once(device):
    made, making = [], threading.Event()

    def make():
        made.append(threading.current_thread().name)
        making.set()
        threading.Event().wait(0.05)  # the second thread asks meanwhile
        return object()

    with ThreadPoolExecutor(2) as threads:
        first = threads.submit(device.keep, "slow", make)
        assert making.wait(timeout=30)
        second = threads.submit(device.keep, "slow", make)
        assert first.result(timeout=30) is second.result(timeout=30)
    assert len(made) == 1


def test_a_make_may_keep_another_thing_of_the_same_device(device):
    inner = device.keep(("outer", 1), lambda: device.keep(("inner", 1), object))
    assert device.keep(("inner", 1), object) is inner and device.kept[("outer", 1)] is inner
