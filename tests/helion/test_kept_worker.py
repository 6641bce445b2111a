"""One of Helion's check workers (a real spawned BenchmarkWorker; its jobs need no GPU) handed from search to
search: given back running with its search's cached arguments dropped, held by one search at a time, on the
thread that started it; one that stopped or cannot be killed is left to Helion's own stop."""
from __future__ import annotations

import functools
import os
import threading
import types

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: pyhipbench.helion's tests need torch and Helion")
helion = pytest.importorskip("helion", reason="Helion is not installed (pip install helion==1.5.0): "
                                              "pyhipbench.helion's tests need it")

from helion.autotuner.benchmark_worker import BenchmarkWorker
from helion.autotuner.kernel_args import load_trusted_kernel_args

from pyhipbench.helion.first_pass import FirstPass
from pyhipbench.helion.kept_worker import KeptWorker
from pyhipbench.helion.ledger import Ledger
from pyhipbench.helion.worker_start import WorkerStart, cuda_device_index

from fakes.helion_jobs import cached_arguments


class Stopped:
    """A worker Helion's cleanup stops: its shutdown recorded."""

    def __init__(self) -> None:
        self.shut = False

    def shutdown(self) -> None:
        self.shut = True


@pytest.fixture
def search(device, policy, racing_provider):
    """A provider per search, all sharing `kept` (a KeptWorker of the test's own)."""
    kept = KeptWorker()

    def make():
        provider = racing_provider(FirstPass(policy(), device, Ledger()), torch.zeros(1), {})
        provider.kept_worker = kept
        return provider
    make.kept = kept
    return make


def test_the_worker_of_one_search_serves_the_next_in_the_same_process(search):
    first = search()
    first.setup()
    assert first.holds_kept_worker and first._benchmark_worker is None  # none yet: Helion makes one at a check
    first._benchmark_worker = worker = BenchmarkWorker(device=None)  # as Helion's first check does
    try:
        pid = worker.run(os.getpid, 120.0)
        second = search()
        second.setup()
        assert not second.holds_kept_worker and second._benchmark_worker is None  # the first holds it
        second._benchmark_worker = own = Stopped()  # its own, as Helion would start
        second.cleanup()
        assert own.shut and search.kept.hold() == (False, None)  # still the first's
        first.cleanup()
        assert worker.alive() and first._benchmark_worker is None and not first.holds_kept_worker
        third = search()
        third.setup()
        assert third.holds_kept_worker and third._benchmark_worker is worker
        assert worker.run(os.getpid, 120.0) == pid  # the same process: no second start
        worker.shutdown()  # as Helion's timeout kills one, say
        third.cleanup()
        assert search.kept.hold() == (True, None)  # a worker no longer running is not kept
    finally:
        worker.shutdown()


def test_a_kept_worker_forgets_the_arguments_its_search_cached(tmp_path):
    kept = KeptWorker()
    path = str(tmp_path / "args.pt")
    torch.save([torch.arange(4.0)], path)
    worker = BenchmarkWorker(device=None)
    try:
        worker.run(functools.partial(load_trusted_kernel_args, path), 120.0)  # as a check job loads them
        assert worker.run(cached_arguments, 120.0) == 1
        assert kept.hold() == (True, None) and kept.give_back(worker, 120.0)
        assert worker.run(cached_arguments, 120.0) == 0
        assert kept.hold() == (True, worker)
    finally:
        worker.shutdown()


def test_a_worker_that_cannot_be_killed_is_left_to_helions_stop():
    kept = KeptWorker()
    unkillable = types.SimpleNamespace(alive=lambda: True, _fatal_error="benchmark worker pid 7 did not exit")
    assert kept.hold() == (True, None) and not kept.give_back(unkillable, 120.0)
    assert kept.hold() == (True, None)


