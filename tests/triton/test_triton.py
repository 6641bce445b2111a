"""Triton kernels through the core, on the CPU: real Triton 3.x compiles for sm_90 and gfx942,
pyhipbench loads the binary on the fake drivers and launches it with Triton's launch facts."""
from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): "
                                                "the Triton adapter's tests need it")

import pyhipbench as hb
import pyhipbench.triton as ht
from pyhipbench.codegen.verify import verify_entries

import triton_kernels as tk
from codegen_helpers import FLUSH, disassemble, require_toolchain

LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
WARP = {"cuda": 32, "hip": 64}


@pytest.fixture(autouse=True)
def no_buffer_ops(monkeypatch):
    """Triton's AMD backend imports torch to size buffer operations, and torch is not installed
    here; without them it compiles plain global loads."""
    monkeypatch.setattr(triton.knobs.amd, "use_buffer_ops", False)


@pytest.fixture
def device(device, backend_name):
    """The fake device; on AMD, Triton's LLVM IR goes through codegen, which needs the LLVM toolchain."""
    if backend_name == "hip":
        require_toolchain("gfx942")
    return device


def vectors(device, n=4096):
    x = device.array(np.arange(n, dtype=np.float32))
    return x, device.array(np.ones(n, np.float32)), device.empty_like(x)


