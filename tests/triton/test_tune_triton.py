"""Triton launches as pyhipbench.tune() candidates (pyhipbench.triton.TritonLaunch): real Triton compiles for sm_90
on the CPU, in the compile pool ahead of the first measurement; the fake driver loads and launches."""
from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): "
                                                "the Triton adapter's tests need it")

import pyhipbench as hb
import pyhipbench.triton as ht
from pyhipbench._measure.bench import PreparedBench

import triton_kernels as tk


@pytest.fixture
def backend_name():
    """CUDA only: the AMD path of a Triton compile is test_triton.py's; tune() takes both alike."""
    return "cuda"


@pytest.fixture
def compiled_here(monkeypatch):
    """Every triton.compile this process makes (the compile pool's workers are other processes)."""
    made = []
    real = triton.compile

    def compile(source, *args, **kwargs):
        made.append(source.fn.__name__)
        return real(source, *args, **kwargs)
    monkeypatch.setattr(triton, "compile", compile)
    return made


def vectors(device, n=4096):
    x = device.array(np.arange(n, dtype=np.float32))
    return x, device.array(np.ones(n, np.float32)), device.empty_like(x)


def grid(meta):
    return (triton.cdiv(meta["n"], meta["BLOCK"]),)


def launch_us(monkeypatch, fake_driver, us: dict[int, float]) -> list:
    """Each launch of a block size (threads) takes us[block] µs on the fake; the (grid, block) of each
    measurement."""
    measured = []
    real = PreparedBench.run

    def run(self):
        config = self.checked[0][1]
        measured.append((config.grid[0], config.block[0]))
        fake_driver.lib.fake_set_launch_ms(us[config.block[0]] / 1000)
        return real(self)
    monkeypatch.setattr(PreparedBench, "run", run)
    return measured


def test_triton_launches_compile_in_the_pool_then_race_as_any_candidate(device, fake_driver, fresh_cache,
                                                                        compiled_here, monkeypatch):
    measured = launch_us(monkeypatch, fake_driver, {64: 5.0, 128: 3.0, 256: 4.0})
    x, y, out = vectors(device)
    launches = [ht.TritonLaunch(tk.add, grid, [x, y, out, 4096], BLOCK=b, num_warps=w)
                for b, w in ((256, 2), (128, 4), (512, 8))]
    loaded = len(device.backend.modules)
    tuning = hb.tune(launches, device=device, timer="events", cache="warm", tie_hold_s=None, compile_workers=2)
    assert [r.label for r in tuning.results] == ["add(BLOCK=256, num_warps=2)", "add(BLOCK=128, num_warps=4)",
                                                 "add(BLOCK=512, num_warps=8)"]
    assert compiled_here == [] and not tuning.failed  # every compile was a worker's
    assert tuning.best.label == "add(BLOCK=128, num_warps=4)" and tuning.best.candidate is launches[1]
    assert measured == [(16, 64), (32, 128), (8, 256)]  # the grid from the lambda, the block Triton's
    assert tuning.results[1].result.slower_than_us == tuning.results[0].result.ci_us[1]  # raced
    assert all(r.result.kernel == "add" and r.note is None for r in tuning.results)
    assert len(device.backend.modules) == loaded  # each kernel unloaded after the tuning
    # Compiled before: Triton's cache answers, nothing compiles here or in a worker.
    again = hb.tune(launches[:2], device=device, timer="events", cache="warm", tie_hold_s=None, compile_workers=2)
    assert compiled_here == [] and again.best.label == tuning.best.label


def test_a_triton_launch_beside_a_launch_and_a_callable_and_one_that_fails_alone(device, fake_driver, fresh_cache,
                                                                                 monkeypatch):
    x, y, out = vectors(device)
    plain = ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=128, num_warps=4)
    scratch, _ = plain.scratch((32,))
    tuning = hb.tune({"triton": ht.TritonLaunch(tk.add, (32,), [x, y, out, 4096], BLOCK=128, num_warps=4),
                      "loaded": hb.Launch(plain.kernel, 32, plain.block, plain.arguments() + scratch),
                      "unknown": ht.TritonLaunch(tk.add, (32,), [x, y, out, 4096], BLOCK=128, colour=3)},
                     device=device, timer="events", cache="warm", iterations=3, tie_hold_s=None)
    triton_result, loaded, unknown = tuning.results
    assert triton_result.result.samples == loaded.result.samples == 3
    assert triton_result.result.config.block == loaded.result.config.block == (128, 1, 1)
    assert unknown.result is None and unknown.error.startswith(
        "BenchError: Triton kernel 'add': keyword colour=3 is neither its parameter")
    plain.unload()


def test_a_kernel_a_worker_cannot_import_compiles_here_and_its_note_says_why(device, fresh_cache, compiled_here):
    local_add = tk.add_defined_in_a_function()
    x, y, out = vectors(device)
    tuning = hb.tune([ht.TritonLaunch(local_add, grid, [x, y, out, 4096], BLOCK=256)], device=device,
                     timer="events", iterations=2, tie_hold_s=None)
    assert compiled_here == ["local_add"] and tuning.best.label == "local_add(BLOCK=256)"
    assert tuning.best.note == ("compiled in this process: local_add is defined inside a function, which a "
                                "compile worker cannot import")


