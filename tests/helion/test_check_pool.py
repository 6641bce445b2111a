"""CheckPool with Helion's own BenchmarkWorker (spawned processes; the jobs need no GPU): a batch's jobs run at
once in several workers, each job's outcome kept by its key, and a job that raises or hangs costs only itself."""
from __future__ import annotations

import os

import pytest

pytest.importorskip("torch", reason="torch is not installed: pyhipbench.helion's tests need torch and Helion")
pytest.importorskip("helion", reason="Helion is not installed (pip install helion==1.5.0): pyhipbench.helion's "
                                     "tests need it")

from helion.autotuner.benchmark_job import AccuracyCheckResult
from helion.autotuner.benchmark_worker import BenchmarkTimeout

from pyhipbench.helion.checks import CheckPool

from fakes.helion_jobs import Pid, Raises, Returns


@pytest.fixture(scope="module")
def pool():
    """Two workers, started before the first test's jobs (a spawn imports torch and Helion: seconds)."""
    checks = CheckPool(2)
    checks.start(120.0)
    yield checks
    checks.shutdown()


def test_a_batchs_jobs_run_at_once_each_in_a_worker_process_of_its_own(pool):
    outcomes = pool.run({key: Pid(sleep_s=0.5) for key in range(4)}, 120.0)
    assert sorted(outcomes) == [0, 1, 2, 3]
    pids = {outcome.result for outcome in outcomes.values()}
    assert all(outcome.error is None for outcome in outcomes.values())
    assert len(pids) == 2 and os.getpid() not in pids  # both workers took jobs, none ran here


def test_a_job_that_raises_or_hangs_costs_only_itself(pool):
    passed = AccuracyCheckResult(ok=True)
    outcomes = pool.run({1: Raises("the launch failed"), 2: Pid(sleep_s=60), 3: Returns(passed)}, 5.0)
    assert isinstance(outcomes[1].error, RuntimeError) and str(outcomes[1].error) == "the launch failed"
    assert isinstance(outcomes[2].error, BenchmarkTimeout) and outcomes[2].result is None
    assert outcomes[3].error is None and outcomes[3].result == passed
    # The hung job's worker was killed; the next job given to it starts it again.
    again = pool.run({key: Pid(sleep_s=0.5) for key in range(2)}, 120.0)
    assert all(isinstance(outcome.result, int) for outcome in again.values())


def test_after_shutdown_no_worker_process_is_left():
    checks = CheckPool(2)
    outcomes = checks.run({0: Pid(), 1: Pid()}, 120.0)
    checks.shutdown()
    for outcome in outcomes.values():
        with pytest.raises(ProcessLookupError):
            os.kill(outcome.result, 0)
    checks.shutdown()  # again: nothing to do
