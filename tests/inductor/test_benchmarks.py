"""Inductor's benchmarks measured by pyhipbench on the fake libcuda / libcupti, through the installed torch's own
code paths: Benchmarker.benchmark (a single callable) and AlgorithmSelectorCache.benchmark_choices (a list of
choices: raced, its finalists held, a failing choice inf). Needs torch (no GPU: the callables launch on the fakes)."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="pyhipbench.inductor hooks into torch's Inductor; torch is not "
                                            "installed (.ci/run tests it in a venv with torch 2.11)")

from torch._inductor.runtime import benchmarking  # noqa: E402
from torch._inductor.select_algorithm import AlgorithmSelectorCache  # noqa: E402

import pyhipbench as hb  # noqa: E402
import pyhipbench.inductor as inductor  # noqa: E402
from pyhipbench.errors import BenchError  # noqa: E402
from pyhipbench.inductor import _gpu_benchmark  # noqa: E402
from pyhipbench.inductor._settings import Settings  # noqa: E402

GEMM = 0xA1


@pytest.fixture
def fake(fake_libraries, fake_cupti, monkeypatch):
    """(the fake driver, a Device over it) with pyhipbench installed on that device; each launch of block b
    takes US_BY_BLOCK[b] µs."""
    from fakes.driver import FakeDriver
    from fakes.host_backend import HostBackend
    monkeypatch.delenv(inductor.ENV_VAR, raising=False)
    monkeypatch.setenv("FAKE_LAUNCH_US_BY_BLOCK", "64:9,128:3,256:3,512:20~1")  # 512: a spread whose CI never narrows
    driver = FakeDriver(fake_libraries["cuda"])
    driver.name_function(GEMM, "gemm")
    device = hb.Device.from_backend(HostBackend(), hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    yield driver, device
    inductor.uninstall()


def launching(driver, block):
    return lambda: driver.runtime_launch(GEMM, 1, block)


def benchmark_gpu(fn, **keywords):
    """A single callable benchmarked on the path the installed torch sends Inductor's through pyhipbench: a
    registered benchmarker is reached by Benchmarker.benchmark (torch fills in warmup and rep from its
    config), the instance's benchmark_gpu directly."""
    if hasattr(benchmarking, "register_benchmarker"):
        return benchmarking.benchmarker.benchmark(fn, device="cuda", **keywords)
    return benchmarking.benchmarker.benchmark_gpu(fn, **keywords)


def test_a_callable_is_measured_by_its_kernel_time_in_ms_as_inductor_asks(fake):
    driver, device = fake
    inductor.install(device=device, cache="warm")
    bench = benchmarking.benchmarker
    assert bench.benchmark(launching(driver, 128), device="cuda") == pytest.approx(0.003)  # the median, ms
    assert benchmark_gpu(launching(driver, 64), return_mode="min") == pytest.approx(0.009)
    every = benchmark_gpu(launching(driver, 64), return_mode="all", estimation_iters=5)
    assert isinstance(every, list) and len(every) >= 10 and np.allclose(every, 0.009)
    assert benchmark_gpu(launching(driver, 128), quantiles=[0.5, 0.2]) == pytest.approx(0.003)


def test_bad_input_is_one_line(fake):
    driver, device = fake
    inductor.install(device=device, cache="warm")
    with pytest.raises(BenchError, match=r"^return_mode='best': expected one of min, max, mean, median, all$"):
        benchmark_gpu(launching(driver, 64), return_mode="best")
    with pytest.raises(BenchError, match=r"^benchmark_gpu keyword flush=True: pyhipbench does not know it"):
        benchmark_gpu(launching(driver, 64), flush=True)
    for quantiles in ([], 0.5):
        with pytest.raises(BenchError, match="^" + re.escape(f"quantiles={quantiles!r}: expected a non-empty list "
                                                             "of numbers in [0, 1]") + "$"):
            benchmark_gpu(launching(driver, 64), quantiles=quantiles)
    assert not [r for r in driver.records("cudaLaunchKernel") if r.function == GEMM]  # refused before running
    with pytest.raises(ZeroDivisionError):  # what the callable raises reaches Inductor as it is
        benchmark_gpu(lambda: 1 / 0)


