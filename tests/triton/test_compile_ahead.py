"""autotune's compiles ahead of the GPU: in the compile pool, through Triton's cache, with per-config timeouts
and failures recorded; the tuning cache (cache_results); triton.autotune's other arguments. Real Triton
compiles for sm_90 on the CPU; the fake driver loads and launches."""
from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): "
                                                "the Triton adapter's tests need it")

import pyhipbench as hb
import pyhipbench.triton as ht

import triton_kernels as tk


@pytest.fixture
def backend_name():
    """CUDA only: what is tested here is the same for every target (the AMD path: test_triton.py)."""
    return "cuda"



def vectors(device, n=4096):
    x = device.array(np.arange(n, dtype=np.float32))
    return x, device.array(np.ones(n, np.float32)), device.empty_like(x)


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256) for w in (2, 4)]


def test_configs_compile_in_the_pool_then_come_from_trintons_cache(device, fresh_cache):
    x, y, out = vectors(device)
    first = ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                        compile_workers=2)(tk.add).tune(grid, x, y, out, 4096)
    assert [r.compiled for r in first.results] == ["pool"] * 4 and not first.failed
    assert all(r.compile_s > 0 and r.queue_s >= 0 and r.measure_s > 0 for r in first.results)
    assert 0 < first.compile_wall_s < first.wall_s
    again = ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                        compile_workers=2)(tk.add).tune(grid, x, y, out, 4096)
    assert [r.compiled for r in again.results] == ["cache"] * 4  # compiled before: no worker asked
    assert [r.compile_s for r in again.results] == [0.0] * 4 and again.best == first.best


def test_a_kernel_a_worker_cannot_import_compiles_here_and_says_why(device, fresh_cache):
    local_add = tk.add_defined_in_a_function()
    x, y, out = vectors(device)
    tuning = ht.autotune(CONFIGS[:2], key=["n"], device=device, iterations=2, warmup_samples=0,
                         timer="events", tie_hold_s=None)(local_add).tune(grid, x, y, out, 4096)
    assert [r.compiled for r in tuning.results] == ["here", "here"] and not tuning.failed
    assert tuning.results[0].note == ("compiled in this process: local_add is defined inside a function, "
                                      "which a compile worker cannot import")
    assert tuning.results[0].compile_s > 0 and tuning.results[0].queue_s is None


# A tuning script as people write them: the kernel defined in the script being run, the tuning under its
# __main__ guard (here on the fake CUDA driver, whose library path is argv[1]). {work} is what else its top
# level runs. It prints where each config compiled, its note, and how many compiles this process made.
SCRIPT = """\
import json, sys
import numpy as np
import triton
import triton.language as tl
import pyhipbench as hb
import pyhipbench.triton as ht

@triton.jit
def scripted_add(x, y, out, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out + offsets, tl.load(x + offsets, mask=mask) + tl.load(y + offsets, mask=mask), mask=mask)

CONFIGS = [triton.Config({{"BLOCK": b}}, num_warps=w) for b in (128, 256) for w in (2, 4)]
{work}
if __name__ == "__main__":
    sys.path.insert(0, sys.argv[2])
    from fakes.host_backend import HostBackend
    device = hb.Device.from_backend(HostBackend(), hb._core.load_driver("cuda", sys.argv[1]))
    here = []
    compile_here = ht._kernel._triton.compile
    ht._kernel._triton.compile = lambda *a, **k: here.append(1) or compile_here(*a, **k)
    x = device.array(np.arange(4096, dtype=np.float32))
    y, out = device.array(np.ones(4096, np.float32)), device.empty_like(x)
    tuning = ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                         compile_workers=2, tie_hold_s=None)(scripted_add).tune(
                             lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), x, y, out, 4096)
    print(json.dumps({{"compiled": [r.compiled for r in tuning.results], "notes": [r.note for r in tuning.results],
                      "failed": [r.error for r in tuning.failed], "compiled_here": len(here)}}))
"""


