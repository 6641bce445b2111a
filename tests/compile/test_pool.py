"""The compile pool: workers started once and reused, results streaming back, and a task that raises, hangs
or kills its worker costing only that task."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pyhipbench._compile import pool as pool_module
from pyhipbench._compile.pool import CompilePool

import pool_tasks


@pytest.fixture
def pool():
    pool = CompilePool(2)
    yield pool
    pool.close()


def outcomes(futures, timeout_s=60):
    return [f.result(timeout=timeout_s) for f in futures]


def test_results_stream_back_from_workers_started_once(pool):
    done = outcomes([pool.submit(pool_tasks.square, n) for n in range(8)])
    assert [o.value for o in done] == [n * n for n in range(8)] and all(o.ok for o in done)
    assert all(o.queue_s >= 0 and o.run_s >= 0 for o in done)
    pids = {o.value for o in outcomes([pool.submit(pool_tasks.pid) for _ in range(6)])}
    assert len(pids) <= 2 and len(pool.startup_s) <= 2  # reused: no worker started for the second batch


def test_a_task_that_raises_fails_alone(pool):
    before = pool.submit(pool_tasks.pid).result(timeout=60).value
    failed, after = outcomes([pool.submit(pool_tasks.fail, "no such   tile\nsize"), pool.submit(pool_tasks.pid)])
    assert failed.error == "ValueError: no such tile size" and failed.value is None
    assert after.ok and after.value == before  # the same worker took the next task


def test_a_task_that_kills_its_worker_fails_with_the_signal_and_a_new_worker_takes_over():
    pool = CompilePool(1)
    try:
        died, square = outcomes([pool.submit(pool_tasks.crash), pool.submit(pool_tasks.square, 7)])
        assert died.error == "its compile worker died (signal 11, SIGSEGV)" and died.exit_code == -signal.SIGSEGV
        assert square.ok and square.value == 49 and len(pool.startup_s) == 2
    finally:
        pool.close()


def test_a_worker_found_dead_only_on_sending_is_replaced_and_the_task_kept(pool):
    assert pool.submit(pool_tasks.die_unnoticed, 0.3).result(timeout=60).ok
    time.sleep(1.5)
    square = pool.submit(pool_tasks.square, 5).result(timeout=60)
    assert square.ok and square.value == 25 and len(pool.startup_s) == 2


def test_a_worker_that_cannot_start_fails_what_waits(pool, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    failed = pool.submit(pool_tasks.square, 2).result(timeout=60)
    assert failed.ended == "died" and failed.exit_code is None
    assert failed.error.startswith(f"cannot start a compile worker ({tmp_path}/no-python): [Errno 2]")
    monkeypatch.undo()
    assert pool.submit(pool_tasks.square, 3).result(timeout=60).value == 9


def test_a_task_past_its_timeout_has_its_worker_killed(pool):
    started = time.perf_counter()
    hung, quick = outcomes([pool.submit(pool_tasks.sleep, 60, timeout_s=0.5), pool.submit(pool_tasks.square, 3)])
    assert hung.error == "it ran past the compile timeout of 0.5 s; its worker was killed"
    assert 0.5 <= hung.run_s < 10 and quick.value == 9 and time.perf_counter() - started < 30


def test_what_cannot_be_sent_or_imported_fails_that_task(pool):
    unpicklable, after = outcomes([pool.submit(pool_tasks.square, lambda: 1), pool.submit(pool_tasks.square, 2)])
    assert unpicklable.error.startswith("it cannot be sent to a compile worker: ")
    assert after.value == 4


def test_a_workers_stdout_is_not_its_reply_channel(pool):
    assert pool.submit(pool_tasks.shout, "printed").result(timeout=60).value == "printed"


def test_close_ends_what_has_not_run(pool):
    slow = pool.submit(pool_tasks.sleep, 60)
    queued = [pool.submit(pool_tasks.square, n) for n in range(3)]
    pool.close()
    assert all(f.result(timeout=10).error == "the compile pool closed before it ran" for f in [slow, *queued])
    with pytest.raises(RuntimeError, match="the compile pool is closed"):
        pool.submit(pool_tasks.square, 1)


def test_a_worker_does_not_run_the_callers_script_again(tmp_path):
    """multiprocessing's spawn would run an unguarded __main__ once per worker; the pool's workers do not."""
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(pool_tasks.__file__.rsplit('/', 1)[0])!r})
        import pool_tasks
        from pyhipbench._compile.pool import CompilePool
        print("top level ran")
        pool = CompilePool(2)
        print(sum(f.result().value for f in [pool.submit(pool_tasks.square, n) for n in range(4)]))
        pool.close()
        """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split("\n") == ["top level ran", "14", ""]