def test_a_call_with_no_kernel_reads_0_ms_alone_and_torchs_clock_as_a_choice(fake, monkeypatch, caplog):
    """Alone (a fused kernel's argument clone, which Inductor subtracts from a kernel-time reading) a call that
    launches only a copy or a fill has no kernel time; as one of a list's choices torch's own clock times it."""
    driver, device = fake
    asked = []
    monkeypatch.setattr(type(benchmarking.benchmarker), "benchmark_gpu",
                        lambda self, fn, **keywords: asked.append((fn, keywords)) or 0.25)
    inductor.install(device=device, cache="warm", tie_hold_s=None)
    ran = []
    nothing = lambda: ran.append("nothing")  # noqa: E731
    assert benchmark_gpu(nothing, rep=40) == 0.0 and asked == []
    choices = [Choice("fast", launching(driver, 128)), Choice("nothing", nothing)]
    timings = AlgorithmSelectorCache.benchmark_choices(choices, Args())
    assert timings[choices[1]] == 0.25 and len(asked) == 1  # torch's clock, with Inductor's keywords
    ran.clear()
    asked[0][0]()  # the callable torch's clock was handed is the choice's (a registered benchmarker's wraps it)
    assert ran == ["nothing"]
    assert "timed by torch's benchmarker instead" in caplog.text and "from another clock" in caplog.text
    whole = [CUTLASSChoice("cutlass_fast", launching(driver, 128)), CUTLASSChoice("cutlass_nothing", nothing)]
    timings = AlgorithmSelectorCache.benchmark_choices(whole, Args())  # a list Inductor measures whole
    assert timings[whole[1]] == 0.25 and len(asked) == 2  # still a choice: torch's clock, not 0 ms
    assert timings[whole[0]] == pytest.approx(0.003)


class CUTLASSChoice:
    """A choice run from a compiled library (Inductor's CUTLASS choices), which Inductor measures as a whole
    list."""

    def __init__(self, name, call):
        self.inner = Choice(name, call)
        self.name = name

    def benchmark(self, *inputs, out):
        return self.inner.benchmark(*inputs, out=out)


def test_a_budget_given_in_part_takes_do_benchs_default_for_the_rest(fake, monkeypatch):
    """pad_mm asks benchmark_gpu(fn, warmup=5): 5 + 100 ms (do_bench's rep; through a registered benchmarker
    torch's config gives the same 100), not a 5 ms cap."""
    driver, device = fake
    inductor.install(device=device, cache="warm")
    caps = []
    real = _gpu_benchmark.bench_callable_with
    monkeypatch.setattr(_gpu_benchmark, "bench_callable_with",
                        lambda fn, options, **kw: caps.append(options.max_time_s) or real(fn, options, **kw))
    benchmark_gpu(launching(driver, 64), warmup=5)
    assert caps == [pytest.approx(0.105)]


def test_a_list_inside_a_choice_is_measured_whole_apart_from_the_outer_race(fake, monkeypatch, caplog):
    """A choice whose benchmark measures a list of its own (a subgraph's): the inner list is neither bounded by
    the outer race nor recorded into it; the outer choices still race and keep their numbers."""
    driver, device = fake
    inductor.install(device=device, cache="warm", tie_hold_s=None)
    seen = measured_by_label(monkeypatch)
    inner = [Choice("inner_slow", launching(driver, 64)), Choice("inner_fast", launching(driver, 128))]

    class Subgraph:
        name = "subgraph"

        def benchmark(self, *inputs, out):
            return min(AlgorithmSelectorCache.benchmark_choices(inner, Args()).values())
    outer = [Choice("fast", launching(driver, 256)), Subgraph()]
    timings = AlgorithmSelectorCache.benchmark_choices(outer, Args())
    assert timings[outer[0]] == pytest.approx(0.003) and timings[outer[1]] == pytest.approx(0.003)
    inner_results = [result for label, _, result in seen if label != "fast"]
    assert sorted(r.median_us for r in inner_results) == pytest.approx([3, 9])
    assert all(r.slower_than_us is None and r.stop_reason != "slower" for r in inner_results)  # not raced against
    # the outer list's 3 µs
    assert "another clock" not in caplog.text  # the subgraph was measured by pyhipbench, through its own list


class Choice:
    """What benchmark_choices asks of a choice: its name, and benchmark(*inputs, out) -> ms, which (as
    Inductor's choices do) goes through the module-level benchmarker."""

    def __init__(self, name, call):
        self.name, self.call = name, call

    def benchmark(self, *inputs, out):
        return benchmarking.benchmarker.benchmark(self.call, device="cuda")


class Args:
    """AutotuneArgs as benchmark_choice reads it: the tensors a choice runs on."""

    class Tensors:
        def __init__(self):
            self.out = torch.zeros(4)

        def unpack(self):
            return (), self.out

    def get_benchmark_tensors(self, extern=False):
        return self.Tensors()


def measured_by_label(monkeypatch):
    """Every measurement's (label, whether it is in the tie round, result), in order: the screen's and the tie
    round's alike go through Inductor's benchmark of the choice."""
    seen = []
    real = _gpu_benchmark.bench_callable_with

    def spy(fn, options, **kw):
        result = real(fn, options, **kw)
        seen.append((kw["name"], options.throttle_threshold == 0, result))  # the tie round keeps every clock
        return result
    monkeypatch.setattr(_gpu_benchmark, "bench_callable_with", spy)
    return seen