def test_triton_configs_recorded_keep_their_meta_parameters_as_tags(device, fresh_cache, tmp_path):
    x, y, out = vectors(device)
    db = tmp_path / "tuning.db"
    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b in (128, 256) for w in (2, 4)]
    tuning = hb.tune([ht.TritonLaunch(tk.add, grid, [x, y, out, 4096], **c.all_kwargs()) for c in configs],
                     device=device, timer="events", iterations=2, tie_hold_s=None, record=db)
    assert tuning.results[0].label == "add(BLOCK=128, num_warps=2, num_ctas=1, num_stages=3)"
    results = hb.load_results(db)
    assert sorted((r["tags"]["BLOCK"], r["tags"]["num_warps"]) for r in results) == [(128, 2), (128, 4), (256, 2),
                                                                                      (256, 4)]
    assert results[0]["tags"]["label"].startswith("add(BLOCK=") and results[0]["kernel"] == "add"
    with sqlite3.connect(db) as connection:
        ranks = [json.loads(c)["rank"] for (c,) in connection.execute("SELECT candidate FROM results")]
    assert sorted(ranks) == [1, 2, 3, 4]
    pytest.importorskip("matplotlib", reason="pyhipbench plot needs matplotlib (the plot extra)")
    from pyhipbench.cli import main
    assert main(["plot", str(db), "--x", "BLOCK", "--y", "num_warps", "-o", str(tmp_path / "space.svg")]) == 0
    assert (tmp_path / "space.svg").read_text().startswith("<?xml")


def test_autotune_records_each_tuning_by_its_key_and_refuses_a_bad_record_at_decoration(device, fresh_cache, tmp_path):
    x, y, out = vectors(device)
    db = tmp_path / "tuning.db"
    configs = [triton.Config({"BLOCK": b}) for b in (128, 256)]
    tuner = ht.autotune(configs, key=["n"], device=device, timer="events", iterations=2, tie_hold_s=None,
                        record=db)(tk.add)
    tuner.tune(grid, x, y, out, 4096)
    tuner.tune(grid, x, y, out, 2048)  # another key: another tuning in the same database
    results = hb.load_results(db)
    assert sorted((r["tags"]["key"][0], r["tags"]["BLOCK"]) for r in results) == [("2048", 128), ("2048", 256),
                                                                                  ("4096", 128), ("4096", 256)]
    with pytest.raises(hb.BenchError, match=r"^record=3: expected the path of a results database"):
        ht.autotune(configs, key=["n"], record=3)


def test_an_autotune_whose_record_fails_keeps_its_tuning(device, fresh_cache, tmp_path, monkeypatch):
    """The database refuses the write: the error says so, and the tuning is kept (the next call for the key
    returns it, not a second tuning that would fail the same way)."""
    from pyhipbench._tuning.record import TuningRecord

    def refused(self, tuning, tags, device):
        raise OSError(28, "No space left on device; the tuning itself finished", str(tmp_path / "tuning.db"))
    monkeypatch.setattr(TuningRecord, "write", refused)
    x, y, out = vectors(device)
    tuner = ht.autotune([triton.Config({"BLOCK": b}) for b in (128, 256)], key=["n"], device=device,
                        timer="events", iterations=2, tie_hold_s=None, record=tmp_path / "tuning.db")(tk.add)
    with pytest.raises(OSError, match="No space left on device; the tuning itself finished"):
        tuner.tune(grid, x, y, out, 4096)
    [(key, kept)] = tuner.tunings.items()
    assert tuner.tune(grid, x, y, out, 4096) is kept and kept.best.kwargs["BLOCK"] in (128, 256)


@pytest.mark.parametrize("make, error, message", [
    (lambda x: ht.TritonLaunch(print, 1, [x]), hb.BenchError, r"^TritonLaunch fn=<built-in function print>: "
                                                              r"expected a @triton.jit function$"),
    (lambda x: ht.TritonLaunch(tk.add, 1, x), hb.BenchError, r"^TritonLaunch args=DeviceArray\(.*\): expected a "
                                                             r"list of the kernel's arguments$"),
    (lambda x: ht.TritonLaunch(tk.add, 0, [x]), hb.BenchError, r"^grid=0"),
    (lambda x: ht.TritonLaunch(tk.add, 1, [x], shared_bytes=1024), hb.BenchError,
     r"^TritonLaunch shared_bytes=1024: a Triton kernel's dynamic shared memory is what Triton compiled it for"),
    (lambda x: ht.TritonLaunch(tk.add, 1, [x], icache_flush="yes"), hb.BenchError, r"^icache_flush='yes'"),
])
def test_a_triton_launch_that_cannot_be_one_is_refused_in_one_line(device, make, error, message):
    x, _, _ = vectors(device)
    with pytest.raises(error, match=message):
        make(x)


def test_a_triton_source_launch_is_refused_naming_the_triton_launch():
    source = hb.TritonSource("triton_kernels:add", {"BLOCK": 128})
    with pytest.raises(hb.BenchError, match=r"^SourceLaunch of a triton source: it compiles for its arguments' "
                                            r"specs; expected pyhipbench.triton.TritonLaunch\(fn, grid, args, "
                                            r"\*\*meta\) for a Triton kernel$"):
        hb.tune([hb.SourceLaunch(source, "add", 1, 128, [])])


def test_an_icache_flush_on_nvidia_is_refused_before_anything_compiles(device, compiled_here):
    x, y, out = vectors(device)
    with pytest.raises(hb.CodegenError, match=r"^icache_flush=True on sm_90: NVIDIA GPUs have no instruction-cache "
                                              r"invalidation"):
        hb.tune([ht.TritonLaunch(tk.add, grid, [x, y, out, 4096], icache_flush=True, BLOCK=128)], device=device)
    assert compiled_here == []