def test_a_changed_environment_gets_fresh_workers(pool, monkeypatch):
    monkeypatch.delenv("POOL_TEST_VALUE", raising=False)
    assert pool.submit(pool_tasks.getenv, "POOL_TEST_VALUE").result(timeout=60).value is None
    monkeypatch.setenv("POOL_TEST_VALUE", "set")  # a library path, say: glibc reads it only at a process's start
    assert pool.submit(pool_tasks.getenv, "POOL_TEST_VALUE").result(timeout=60).value == "set"
    assert len(pool.startup_s) == 2


def test_workers_import_this_processs_pyhipbench_whatever_the_working_directory(tmp_path):
    """A working directory holding another pyhipbench (a source tree without its built core) is not put
    first on a worker's path."""
    (tmp_path / "elsewhere" / "pyhipbench").mkdir(parents=True)
    (tmp_path / "elsewhere" / "pyhipbench" / "__init__.py").write_text("raise ImportError('the wrong pyhipbench')\n")
    script = tmp_path / "use_pool.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(pool_tasks.__file__.rsplit('/', 1)[0])!r})
        import pool_tasks
        from pyhipbench._compile.pool import CompilePool
        pool = CompilePool(1)
        print(pool.submit(pool_tasks.square, 6).result().value)
        pool.close()
        """))
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path / "elsewhere")
    assert run.returncode == 0 and run.stdout == "36\n", run.stderr


def test_workers_are_forked_from_one_server_per_pool(pool):
    parents = {o.value for o in outcomes([pool.submit(pool_tasks.parent_pid) for _ in range(4)])}
    assert len(parents) == 1 and parents != {os.getpid()}


def test_a_warm_up_runs_once_in_the_server_before_workers_are_forked(pool):
    pool.warm(pool_tasks.load, "wave")  # a standard module nothing else here imports
    assert all(o.value is True for o in outcomes([pool.submit(pool_tasks.loaded, "wave") for _ in range(3)]))
    assert pool.submit(pool_tasks.loaded, "tomllib").result(timeout=60).value is False


def test_the_same_warm_up_is_sent_to_the_server_once(pool):
    for name in ("kernel", "kernel", "other", "kernel"):  # as a tuning's configs each warm the server
        pool.warm(pool_tasks.note_warm_up, name)
    assert pool.submit(pool_tasks.warm_ups).result(timeout=60).value == ["kernel", "other"]


def test_a_warm_up_that_fails_only_gives_no_head_start(pool):
    pool.warm(pool_tasks.fail, "no such module")
    pool.warm(pool_tasks.square, lambda: 1)  # cannot be sent: ignored too
    assert pool.submit(pool_tasks.square, 4).result(timeout=60).value == 16


def test_a_server_stuck_in_a_warm_up_fails_what_waits_and_a_later_task_gets_a_fresh_one(pool, monkeypatch):
    monkeypatch.setattr(pool_module, "_START_LIMIT_S", 1.0)
    pool.warm(pool_tasks.sleep, 60)
    started = time.perf_counter()
    stuck = pool.submit(pool_tasks.square, 2).result(timeout=30)
    assert stuck.ended == "died" and stuck.error == "no compile worker started within 1 s (an import made " \
        "ahead for the workers hangs?)" and time.perf_counter() - started < 20
    assert pool.submit(pool_tasks.square, 3).result(timeout=60).value == 9


def test_a_warm_up_whose_module_cannot_be_imported_only_gives_no_head_start(pool, tmp_path, monkeypatch):
    (tmp_path / "gone_module.py").write_text("def noop():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import gone_module
    (tmp_path / "gone_module.py").unlink()  # the server cannot import it to unpickle the warm-up
    pool.warm(gone_module.noop)
    assert pool.submit(pool_tasks.square, 5).result(timeout=60).value == 25