def test_a_list_races_and_a_failing_choice_is_inf_the_others_kept(fake, monkeypatch):
    driver, device = fake
    inductor.install(device=device, cache="warm", tie_hold_s=None)
    seen = measured_by_label(monkeypatch)

    def broken():
        raise RuntimeError("CUDA error: invalid argument")
    choices = [Choice("fast", launching(driver, 128)), Choice("broken", broken), Choice("nothing", lambda: None),
               Choice("slow", launching(driver, 512))]
    timings = AlgorithmSelectorCache.benchmark_choices(choices, Args())
    assert list(timings) == choices
    assert timings[choices[0]] == pytest.approx(0.003) and timings[choices[3]] == pytest.approx(0.020, rel=0.1)
    assert math.isinf(timings[choices[1]]) and math.isinf(timings[choices[2]])  # Inductor's and pyhipbench's refusal
    results = {label: result for label, _, result in seen}
    assert results["slow"].stop_reason == "slower" and results["slow"].slower_than_us == pytest.approx(
        results["fast"].ci_us[1])
    assert results["fast"].stop_reason != "slower"
    book = inductor.ledger()  # what was measured, counted: the two choices that ran a kernel, the list
    assert (book.measurements, book.choice_lists, book.stopped_slower, book.holds, book.torch_timed) == (2, 1, 1, 0, 1)
    assert book.samples == sum(len(r.times_us) for r in results.values())
    assert book.warmup_samples == sum(r.warmup for r in results.values()) and book.measure_s > 0 == book.holds_s


def test_the_finalists_are_held_and_the_numbers_keep_the_tie_rounds_order(fake, monkeypatch):
    """Two choices tie at 3 µs; under sustained load (a hold) 'first' reads 6 µs and 'second' 4 µs: 'second'
    wins, its number the fastest screen median, 'first' scaled by 6 / 4."""
    driver, device = fake
    inductor.install(device=device, cache="warm", iterations=4, warmup=0, tie_hold_s=0.002)
    seen = measured_by_label(monkeypatch)
    real = _gpu_benchmark.bench_callable_with

    def held(fn, options, **kw):
        sustained = options.throttle_threshold == 0  # a tie-round run: held, or right after its own hold
        monkeypatch.setenv("FAKE_LAUNCH_US_BY_BLOCK", "128:6,256:4,64:9" if sustained else "64:9,128:3,256:3")
        return real(fn, options, **kw)
    monkeypatch.setattr(_gpu_benchmark, "bench_callable_with", held)
    choices = [Choice("first", launching(driver, 128)), Choice("second", launching(driver, 256)),
               Choice("slow", launching(driver, 64))]
    timings = AlgorithmSelectorCache.benchmark_choices(choices, Args())
    assert timings[choices[1]] == pytest.approx(0.003) and timings[choices[0]] == pytest.approx(0.003 * 6 / 4)
    assert timings[choices[2]] == pytest.approx(0.009)  # not a finalist: its screen median
    assert min(timings, key=timings.__getitem__) is choices[1]
    holds = [label for label, tie_round, _ in seen if tie_round]
    assert holds and inductor.ledger().holds == len(holds) and inductor.ledger().samples == 4 * len(seen)
    assert 0 < inductor.ledger().holds_s < inductor.ledger().measure_s  # the screen's measurements took the rest
    assert [(label, tie_round) for label, tie_round, _ in seen][:3] == [("first", False), ("second", False),
                                                                          ("slow", False)]


def test_a_finalist_whose_hold_fails_keeps_its_screen_reading_and_the_compile_goes_on(fake):
    """Each hold runs Inductor's benchmark of the choice again: one that raises there (as a choice whose
    library Inductor closed would) loses its hold, not the compile."""
    driver, device = fake
    inductor.install(device=device, cache="warm", iterations=4, warmup=0, tie_hold_s=0.002)
    from pyhipbench.inductor._choice_race import ChoiceRace

    def flaky():
        race = ChoiceRace.current()
        if race is not None and race.holding is not None:  # screened fine; fails when held
            raise RuntimeError("an illegal memory access was encountered")
        driver.runtime_launch(GEMM, 1, 128)
    choices = [Choice("flaky", flaky), Choice("steady", launching(driver, 256))]
    timings = AlgorithmSelectorCache.benchmark_choices(choices, Args())
    assert timings[choices[0]] == pytest.approx(0.003) and timings[choices[1]] == pytest.approx(0.003)


def test_ready_measures_one_call_with_the_installed_options(fake):
    driver, device = fake
    settings = Settings.checked("cuda", device, True, 0.1, {"cache": "warm"})
    _gpu_benchmark.ready(settings, launching(driver, 64))
    ours = [r for r in driver.records("cudaLaunchKernel") if r.function == GEMM]
    assert len(ours) == 2  # the first, untimed call and one sample: no warm-up, no hold