def run_script(tmp_path, fake_libraries, work: str) -> dict:
    import json
    import os
    import subprocess
    from pathlib import Path
    script = tmp_path / "tune_script.py"
    script.write_text(SCRIPT.format(work=work))
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}
    done = subprocess.run([sys.executable, str(script), str(fake_libraries["cuda"]),
                           str(Path(__file__).resolve().parents[1])], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_kernel_defined_in_the_script_being_run_compiles_in_the_pool_under_the_same_cache_key(tmp_path,
                                                                                                fake_libraries):
    """The workers import the script under another name (its __main__ block does not run there); what they
    compile is found in Triton's cache by this process, which compiles nothing itself."""
    ran = run_script(tmp_path, fake_libraries, work="")
    assert ran == {"compiled": ["pool"] * 4, "notes": [None] * 4, "failed": [], "compiled_here": 0}


def test_a_script_that_runs_code_at_its_top_level_compiles_here_and_names_the_line(tmp_path, fake_libraries):
    ran = run_script(tmp_path, fake_libraries, work="print('tuning', file=sys.stderr)\n")
    assert ran["compiled"] == ["here"] * 4 and ran["compiled_here"] == 4 and not ran["failed"]
    assert ran["notes"][0].startswith("compiled in this process: scripted_add is defined in ")
    assert ran["notes"][0].endswith("tune_script.py, whose line 15 runs at import (print('tuning', file=sys.stderr)); "
                                    "a compile worker would run that again (put it under if __name__ == \"__main__\":)")


def test_a_compile_past_its_timeout_fails_that_config_alone(device, fresh_cache):
    x, out = device.array(np.ones(16, np.float32)), device.empty(16, np.float32)
    # ~8 s of compiling, and almost none (a new worker's first compile also hashes Triton's installation,
    # about 1 s on a slow CPU: the limit leaves room for it)
    configs = [triton.Config({"STEPS": 3000}), triton.Config({"STEPS": 2})]
    tuning = ht.autotune(configs, key=[], device=device, iterations=2, warmup_samples=0, timer="events",
                         compile_workers=2, compile_timeout_s=3.0)(tk.unrolled).tune((1,), x, out)
    slow, quick = tuning.results
    assert slow.error.startswith("CodegenError: Triton could not compile 'unrolled' for sm_90 with STEPS=3000")
    assert slow.error.endswith("it ran past the compile timeout of 3 s; its worker was killed")
    assert 3.0 <= slow.compile_s < 8 and slow.result is None
    assert quick.error is None and tuning.best is configs[1]


def test_a_compile_error_in_a_worker_is_recorded(device, fresh_cache):
    x, y, out = vectors(device)
    configs = [triton.Config({"BLOCK": 100}), triton.Config({"BLOCK": 128})]  # arange needs a power of 2
    tuning = ht.autotune(configs, key=["n"], device=device, iterations=2, warmup_samples=0,
                         timer="events")(tk.add).tune(grid, x, y, out, 4096)
    assert tuning.results[0].compiled == "pool"
    assert "BLOCK=100" in tuning.results[0].error and "arange's range must be a power of 2" in tuning.results[0].error
    assert tuning.best is configs[1]


def test_knobs_set_in_python_reach_the_workers(device, fresh_cache, monkeypatch):
    """A knob changes Triton's cache key: a worker compiling without it would leave a different entry,
    and this process would compile again ("here" timings, not "cache")."""
    monkeypatch.setattr(triton.knobs.compilation, "disable_line_info", True)
    x, y, out = vectors(device)
    tuned = ht.autotune(CONFIGS[:1], key=["n"], device=device, iterations=2, warmup_samples=0,
                        timer="events")(tk.add)
    tuned.tune(grid, x, y, out, 4096)
    spec = ht._kernel.specialize(tk.add, [x, y, out, 4096], ht.target_of(device), **CONFIGS[0].all_kwargs())
    assert ht._cache.cached(spec) is not None


# -- cache_results -----------------------------------------------------------

def kernel_module(tmp_path, name, body="x + y"):
    """A module holding a @triton.jit `add` whose body adds `body`: a new module per source text."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(f"""
        import triton
        import triton.language as tl

        @triton.jit
        def add(x, y, out, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offsets < n
            x = tl.load(x + offsets, mask=mask)
            y = tl.load(y + offsets, mask=mask)
            tl.store(out + offsets, {body}, mask=mask)
        """))
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def counted_bench(monkeypatch):
    runs = []
    real = ht._bench.bench_with
    monkeypatch.setattr(ht._bench, "bench_with", lambda *a, **o: runs.append(1) or real(*a, **o))
    return runs


def test_cache_results_reads_a_tuning_back_without_measuring(device, fresh_cache, tmp_path, monkeypatch):
    module = kernel_module(tmp_path, "cached_add_v1")
    x, y, out = vectors(device)
    options = dict(key=["n"], device=device, iterations=2, warmup_samples=0, timer="events", cache_results=True,
                   tie_hold_s=0.001)
    measured = ht.autotune(CONFIGS, **options)(module.add).tune(grid, x, y, out, 4096)
    runs = counted_bench(monkeypatch)
    read = ht.autotune(CONFIGS, **options)(module.add).tune(grid, x, y, out, 4096)
    assert read.from_cache and not runs and read.best == measured.best
    assert "ties were not held further" in measured.results[0].note  # equal configs tie: the first is held
    assert [r.median_us for r in read.results] == [r.median_us for r in measured.results]
    assert [r.to_dict() for r in read.results] == [r.to_dict() for r in measured.results]
    # Another key, other options: measured anew.
    ht.autotune(CONFIGS, **options)(module.add).tune(grid, x, y, out, 2048)
    ht.autotune(CONFIGS, **{**options, "iterations": 3})(module.add).tune(grid, x, y, out, 4096)
    ht.autotune(CONFIGS, **{**options, "tie_hold_s": 0.002})(module.add).tune(grid, x, y, out, 4096)
    assert len(runs) == 3 * (len(measured.results) + 1)  # each tuning: every config, and the fastest held


def test_cache_results_is_invalidated_by_the_source_and_the_device(device, fresh_cache, tmp_path, monkeypatch):
    x, y, out = vectors(device)
    options = dict(key=["n"], device=device, iterations=2, warmup_samples=0, timer="events", cache_results=True,
                   tie_hold_s=0.001)
    ht.autotune(CONFIGS, **options)(kernel_module(tmp_path, "cached_add_v2").add).tune(grid, x, y, out, 4096)
    runs = counted_bench(monkeypatch)
    edited = kernel_module(tmp_path, "cached_add_v3", body="x + y + 0.0").add
    tuning = ht.autotune(CONFIGS, **options)(edited).tune(grid, x, y, out, 4096)
    measured = len(tuning.results) + 1  # every config, and the fastest held (unslowed: the ties end there)
    assert not tuning.from_cache and len(runs) == measured
    monkeypatch.setattr(type(device), "name", property(lambda self: "Another GPU"))
    assert not ht.autotune(CONFIGS, **options)(edited).tune(grid, x, y, out, 4096).from_cache
    assert len(runs) == 2 * measured


def test_a_tuning_file_that_cannot_be_read_back_is_measured_again(device, fresh_cache, tmp_path):
    module = kernel_module(tmp_path, "cached_add_v4")
    x, y, out = vectors(device)
    options = dict(key=["n"], device=device, iterations=2, warmup_samples=0, timer="events", cache_results=True,
                   tie_hold_s=0.001)
    ht.autotune(CONFIGS, **options)(module.add).tune(grid, x, y, out, 4096)
    [stored] = list(fresh_cache.rglob("*.pyhipbench-autotune.json"))
    stored.write_text("{not json")
    with pytest.warns(UserWarning, match=r"cache_results: .* cannot be read back .*; tuning again"):
        again = ht.autotune(CONFIGS, **options)(module.add).tune(grid, x, y, out, 4096)
    assert not again.from_cache


# -- triton.autotune's other arguments ------------------------------------------

def test_warmup_rep_and_use_cuda_graph_map_to_bench_options():
    tuned = ht.autotune(CONFIGS, key=["n"], warmup=5, rep=20, use_cuda_graph=True)(tk.add)
    assert tuned.options.max_time_s == pytest.approx(0.025) and tuned.options.timer == "graph"
    assert tuned.options.cache_state == "dirty-cold"


def test_resets_leave_the_arrays_as_a_reset_step_does(device, fake_driver, fresh_cache):
    x, y, out = vectors(device)
    out.copy_from(np.full(4096, 7, np.float32))
    tuned = ht.autotune(CONFIGS[:1], key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                        reset_to_zero=["out"], restore_value=["x"])(tk.add)
    tuned.tune(grid, x, y, out, 4096)
    assert not out.to_numpy().any() and (x.to_numpy() == np.arange(4096, dtype=np.float32)).all()


@pytest.mark.parametrize("kwargs, message", [
    (dict(do_bench=print), "do_bench=<built-in function print>: pyhipbench.triton.autotune times every config "
                           "itself; to keep a do_bench, use triton.autotune(..., do_bench=pyhipbench.do_bench)"),
    (dict(warmup=0, rep=0), "warmup=0, rep=0: expected a positive time budget in ms"),
    (dict(warmup=-1), "warmup=-1: out of range"),
    (dict(rep=10, max_time_s=1), "warmup=None, rep=10 with max_time_s=1: warmup + rep is max_time_s; expected one"),
    (dict(use_cuda_graph=1), "use_cuda_graph=1: expected True or False"),
    (dict(use_cuda_graph=True, timer="events"), "use_cuda_graph=True with timer='events': use_cuda_graph is "
                                                "timer='graph'; expected one"),
    (dict(pre_hook=print, reset_to_zero=["out"]), "pre_hook with reset_to_zero or restore_value: Triton's "
                                                  "pre_hook replaces them; expected one of the two"),
    (dict(post_hook=3), "post_hook=3: expected a callable"),
    (dict(cache_results="yes"), "cache_results='yes': expected True or False"),
    (dict(compile_workers=0), "compile_workers=0: out of range"),
    (dict(compile_timeout_s=0), "compile_timeout_s=0: out of range"),
    (dict(warmup_samples=-1), "warmup=-1: out of range"),
])
def test_autotunes_own_arguments_are_checked_once(kwargs, message):
    with pytest.raises(hb.BenchError) as refused:
        ht.autotune(CONFIGS, key=["n"], **kwargs)
    assert str(refused.value).startswith(message)


def test_a_tuning_shows_its_configs_compiling_then_measuring(device, fresh_cache, monkeypatch, capsys):
    import pyhipbench._progress
    monkeypatch.setattr(pyhipbench._progress, "DELAY_S", 0)
    x, y, out = vectors(device)
    ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                compile_workers=2, progress=True)(tk.add).tune(grid, x, y, out, 4096)
    drawn = capsys.readouterr().err
    assert "add compiling" in drawn and "add measuring" in drawn and "4/4" in drawn and "best=" in drawn
    with pytest.raises(hb.BenchError, match=r"progress='yes': expected True, False or None"):
        ht.autotune(CONFIGS, key=["n"], progress="yes")


@pytest.mark.parametrize("timer, loads_on", [("graph", "pyhipbench prepare-ahead"), ("events", "MainThread")])
def test_each_config_loads_while_the_one_before_measures_except_under_the_events_timer(
        device, fresh_cache, monkeypatch, timer, loads_on):
    import threading

    from pyhipbench.triton import _autotune, _kernel
    real_build, real_bench = _kernel.build, _autotune.bench_compiled_with
    steps = []

    def build(spec, *args):
        steps.append(("load", spec.values["BLOCK"], spec.options["num_warps"], threading.current_thread().name))
        return real_build(spec, *args)

    def bench(kernel, *args, **options):
        steps.append(("measure", kernel.meta["BLOCK"], kernel.num_warps))
        return real_bench(kernel, *args, **options)
    monkeypatch.setattr(_kernel, "build", build)
    monkeypatch.setattr(_autotune, "bench_compiled_with", bench)
    x, y, out = vectors(device)
    tuning = ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer=timer,
                         cache="warm", compile_workers=2, tie_hold_s=None)(tk.add).tune(grid, x, y, out, 4096)
    assert not tuning.failed and all(r.measure_s > 0 for r in tuning.results)
    loads = [step for step in steps if step[0] == "load"]
    assert all(thread.startswith(loads_on) for *_, thread in loads) and len(loads) == len(CONFIGS)
    measures = [step for step in steps if step[0] == "measure"]
    assert sorted(step[1:3] for step in loads) == sorted(step[1:] for step in measures)
    for measure in measures:  # each config loaded before its measurement
        load = next(step for step in loads if step[1:3] == measure[1:])
        assert steps.index(load) < steps.index(measure)
    if timer == "events":  # one after another: load, measure, load, ...
        assert [step[0] for step in steps] == ["load", "measure"] * len(CONFIGS)


def test_a_config_that_fails_to_load_is_recorded_and_the_rest_are_measured(device, fresh_cache, monkeypatch):
    from pyhipbench.triton import _kernel
    real_build = _kernel.build

    def build(spec, *args):
        if spec.values["BLOCK"] == 256:
            raise hb.CodegenError("this cubin does not load")
        return real_build(spec, *args)
    monkeypatch.setattr(_kernel, "build", build)
    x, y, out = vectors(device)
    tuning = ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer="graph",
                         cache="warm", compile_workers=2)(tk.add).tune(grid, x, y, out, 4096)
    assert [r.error for r in tuning.results] == [None, None] + ["CodegenError: this cubin does not load"] * 2
    assert tuning.best in CONFIGS[:2] and all(r.measure_s is None for r in tuning.failed)


def test_a_tensor_is_adopted_once_for_every_config_that_shares_the_views(device, fresh_cache):
    from dataclasses import replace

    from pyhipbench.triton._bench import bench_compiled_with

    from fakes.tensors import FakeTensor
    n = 4096
    x, y, out = (FakeTensor(a, memory=device.backend) for a in (np.arange(n, dtype=np.float32),
                                                                   np.ones(n, np.float32), np.zeros(n, np.float32)))
    options = hb.BenchOptions(timer="events", cache="warm", iterations=2, warmup=0)
    views: dict = {}
    for block in (128, 256):
        kernel = ht.compile(tk.add, [*vectors(device, n), n], device, BLOCK=block)
        kernel = replace(kernel, meta={**kernel.meta, "x": x, "y": y, "out": out})
        try:
            bench_compiled_with(kernel, grid, options, views=views, reset_to_zero=["out"])
        finally:
            kernel.unload()
    assert [t.exported for t in (x, y, out)] == [1, 1, 1] and len(views) == 3


def test_a_kernel_s_parameters_and_target_are_read_from_its_ptx_head_as_from_the_whole(device, fresh_cache):
    from pyhipbench._codeobject import image
    from pyhipbench.triton._kernel import _ptx_head
    kernel = ht.compile(tk.add, [*vectors(device), 4096], device, BLOCK=128)
    try:
        ptx = kernel.compiled.asm["ptx"]
        head = _ptx_head(ptx)
        assert len(head) < len(ptx) // 2 and image.ptx_kernels(head) == image.ptx_kernels(ptx)
        assert image.target(head.encode()) == image.target(ptx.encode()) == "sm_90a"
    finally:
        kernel.unload()


def test_the_compile_workers_are_forked_with_triton_imported_and_hashed(device, fresh_cache):
    """Before the first compile, the fork server imports Triton and hashes its installation: every worker it
    forks starts with both."""
    from pyhipbench._compile.pool import shared_pool

    import pool_tasks
    ht.autotune(CONFIGS, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                compile_workers=2)(tk.add).tune(grid, *vectors(device), 4096)
    pool = shared_pool(2)
    ended = [pool.submit(pool_tasks.sleep, 60, timeout_s=0.2) for _ in range(2)]  # the workers that compiled end
    assert all(f.result(timeout=60).ended == "timeout" for f in ended)
    assert [f.result(timeout=120).value for f in [pool.submit(pool_tasks.ready_for_triton) for _ in range(2)]] \
        == [(True, 1)] * 2