def test_vector_add_launch_facts_and_parameters(device, fake_driver, backend_name):
    fake_driver.read_args(6)
    x, y, out = vectors(device)
    kernel = ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256, num_warps=4)
    assert kernel.signature == {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
    assert kernel.constants == {"BLOCK": 256}
    assert kernel.block == (4 * WARP[backend_name], 1, 1) and kernel.shared_bytes == 0
    assert kernel.binary.startswith({"cuda": "cubin", "hip": "hsaco"}[backend_name])
    assert [p.size for p in kernel.kernel.params] == [8, 8, 8, 4, 8, 8]  # + the two scratch pointers
    assert kernel.kernel.module.target.startswith({"cuda": "sm_90a", "hip": "gfx942"}[backend_name])
    kernel.unload()

    res = ht.bench(tk.add, lambda meta: (meta["n"] // meta["BLOCK"],), [x, y, out, 4096], device=device,
                   BLOCK=256, num_warps=4, iterations=3, warmup=0, timer="events", cache="warm")
    assert res.samples == 3 and res.cache_state == "warm" and res.timer == "events"
    launches = fake_driver.records(LAUNCH[backend_name])
    assert len(launches) == 3
    threads = 4 * WARP[backend_name]
    grid = 16 * threads if backend_name == "hip" else 16  # HIP's launch takes global work sizes
    assert {(r.grid[0], r.block[0], r.shared_bytes) for r in launches} == {(grid, threads, 0)}
    assert {tuple(r.arg_values[:6]) for r in launches} == {(x.address, y.address, out.address, 4096, 0, 0)}


def test_float_scalars_are_packed_as_tritons_fp32(device, fake_driver, backend_name):
    fake_driver.read_args(4)
    x, _, out = vectors(device)
    kernel = ht.compile(tk.scale, [x, out, 4096, 2.5], device, BLOCK=128)
    assert kernel.signature["factor"] == "fp32"
    ht.bench_compiled(kernel, (32,), iterations=1, warmup=0, cache="warm", timer="events")
    factor = fake_driver.records(LAUNCH[backend_name])[0].arg_values[3] & 0xFFFFFFFF
    assert factor == int(np.float32(2.5).view(np.uint32))


def test_integer_one_is_folded_in_as_triton_does(device):
    x, _, out = vectors(device)
    kernel = ht.compile(tk.scale, [x, out, 1, np.float64(3.0)], device, BLOCK=128)
    assert "n" not in kernel.signature and kernel.constants["n"] == 1
    assert len(kernel.kernel.params) == 3 + 2 and kernel.signature["factor"] == "fp32"


@pytest.mark.parametrize("backend_name", ["cuda", "hip"])
def test_small_matmul_config(device, backend_name):
    a, b, c = (device.empty((256, 256), np.float16) for _ in range(3))
    args = [a, b, c, 256, 256, 256, 256, 1, 256, 1, 256, 1]
    kernel = ht.compile(tk.matmul, args, device, BM=64, BN=64, BK=32, num_warps=4, num_stages=2)
    # Strides of 1 are specialised into the code, as Triton's launcher does: not parameters.
    assert list(kernel.signature) == ["a", "b", "c", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"]
    assert kernel.constants == {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BM": 64, "BN": 64, "BK": 32}
    assert kernel.shared_bytes == kernel.compiled.metadata.shared and 0 < kernel.shared_bytes <= 48 * 1024
    assert kernel.num_warps == 4 and kernel.num_stages == 2 and kernel.block == (4 * WARP[backend_name], 1, 1)
    res = ht.bench_compiled(kernel, lambda m: (m["M"] // m["BM"], m["N"] // m["BN"]), iterations=2, warmup=0,
                            timer="events")
    assert res.config.grid == (4, 4, 1) and res.config.shared_bytes == kernel.shared_bytes


def test_shared_memory_above_48k_reaches_bench(device, backend_name, monkeypatch):
    """128 x 128 x 64, 8 warps, 3 stages: Triton asks for 96 KiB (64 KiB on gfx942), which bench() receives as
    shared_bytes (launching it needs the opt-in attribute the core sets for large requests)."""
    seen = {}
    monkeypatch.setattr(ht._bench, "bench_with", lambda launches, options, **launch: seen.update(
        shared_bytes=launches[0].shared_bytes, iterations=options.iterations))
    a, b, c = (device.empty((256, 256), np.float16) for _ in range(3))
    ht.bench(tk.matmul, (2, 2), [a, b, c, 256, 256, 256, 256, 1, 256, 1, 256, 1], device=device,
             BM=128, BN=128, BK=64, num_warps=8, num_stages=3, iterations=1)
    assert seen == {"shared_bytes": {"cuda": 98304, "hip": 65536}[backend_name], "iterations": 1}


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_global_scratch_is_allocated_per_program(device, fake_driver):
    fake_driver.read_args(6)
    x, y = device.empty((256, 64), np.float32), device.empty((256, 64), np.float32)
    kernel = ht.compile(tk.descriptor_copy, [x, y, 256, 64], device, BM=64, BN=64)
    assert kernel.global_scratch_bytes == kernel.compiled.metadata.global_scratch_size > 0
    arguments, buffers = kernel.scratch((4,))
    assert buffers[0].nbytes == 4 * kernel.global_scratch_bytes and arguments[1] == hb.Pointer(0)
    assert isinstance(arguments[0], hb._launch.args.Shared) and arguments[0].array is buffers[0]
    buffers[0].free()
    live = len(device.backend.live)
    ht.bench_compiled(kernel, (4,), iterations=2, warmup=0, timer="events", rotate=1)
    record = fake_driver.records("cuLaunchKernel")[0]
    assert record.arg_values[4] not in (0, x.address, y.address) and record.arg_values[5] == 0
    assert len(device.backend.live) == live  # the scratch buffer is freed after the run


def test_amd_kernel_starts_with_the_icache_flush(tmp_path):
    require_toolchain("gfx942")
    from fakes.host_backend import HostBackend
    device = hb.Device.from_backend(HostBackend(backend="hip", arch="gfx942"), None)
    a, b, c = (device.empty((128, 128), np.float16) for _ in range(3))
    kernel = ht.compile(tk.matmul, [a, b, c, 128, 128, 128, 128, 1, 128, 1, 128, 1], device,
                        BM=64, BN=64, BK=32, num_warps=4)
    assert disassemble(kernel.code_object, "gfx942", tmp_path)["matmul"][:17] == FLUSH
    path = tmp_path / "matmul.hsaco"
    path.write_bytes(kernel.code_object)
    proof = verify_entries(path, "gfx942", ["matmul"], "s_icache_inv", require_toolchain("gfx942").disassembler)
    assert proof.ok and "mfma" in kernel.compiled.asm["llir"]  # Triton's own MFMA code, flushed first


# -- bad input --------------------------------------------------------------

@pytest.mark.parametrize("backend_name", ["cuda"])
def test_clusters_are_refused_naming_num_ctas(device):
    x, y, out = vectors(device)
    with pytest.raises(hb.BenchError, match=r"num_ctas=2: .* expected num_ctas=1"):
        ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256, num_ctas=2)


def test_bad_arguments_name_the_value(device):
    x, y, out = vectors(device)
    with pytest.raises(hb.BenchError, match=r"argument x=Pointer\(address=\d+\): .* expected a DeviceArray"):
        ht.compile(tk.add, [hb.Pointer(x.address), y, out, 4096], device, BLOCK=256)
    with pytest.raises(hb.BenchError, match=r"argument n=int64\(4096\) .* compiled the parameter as i32"):
        ht.bench(tk.add, (16,), [x, y, out, hb.int64(4096)], device=device, BLOCK=256, iterations=1)
    with pytest.raises(hb.BenchError, match=r"keyword BLOK=256 is neither its parameter \(x, y, out, n, BLOCK\) "
                                            r"nor a Triton compile option \(.*num_warps"):
        ht.compile(tk.add, [x, y, out, 4096], device, BLOK=256)
    with pytest.raises(hb.BenchError, match=r"'add' takes \(x, y, out, n, BLOCK\): missing a required argument"):
        ht.compile(tk.add, [x, y], device, BLOCK=256)
    with pytest.raises(hb.BenchError, match=r"shared_bytes=1024: .*\(metadata\.shared\); leave it out"):
        ht.bench(tk.add, (16,), [x, y, out, 4096], device=device, BLOCK=256, shared_bytes=1024)
    with pytest.raises(hb.BenchError, match=r"fn=<function add .*>: expected a @triton.jit function"):
        ht.compile(tk.add.fn, [x, y, out, 4096], device, BLOCK=256)
    with pytest.raises(hb.BenchError, match=r"grid\[0\]=0: out of range, expected an integer in \[1, 4294967295\]"):
        ht.bench(tk.add, lambda meta: (0,), [x, y, out, 4096], device=device, BLOCK=256, iterations=1)
    with pytest.raises(hb.BenchError, match=r"grid=\(1, 1, 1, 1\): expected 1 to 3 integers"):
        ht.bench(tk.add, (1, 1, 1, 1), [x, y, out, 4096], device=device, BLOCK=256, iterations=1)


def test_a_compile_failure_names_the_meta_parameters(device):
    x, y, out = vectors(device)
    with pytest.raises(hb.CodegenError, match=rf"(?s)Triton could not compile 'add' for {device.arch} with "
                                              r"BLOCK=100.*CompilationError.*power of 2"):
        ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=100)


def test_without_triton_every_entry_point_says_how_to_install_it():
    script = ("import sys; sys.modules['triton'] = None\n"
              "import pyhipbench, pyhipbench.triton as ht\n"
              "try:\n    ht.autotune([], key=[])\n"
              "except pyhipbench.ToolchainError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "Triton is not installed or cannot be imported" in out and "pip install triton" in out


# -- autotune ---------------------------------------------------------------

def timed_by_block(monkeypatch, fake_driver, us_by_block: dict[int, float]):
    """The fake driver's launches take us_by_block[threads per block] µs (else 1 µs); counts the runs."""
    runs = []

    def bench_with_fake_time(launches, options, **launch):
        runs.append(launches[0].kernel.name)
        fake_driver.lib.fake_set_launch_ms(us_by_block.get(launches[0].block[0], 1.0) / 1000)
        return real(launches, options, **launch)

    real = ht._bench.bench_with
    monkeypatch.setattr(ht._bench, "bench_with", bench_with_fake_time)
    return runs


def test_autotune_picks_the_fastest_config_once_per_key(device, fake_driver, backend_name, monkeypatch):
    warp = WARP[backend_name]
    runs = timed_by_block(monkeypatch, fake_driver, {2 * warp: 9.0, 4 * warp: 5.0, 8 * warp: 7.0})
    configs = [triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4),
               triton.Config({"BLOCK": 512}, num_warps=8)]
    tuned = ht.autotune(configs, key=["n"], device=device, iterations=4, warmup_samples=0, timer="events")(tk.add)
    x, y, out = vectors(device)
    grid = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    tuning = tuned.tune(grid, x, y, out, 4096)
    assert tuning.best is configs[1] and tuning.key == (4096, "float32", "float32", "float32")
    assert [r.median_us for r in tuning.results] == pytest.approx([9.0, 5.0, 7.0], rel=1e-4)
    row = tuning.results[1].to_dict()
    assert row["config"] == {"BLOCK": 256, "num_warps": 4, "num_ctas": 1, "num_stages": 3}
    assert row["timer"] == "events" and row["cache_state"] == "clean-cold" and row["samples"] == 4
    assert row["ci_us"] == pytest.approx([5.0, 5.0], rel=1e-4)
    assert tuned.tune(grid, x, y, out, 4096) is tuning and len(runs) == 3  # cached per key
    tuned.tune(grid, x, y, out, 2048)
    assert len(runs) == 6 and set(tuned.tunings) == {tuning.key, (2048, "float32", "float32", "float32")}


def test_autotune_races_each_config_against_the_best_so_far(device, fake_driver, backend_name, monkeypatch):
    """After the first config, each gets the lowest CI upper bound so far as slower_than_us: a noisy
    config well above it stops after one chunk ("slower"); one below it runs to the precision."""
    warp = WARP[backend_name]
    timing = {4 * warp: (5.0, 0.0), 8 * warp: (9.0, 0.05), 2 * warp: (4.0, 0.0)}  # µs, + µs per launch
    options = []

    def bench_with_fake_time(launches, bench_options, **launch):
        options.append(bench_options)
        us, step_us = timing[launches[0].block[0]]
        fake_driver.lib.fake_set_launch_ms(us / 1000)
        fake_driver.lib.fake_set_launch_ms_step(step_us / 1000)  # a ramp: never within ±1 %
        return real(launches, bench_options, **launch)

    real = ht._bench.bench_with
    monkeypatch.setattr(ht._bench, "bench_with", bench_with_fake_time)
    configs = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8),
               triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=8)]
    tuned = ht.autotune(configs, key=["n"], device=device, warmup_samples=0, timer="events", cache="warm")(tk.add)
    x, y, out = vectors(device)
    tuning = tuned.tune((1,), x, y, out, 4096)
    # The bound is the lowest so far (4 µs once the third ran), not the first or the last.
    assert [o.slower_than_us for o in options] == [None, pytest.approx(5.0), pytest.approx(5.0),
                                                          pytest.approx(4.0)]
    fast, slow, fastest, slow_again = (r.result for r in tuning.results)
    assert (fast.stop_reason, slow.stop_reason, fastest.stop_reason, slow_again.stop_reason) == \
        ("precision", "slower", "precision", "slower")
    assert slow.samples == 6 and slow.stats.ci_low > 5.0 and slow.stats.rel_ci > 0.01
    assert tuning.best is configs[2] and tuning.results[1].to_dict()["stop_reason"] == "slower"
    # Each config's JSON names the bound it raced against (none for the first).
    assert [r.to_dict()["slower_than_us"] for r in tuning.results] == [None, pytest.approx(5.0),
                                                                        pytest.approx(5.0), pytest.approx(4.0)]
    # Another key races afresh: its first config has no bound, its second the first's, not the other key's.
    tuned.tune((1,), x, y, out, 2048)
    assert [o.slower_than_us for o in options[4:6]] == [None, pytest.approx(5.0)]