def test_a_worker_serves_only_the_thread_that_started_it():
    """It asks for SIGTERM when that thread ends: another thread's search starts its own."""
    kept = KeptWorker()
    worker = BenchmarkWorker(device=None)
    try:
        worker.run(os.getpid, 120.0)
        assert kept.hold() == (True, None) and kept.give_back(worker, 120.0)
        elsewhere: list[tuple[bool, object]] = []
        thread = threading.Thread(target=lambda: elsewhere.append(kept.hold()))
        thread.start()
        thread.join()
        assert elsewhere == [(False, None)] and kept.hold() == (True, worker)
    finally:
        worker.shutdown()


def test_a_search_that_checks_in_a_worker_starts_it_at_setup_and_its_first_check_uses_it(search):
    """Helion starts its worker at the first check; here it is spawned at setup (on the search's thread) and
    readied on a thread of its own, which the first check waits for; that check runs in the same process."""
    provider = search()
    provider.args = (types.SimpleNamespace(is_cuda=True, device=types.SimpleNamespace(index=0)),)  # readied on 0
    provider._subprocess_benchmark_enabled = provider._subprocess_accuracy_check_enabled = lambda: True
    provider.setup()  # Helion's setup saves the arguments and the baseline for its worker
    worker = provider._benchmark_worker
    try:
        assert isinstance(worker, BenchmarkWorker) and worker.alive() and provider.worker_start is not None
        started_pid = worker._process.pid
        # A check's job, through the provider's worker once the readying (which raises without a GPU) ended.
        provider._run_subprocess_accuracy_check_job = lambda fn: provider._benchmark_worker.run(os.getpid, 120.0)
        assert provider._worker_check(fn=None) == started_pid and provider.worker_start is None
        provider.cleanup()
        assert worker.alive() and search.kept.hold() == (True, worker)  # kept for the next search
    finally:
        worker.shutdown()


def test_a_search_that_checks_in_this_process_starts_no_worker(search):
    provider = search()
    provider._subprocess_benchmark_enabled = lambda: True  # the arguments saved, but checks stay here
    provider._subprocess_accuracy_check_enabled = lambda: False
    provider.setup()
    assert provider._benchmark_worker is None and provider.worker_start is None
    provider.cleanup()


def test_a_readying_job_that_fails_leaves_the_started_worker_to_the_first_check():
    """Readying makes CUDA's context on the arguments' device; without a GPU it raises in the worker, which
    runs on: the first check then uses the process started at setup."""
    worker = BenchmarkWorker(device=None)
    try:
        start = WorkerStart(worker, 120.0, 0)
        pid = worker._process.pid
        start.wait()
        assert worker.alive() and worker.run(os.getpid, 120.0) == pid
    finally:
        worker.shutdown()


def test_a_worker_that_cannot_start_at_setup_is_left_to_helions_first_check():
    class Unstartable:
        def _start(self):
            raise OSError("cannot fork")
    start = WorkerStart(Unstartable(), 120.0, 0)
    start.wait()  # nothing to wait for: no readying ran


def test_the_readying_device_is_the_first_cuda_arguments():
    on = types.SimpleNamespace(is_cuda=True, device=types.SimpleNamespace(index=1))
    assert cuda_device_index([torch.zeros(1), 3, on]) == 1
    assert cuda_device_index([torch.zeros(1), 3]) is None and cuda_device_index(()) is None


def test_a_worker_that_ends_before_it_is_readied_is_not_started_again_on_the_readying_thread():
    """Helion's run() starts a worker that is not running; one started on the readying thread would get
    SIGTERM when that thread ends, so there the start is refused and left to the search's first check."""
    class EndsAtOnce:
        def __init__(self):
            self.started_on = []

        def _start(self):
            self.started_on.append(threading.get_ident())

        def run(self, job, timeout):
            self._start()  # as BenchmarkWorker.run does for a worker no longer alive
            return job()
    worker = EndsAtOnce()
    WorkerStart(worker, 120.0, 0).wait()
    assert worker.started_on == [threading.get_ident()] and "_start" not in vars(worker)
