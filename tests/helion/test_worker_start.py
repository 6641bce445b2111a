"""WorkerStart with Helion's own BenchmarkWorker (a spawned process; no GPU needed): the worker starts in the
background, a check takes it started, a search that checks without it stops it, and the provider's checks
run in the worker it started."""
from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: pyhipbench.helion's tests need torch and Helion")
helion = pytest.importorskip("helion", reason="Helion is not installed (pip install helion==1.5.0): "
                                              "pyhipbench.helion's tests need it")

from helion.autotuner.benchmark_job import AccuracyCheckResult

from pyhipbench.helion.first_pass import FirstPass
from pyhipbench.helion.ledger import Ledger
from pyhipbench.helion.worker_start import WorkerStart


def test_the_worker_taken_is_started_and_runs_jobs_in_a_process_of_its_own():
    start = WorkerStart(120.0)
    worker = start.take()
    try:
        assert worker.alive()
        pid = worker.run(os.getpid, 120.0)
        assert pid == worker._process.pid and pid != os.getpid()
    finally:
        worker.shutdown()
    assert not worker.alive()


def test_a_worker_stopped_mid_start_leaves_no_process():
    start = WorkerStart(120.0)
    start.stop()  # at once: its spawn is under way
    assert not start._thread.is_alive() and not start._worker.alive()


def test_the_providers_checks_run_in_the_worker_started_with_it(device, call, policy, racing_provider):
    baseline = torch.arange(8.0)
    ledger = Ledger()
    provider = racing_provider(FirstPass(policy(), device, ledger), baseline, {"config": call(2.0)})
    provider.worker_start, provider._benchmark_worker = WorkerStart(120.0), None
    provider._subprocess_accuracy_check_enabled = lambda: True
    started = provider.worker_start._worker
    ran_in: list[int] = []

    def check_in_worker(fn):  # Helion's job needs a compiled kernel; this one says where it ran
        ran_in.append(provider._benchmark_worker.run(os.getpid, 120.0))
        return AccuracyCheckResult(ok=True)
    provider._run_subprocess_accuracy_check_job = check_in_worker
    try:
        assert provider._benchmark_function("config", lambda: baseline.clone()) == pytest.approx(0.002)
        assert provider._benchmark_worker is started and provider.worker_start is None
        assert ran_in == [started._process.pid]
        assert 0 < ledger.worker_check_s <= ledger.check_s
    finally:
        started.shutdown()