@pytest.mark.parametrize("options", [{"race": False}, {"iterations": 4}])
def test_autotune_without_racing_or_with_a_fixed_count_gives_no_bound(device, fake_driver, backend_name,
                                                                      monkeypatch, options):
    runs = timed_by_block(monkeypatch, fake_driver, {4 * WARP[backend_name]: 5.0})
    passed = []
    real = ht._bench.bench_with
    monkeypatch.setattr(ht._bench, "bench_with", lambda *a, **o: passed.append(a[1]) or real(*a, **o))
    configs = [triton.Config({"BLOCK": 256}, num_warps=4)] * 3
    tuned = ht.autotune(configs, key=["n"], device=device, warmup_samples=0, timer="events", tie_hold_s=None,
                        **options)(tk.add)
    x, y, out = vectors(device)
    tuned.tune((1,), x, y, out, 4096)
    assert len(runs) == 3 and all(o.slower_than_us is None for o in passed)


def test_autotune_breaks_a_tie_by_measuring_the_tied_configs_again_after_a_hold(device, fake_driver, backend_name,
                                                                               monkeypatch):
    """Configs within the precision of the fastest are measured again, twice each (fastest first, then in
    the reverse order), each run after a hold with no clock discarded (the fastest tie's first tie_hold_s,
    every other half of it, the turn none: the tie held last runs again at once); the fastest there wins. A
    config outside the tie is measured once. The winner's runs there are at a clock above the other tie's (its
    lead could be the clock's, so both passes run)."""
    warp = WARP[backend_name]
    burst_us = {2 * warp: 5.0, 4 * warp: 5.02, 8 * warp: 9.0}
    sustained_us = {2 * warp: 6.0, 4 * warp: 5.5, 8 * warp: 9.5}
    options = []

    def bench_with_fake_time(launches, bench_options, **launch):
        options.append(bench_options)
        sustained = bench_options.hold_s > 0 or bench_options.throttle_threshold == 0  # held, or in the tie round
        times = sustained_us if sustained else burst_us
        fake_driver.lib.fake_set_launch_ms(times[launches[0].block[0]] / 1000)
        fake_driver.lib.fake_set_sm_clock_mhz(1800.0 if sustained and launches[0].block[0] == 4 * warp else 1500.0)
        return real(launches, bench_options, **launch)

    real = ht._bench.bench_with
    monkeypatch.setattr(ht._bench, "bench_with", bench_with_fake_time)
    configs = [triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4),
               triton.Config({"BLOCK": 512}, num_warps=8)]
    x, y, out = vectors(device)
    tuned = ht.autotune(configs, key=["n"], device=device, iterations=4, warmup_samples=0, timer="events",
                        tie_hold_s=0.002)(tk.add)
    tuning = tuned.tune((1,), x, y, out, 4096)
    assert tuning.best is configs[1]
    held = [o for o in options if o.throttle_threshold == 0]
    assert len(options) == 7 and len(held) == 4
    assert [o.hold_s for o in held] == [0.002, 0.001, 0, 0.001]
    assert all(o.slower_than_us is None for o in held)  # a fixed count never races
    first, second, third = tuning.results
    assert first.sustained.median_us == pytest.approx(6.0, rel=1e-4) and first.median_us == pytest.approx(5.0)
    assert second.sustained.median_us == pytest.approx(5.5, rel=1e-4) and third.sustained is None
    assert first.sustained.samples == second.sustained.samples == 8  # the two passes' 4 + 4
    assert first.sustained.warmup > 8  # the hold's samples
    row = second.to_dict()
    assert row["sustained_median_us"] == pytest.approx(5.5, rel=1e-4)
    assert (row["sustained_clock_mhz"] is None) == (backend_name == "hip")  # no clock probe on AMD yet
    assert "sustained_median_us" not in third.to_dict()
    # Without the hold the fastest median wins, and nothing is measured twice.
    options.clear()
    untied = ht.autotune(configs, key=["n"], device=device, iterations=4, warmup_samples=0, timer="events",
                         tie_hold_s=None)(tk.add)
    assert untied.tune((1,), x, y, out, 4096).best is configs[0] and len(options) == 3
    # A hold_s bench option holds every config already: no second round.
    options.clear()
    held_all = ht.autotune(configs, key=["n"], device=device, iterations=4, warmup_samples=0, timer="events",
                           hold_s=0.002)(tk.add)
    assert held_all.tune((1,), x, y, out, 4096).best is configs[1] and len(options) == 3


def test_autotune_measures_through_the_tuning_engine(device, fake_driver, monkeypatch):
    """Autotune keeps no policy of its own: its measurements race through the engine's RaceBound and its ties
    go through the engine's tie round."""
    from pyhipbench._tuning import engine
    from pyhipbench._tuning.racing import RaceBound
    asked, held = [], []
    real_options_for, real_hold = RaceBound.options_for, engine.hold_ties

    def options_for(self, options):
        asked.append(self.bound_us)
        return real_options_for(self, options)

    def hold_ties(trials, *args):
        held.append([t.label for t in trials])
        return real_hold(trials, *args)
    monkeypatch.setattr(RaceBound, "options_for", options_for)
    monkeypatch.setattr(engine, "hold_ties", hold_ties)
    _, configs, tuning = tuned_stages(monkeypatch, fake_driver, device, 5.0, 6.0, 3, cache="warm")
    assert len(asked) >= 3 and asked[0] is None and asked[1] == tuning.results[0].result.ci_us[1]
    assert held == [[str(c) for c in configs]]


def held_slower(monkeypatch, fake_driver, burst_us: float, held_us: float) -> list:
    """Every launch takes burst_us on the fake, held_us in the tie round (each of its runs under its own load);
    the options of each."""
    options = []

    def bench_with_fake_time(launches, bench_options, **launch):
        options.append(bench_options)
        fake_driver.lib.fake_set_launch_ms((held_us if bench_options.throttle_threshold == 0 else burst_us) / 1000)
        return real(launches, bench_options, **launch)

    real = ht._bench.bench_with
    monkeypatch.setattr(ht._bench, "bench_with", bench_with_fake_time)
    return options


def tuned_stages(monkeypatch, fake_driver, device, burst_us: float, held_us: float, stages: int, **options):
    """autotune over `stages` configs differing only in num_stages, each launch burst_us on the fake (held_us
    in the tie round): the options of each measurement, the configs and the Tuning."""
    measured = held_slower(monkeypatch, fake_driver, burst_us, held_us)
    configs = [triton.Config({"BLOCK": 256}, num_warps=4, num_stages=s) for s in range(1, stages + 1)]
    tuned = ht.autotune(configs, key=["n"], device=device, warmup_samples=0, timer="events", **options)(tk.add)
    x, y, out = vectors(device)
    return measured, configs, tuned.tune((1,), x, y, out, 4096)


def test_autotune_holds_at_most_four_tied_configs(device, fake_driver, monkeypatch):
    options, _, tuning = tuned_stages(monkeypatch, fake_driver, device, 5.0, 6.0, 6, iterations=4, tie_hold_s=0.001)
    assert len(options) == 6 + 2 * 4 and sum(r.sustained is not None for r in tuning.results) == 4
    assert [r.sustained is not None for r in tuning.results[:4]] == [True] * 4  # ties keep the configs' order


def test_autotune_races_each_later_tie_against_the_sustained_medians_before_it(device, fake_driver, monkeypatch):
    """Racing on, in the second pass (the first runs every tie whole, so a drift cannot stop one early): the
    first config measured there races nothing, the next races its two runs' CI upper bound."""
    options, _, tuning = tuned_stages(monkeypatch, fake_driver, device, 5.0, 6.0, 2, cache="warm", tie_hold_s=0.002)
    first, second = tuning.results
    held = [o for o in options if o.throttle_threshold == 0]
    assert [o.hold_s for o in held] == [0.002, 0.001, 0, 0.001]
    assert [o.slower_than_us for o in held[:3]] == [None, None, None]
    assert held[3].slower_than_us == second.sustained.ci_us[1]  # the second pass runs the second config first
    assert second.sustained.stop_reason == "precision"


def test_after_a_screen_that_loaded_the_gpu_for_the_hold_the_fastest_tie_holds_as_long_as_a_later_one(
        device, fake_driver, monkeypatch):
    """The screen's kernels ran 2 configs x 4 launches x 2 ms = 16 ms, past tie_hold_s (10 ms): a limit
    that bites has bitten, so the fastest tie holds half as long, as the later ones (but the turn)."""
    options, _, tuning = tuned_stages(monkeypatch, fake_driver, device, 2000.0, 2400.0, 2, iterations=4,
                                      tie_hold_s=0.01)
    assert [o.hold_s for o in options if o.throttle_threshold == 0] == [0.005, 0.005, 0, 0.005]
    assert all(r.sustained is not None for r in tuning.results)


def test_autotune_holds_no_further_tie_when_the_hold_does_not_slow_the_fastest(device, fake_driver, monkeypatch):
    options, configs, tuning = tuned_stages(monkeypatch, fake_driver, device, 5.0, 5.01, 3,  # within the 1 % precision
                                            iterations=4, tie_hold_s=0.001)
    assert len(options) == 3 + 1 and all(r.sustained is None for r in tuning.results)
    assert tuning.best is configs[0] and "within the precision of its first median" in tuning.results[0].note


def test_autotune_records_failed_configs_with_the_reason(device, fake_driver, backend_name, monkeypatch):
    timed_by_block(monkeypatch, fake_driver, {4 * WARP[backend_name]: 6.0})
    configs = [triton.Config({"BLOCK": 100}),                                   # not a power of 2
               triton.Config({"BLOCK": 256}, num_warps=4),
               triton.Config({"BLOCK": 256}, num_warps=4, pre_hook=lambda args: None),
               triton.Config({"BLOCK": 4096}, num_warps=2048 // WARP[backend_name])]  # too many threads
    tuned = ht.autotune(configs, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events")(tk.add)
    x, y, out = vectors(device)
    tuning = tuned.tune((1,), x, y, out, 4096)
    assert tuning.best is configs[1] and tuning.results[1].median_us == pytest.approx(6.0, rel=1e-4)
    failed = {id(r.config): r.error for r in tuning.failed}
    assert failed.keys() == {id(configs[0]), id(configs[2]), id(configs[3])}
    assert failed[id(configs[0])].startswith("CodegenError: Triton could not compile 'add'")
    assert "BLOCK=100" in failed[id(configs[0])]
    # A pre_hook config is launched by Triton itself, between its hook calls: with no GPU, Triton finds no driver;
    # on a GPU machine, Triton's launcher refuses the fake device's arrays (host memory).
    assert tuning.results[2].note.startswith("timed through the callable path")
    assert "active drivers" in failed[id(configs[2])] or "cannot be accessed from Triton" in failed[id(configs[2])]
    assert failed[id(configs[3])].startswith("BenchError: block") and "2048" in failed[id(configs[3])] \
        and "limit 1024" in failed[id(configs[3])]  # the launch check names the block and the device's limit
    row = tuning.results[3].to_dict()
    assert row["config"] == {"BLOCK": 4096, "num_warps": 2048 // WARP[backend_name], "num_ctas": 1, "num_stages": 3}
    assert row["error"] == failed[id(configs[3])] and row["measure_s"] is None and "median_us" not in row


def test_autotune_sets_up_the_device_on_a_thread_while_the_configs_compile(device, fake_driver, monkeypatch):
    from pyhipbench._measure.cache import clean_step
    order = []
    real_set_up, real_compile = ht._autotune.set_up, ht._autotune.compile_trials

    def set_up(d, options):
        order.append(("set up", threading.current_thread().name, options.cache_state))
        real_set_up(d, options)

    def compile_configs(trials, progress):
        order.append(("compile", threading.current_thread().name, None))
        real_compile(trials, progress)

    monkeypatch.setattr(ht._autotune, "set_up", set_up)
    monkeypatch.setattr(ht._autotune, "compile_trials", compile_configs)
    runs = timed_by_block(monkeypatch, fake_driver, {})
    tuned = ht.autotune([triton.Config({"BLOCK": 256})], key=["n"], device=device)(tk.add)
    x, y, out = vectors(device)
    tuned.tune((16,), x, y, out, 4096)
    assert sorted(order) == [("compile", "MainThread", None), ("set up", "pyhipbench device set-up", "clean-cold")]
    assert clean_step in device.kept and len(runs) == 1


def test_decorating_for_a_device_sets_it_up_before_the_first_tuning(device, fake_driver, monkeypatch):
    """With device= given, the timer's probe and the clean step are made from the decoration on, while the
    caller goes on (makes its tensors): the first tuning finds them made. Without one, the first tuning
    starts them, as its device opens."""
    made = threading.Event()
    monkeypatch.setattr(ht._autotune, "set_up", lambda d, options: made.set())
    ht.autotune([triton.Config({"BLOCK": 256})], key=["n"], device=device)(tk.add)
    assert made.wait(timeout=30)  # before any tuning
    undecided = ht.autotune([triton.Config({"BLOCK": 256})], key=["n"])(tk.add)
    assert undecided._setting_up is None


def test_autotune_measures_all_the_same_when_setting_up_the_device_fails(device, fake_driver, monkeypatch):
    def set_up(d, options):
        raise hb.DriverError("cuMemAlloc failed: out of memory")

    monkeypatch.setattr(ht._autotune, "set_up", set_up)
    timed_by_block(monkeypatch, fake_driver, {})
    tuned = ht.autotune([triton.Config({"BLOCK": 256})], key=["n"], device=device)(tk.add)
    x, y, out = vectors(device)
    tuning = tuned.tune((16,), x, y, out, 4096)   # the first measurement makes the clean step itself
    assert not tuning.failed and tuning.results[0].result.cache_state == "clean-cold"


def test_autotune_with_no_config_that_runs_says_why_each_failed(device):
    tuned = ht.autotune([triton.Config({"BLOCK": 100}), triton.Config({"BLOCK": 48})], key=["n"],
                        device=device)(tk.add)
    x, y, out = vectors(device)
    with pytest.raises(hb.BenchError, match=r"(?s)autotune of 'add' for key \(4096, .*no config ran; "
                                            r"BLOCK: 100.*CodegenError.*BLOCK: 48.*CodegenError"):
        tuned.tune((1,), x, y, out, 4096)


def test_autotune_bad_arguments(device):
    with pytest.raises(hb.BenchError, match=r"configs=\[\]: expected a non-empty list of triton.Config"):
        ht.autotune([], key=["n"])
    with pytest.raises(hb.BenchError, match=r"key='n': expected a list of argument names"):
        ht.autotune([triton.Config({})], key="n")
    with pytest.raises(hb.BenchError, match=r"autotune option 'timers': expected triton.autotune's arguments or bench\(\) options"):
        ht.autotune([triton.Config({})], key=["n"], timers="events")
    with pytest.raises(hb.BenchError, match=r"autotune option 'shared_bytes'"):
        ht.autotune([triton.Config({})], key=["n"], shared_bytes=4)
    with pytest.raises(hb.BenchError, match=r"autotune option slower_than_us=3.0: racing sets it to the best "
                                            r"candidate's CI so far; expected race=True \(the default\) or race=False"):
        ht.autotune([triton.Config({})], key=["n"], slower_than_us=3.0)
    with pytest.raises(hb.BenchError, match=r"race='yes': expected True \(the default\) or False"):
        ht.autotune([triton.Config({})], key=["n"], race="yes")
    with pytest.raises(hb.BenchError, match=r"tie_hold_s=-0.1: out of range, expected a finite number >= 0"):
        ht.autotune([triton.Config({})], key=["n"], tie_hold_s=-0.1)
    with pytest.raises(hb.BenchError, match=r"key names size, not parameters of 'add' \(x, y, out, n, BLOCK\)"):
        ht.autotune([triton.Config({})], key=["size"])(tk.add)


@pytest.mark.parametrize("backend_name", ["hip"])
def test_amd_buffer_loads_for_arrays_under_2_gib(device, monkeypatch):
    """Triton marks a tensor under 2 GiB so the AMD backend may use buffer loads; a pyhipbench array
    reports its size the same way (Triton's check imports torch first: a stub stands in for it here)."""
    monkeypatch.setattr(triton.knobs.amd, "use_buffer_ops", True)
    monkeypatch.setitem(sys.modules, "torch", type(sys)("torch"))
    x, y, out = vectors(device)
    kernel = ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256)
    assert "buffer_load" in kernel.compiled.asm["amdgcn"] and "global_load" not in kernel.compiled.asm["amdgcn"]


def test_the_matmul_scripts_space(monkeypatch):
    """bench/triton_matmul.py (run on the H200) without its GPU: its 24 configs, and its
    largest one compiled for sm_90 by its own kernel (torch is imported at its top: a stub here)."""
    import importlib.util
    from pathlib import Path

    from fakes.host_backend import HostBackend
    monkeypatch.setitem(sys.modules, "torch", type(sys)("torch"))
    path = Path(__file__).parents[2] / "bench" / "triton_matmul.py"
    spec = importlib.util.spec_from_file_location("triton_matmul", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    labels = [script.label(c) for c in script.configs()]
    assert len(set(labels)) == 24 and labels[0] == "64x64x32 w4 s2" and labels[-1] == "128x128x64 w8 s3"
    device = hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"), None)
    a, b, c = (device.empty((2048, 2048), np.float16) for _ in range(3))
    kernel = ht.compile(script.matmul_kernel, [a, b, c, 2048, 2048, 2048, 2048, 1, 2048, 1, 2048, 1], device,
                        **script.configs()[-1].all_kwargs())
    assert kernel.shared_bytes == 98304 and kernel.block == (256, 1, 1) and kernel.grid(script.grid) == (256,)
    assert script.spearman([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]) == pytest.approx(0.8)

    def row(name, hb_us, db_us, p80_us, ok=True):
        return {"config": name,
                "pyhipbench": {"median_us": hb_us, "ci_us": [hb_us, hb_us], "timer": "cupti",
                               "cache_state": "clean-cold", "wall_ms": 10.0, "output": {"ok": ok}},
                "do_bench": {"median_us": db_us, "mean_us": db_us, "p20_us": db_us, "p80_us": p80_us,
                             "wall_ms": 120.0, "output": {"ok": True}}}
    rows = [row("a", 30.0, 31.0, 31.5), row("b", 31.0, 30.8, 31.2), row("c", 50.0, 52.0, 53.0, ok=False),
            {"config": "d", "pyhipbench": {"error": "BenchError: shared_bytes=98304"},
             "do_bench": row("d", 0, 60.0, 61.0)["do_bench"]}]
    summary = script.summarize(rows)
    assert summary["pyhipbench_pick"] == "a" and summary["do_bench_winner"] == "b"
    assert summary["pick_is_winner_or_within_noise"] is True  # a: 31.0 by do_bench, within b's p80 of 31.2
    assert summary["pick_slower_than_winner_by_do_bench"] == pytest.approx(31.0 / 30.8 - 1)
    assert (summary["pyhipbench_ran"], summary["do_bench_ran"], summary["pyhipbench_outputs_ok"]) == (3, 4, 2)
    assert summary["spearman"] == pytest.approx(0.5) and summary["wall_ratio_do_bench_over_pyhipbench"] == 12
    rows[0]["pyhipbench"]["wall_ms"] = 40.0  # the first candidate pays the process's one-time set-up
    walls = script.summarize(rows)
    assert walls["wall_ratio_do_bench_over_pyhipbench"] == 6 and walls["pyhipbench_wall_ms_median"] == 10
    assert walls["wall_ratio_of_medians"] == 12 and walls["wall_ratio_of_means_after_the_first"] == 12
    rows[1]["do_bench"]["p80_us"] = 30.9
    assert script.summarize(rows)["pick_is_winner_or_within_noise"] is False
    table = script.markdown(rows, summary, {"error": "BenchError: no config ran"})
    assert "| d | - | BenchError: shared_bytes=98304 | | | | 60.00 (60.00-61.00) |" in table
    assert "| c | - | 50.00 (50.00-50.00) | cupti / clean-cold | 10.0 | NO |" in table
    raced = [{"config": "a", "median_us": 30.0, "ci_us": [29.9, 30.1], "samples": 40, "stop_reason": "precision",
              "wall_ms": 3.0},
             {"config": "b", "median_us": 31.0, "ci_us": [30.5, 31.5], "samples": 16, "stop_reason": "slower",
              "wall_ms": 1.0},
             {"config": "c", "error": "BenchError: out of resources"}]
    assert script.summarize_raced(raced, rows) == {
        "raced_wall_ms_per_candidate": 2.0, "raced_wall_ms_median": 2.0,
        "raced_wall_ratio_do_bench_over_raced_means": 60.0, "raced_wall_ratio_of_medians": 60.0,
        "raced_stopped_slower": 1, "raced_pick": "a", "raced_pick_is_full_pick": True}
    assert script.summarize_raced([raced[2]], rows) == {}


def test_icache_flush_choice(tmp_path, backend_name, device):
    x, y, out = vectors(device)
    if backend_name == "cuda":
        with pytest.raises(hb.CodegenError, match=r"icache_flush=True on sm_90: NVIDIA GPUs have no "
                                                  r"instruction-cache invalidation.*expected None or False"):
            ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256, icache_flush=True)
        assert ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256, icache_flush=False).binary == "cubin"
        return
    require_toolchain("gfx942")
    kernel = ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256, icache_flush=False)
    assert kernel.code_object == kernel.compiled.asm["hsaco"]
    assert kernel.binary == "hsaco (Triton's own, no icache flush)"
    assert disassemble(kernel.code_object, "gfx942", tmp_path)["add"][0] != "s_icache_inv"
    with pytest.raises(hb.BenchError, match=r"icache_flush='yes': expected True, False or None"):
        ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256, icache_flush="yes")
    with pytest.raises(hb.BenchError, match=r"icache_flush=1: expected True, False or None"):
        ht.autotune([triton.Config({})], key=["n"], icache_flush=1)


@pytest.mark.parametrize("backend_name", ["hip"])
def test_amd_without_torch_says_what_triton_needs(device, monkeypatch):
    monkeypatch.setattr(triton.knobs.amd, "use_buffer_ops", True)
    monkeypatch.setitem(sys.modules, "torch", None)  # as on a machine without torch
    x, y, out = vectors(device)
    with pytest.raises(hb.ToolchainError, match=r"Triton's hip backend needs torch to specialise the "
                                                r"arguments of 'add'.*pip install torch, or on AMD set "
                                                r"AMDGCN_USE_BUFFER_OPS=0"):
        ht.compile(tk.add, [x, y, out, 4096], device, BLOCK=256)


def test_autotune_prunes_configs_as_triton_does_before_compiling(device, fake_driver, backend_name, monkeypatch):
    warp = WARP[backend_name]
    runs = timed_by_block(monkeypatch, fake_driver, {2 * warp: 9.0, 4 * warp: 5.0, 8 * warp: 7.0})
    configs = [triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((128, 2), (256, 4), (512, 8), (1024, 8))]
    seen = {}

    def early(configs, named, **kwargs):
        seen.update(named=sorted(named), kwargs=kwargs)
        return [c for c in configs if c.kwargs["BLOCK"] < 1024]

    def model(**values):
        return {128: 1.0, 256: 3.0, 512: 2.0}[values["BLOCK"]]  # ranks 128 and 512 first
    tuned = ht.autotune(configs, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                        prune_configs_by={"early_config_prune": early, "perf_model": model, "top_k": 2})(tk.add)
    x, y, out = vectors(device)
    tuning = tuned.tune(lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), x, y, out, 4096)
    assert [r.config.kwargs["BLOCK"] for r in tuning.results] == [128, 512] and len(runs) == 2
    assert tuning.best is configs[2] and seen["named"] == ["n", "out", "x", "y"]
    fraction = ht.autotune(configs, key=["n"], device=device, iterations=2, warmup_samples=0, timer="events",
                           prune_configs_by={"perf_model": lambda **v: v["BLOCK"], "top_k": 0.25})(tk.add)
    assert [c.kwargs["BLOCK"] for c in fraction.pruned([x, y, out, 4096], {})] == [128]


@pytest.mark.parametrize("prune, message", [
    ({"early_config_prune": lambda configs, named, **kwargs: None}, r"^early_config_prune returned None: expected a "
     "non-empty list of the triton.Config it was given"),
    ({"perf_model": lambda **values: None, "top_k": 1}, r"^perf_model returned None for BLOCK: 128.*: expected a "
     r"number \(an estimated time\)"),
])
def test_a_pruning_function_returning_nothing_is_named(device, prune, message):
    configs = [triton.Config({"BLOCK": b}, num_warps=4) for b in (128, 256)]
    tuned = ht.autotune(configs, key=["n"], device=device, prune_configs_by=prune)(tk.add)
    x, y, out = vectors(device)
    with pytest.raises(hb.BenchError, match=message):
        tuned.pruned([x, y, out, 4096], {})


def test_autotune_resets_named_arrays_before_each_sample(device, fake_driver, backend_name):
    configs = [triton.Config({"BLOCK": 256}, num_warps=4)]
    tuned = ht.autotune(configs, key=["n"], device=device, iterations=3, warmup_samples=0, timer="events",
                        reset_to_zero=["out"], restore_value=["x"])(tk.add)
    x, y, out = vectors(device)
    tuned.tune(lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),), x, y, out, 4096)
    zero, restore = {"cuda": ("cuMemsetD8Async", "cuMemcpyDtoDAsync_v2"),
                     "hip": ("hipMemsetAsync", "hipMemcpyDtoDAsync")}[backend_name]
    zeroed, restored = fake_driver.records(zero), fake_driver.records(restore)
    assert len(zeroed) == 3 and len(restored) == 3
    assert {r.arg_values[0] for r in zeroed} == {out.address} and {r.arg_values[0] for r in restored} == {x.address}


@pytest.mark.parametrize("kwargs, message", [
    (dict(prune_configs_by={"early": print}), r"prune_configs_by=\{'early': .*\}: expected a dict of "
                                              "early_config_prune, perf_model, top_k"),
    (dict(prune_configs_by={"perf_model": 3}), "prune_configs_by perf_model=3: expected a callable"),
    (dict(reset_to_zero="out"), "reset_to_zero='out': expected a list of argument names"),
    (dict(device="cuda"), r"^device='cuda': expected a pyhipbench.Device"),
])
def test_autotune_bad_pruning_and_reset_arguments(kwargs, message):
    with pytest.raises(hb.BenchError, match=message):
        ht.autotune([triton.Config({})], key=["n"], **kwargs)


def test_autotune_reset_names_must_be_parameters():
    with pytest.raises(hb.BenchError, match=r"restore_value names z, not parameters of 'add'"):
        ht.autotune([triton.Config({})], key=["n"], restore_value=["z"])(tk.add)
