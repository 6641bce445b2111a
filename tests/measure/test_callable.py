"""bench_callable() and do_bench() against the fake libcuda / libcupti (and the fake HIP runtime for events).

The callables launch through the fake drivers with ctypes, as a library would (a driver or runtime API
call from the calling thread); the fake CUPTI correlates each launch's kernel record to the API call.
"""
from __future__ import annotations

import ctypes
import logging
import sys
import threading
import types

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._results.comparison import compare
from pyhipbench._results.environment import environment
from pyhipbench.errors import BenchError, MeasurementError

KERNEL_US = 4.0  # the fake driver's launch duration
GEMM, BIAS = 0xA1, 0xA2  # made-up function handles the fake launches


@pytest.fixture
def cuda(fake_libraries, fake_cupti):
    """(device, fake driver, its libcuda for the callables) over the fake libcuda with the fake libcupti."""
    from fakes.driver import FakeDriver
    from fakes.host_backend import HostBackend
    fake = FakeDriver(fake_libraries["cuda"])
    fake.name_function(GEMM, "gemm")
    fake.name_function(BIAS, "bias")
    device = hb.Device.from_backend(HostBackend(), hb._core.load_driver("cuda", str(fake_libraries["cuda"])))
    lib = fake.lib
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    lib.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    lib.cuStreamCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    return device, fake, lib


def launch(lib, function, stream=0, block=64):
    assert lib.cuLaunchKernel(function, 1, 1, 1, block, 1, 1, 0, stream, None, None) == 0


def test_a_sample_is_the_sum_of_the_kernels_the_call_launched(cuda, fake_cupti):
    device, fake, lib = cuda
    scratch = device.empty(256, np.uint8)

    def op():
        lib.cuMemsetD8Async(scratch.address, 0, 256, None)
        launch(lib, GEMM)
        launch(lib, BIAS)

    res = hb.bench_callable(op, device=device, cache="warm", graph=False, iterations=6, warmup=2)
    assert res.ran == "call" and res.kernel.endswith("op") and res.config is None and res.timer == "cupti"
    np.testing.assert_allclose(res.times_us, 2 * KERNEL_US, atol=1e-6)  # the memset is listed, not summed
    np.testing.assert_allclose(res.span_us, 2 * KERNEL_US + 0, atol=1e-6)  # back to back on the fake clock
    assert [(k.kind, k.name, k.bytes) for k in res.kernels] == [("memset", "memset", 256), ("kernel", "gemm", 0),
                                                               ("kernel", "bias", 0)]
    assert [k.median_us for k in res.kernels][1:] == pytest.approx([KERNEL_US, KERNEL_US])
    assert res.first_call_s is not None and res.first_call_s >= 0 and res.call_note == "called: graph=False"
    ours = [r for r in fake.records("cuLaunchKernel") if r.function in (GEMM, BIAS)]
    assert len(ours) == 2 * (1 + 2 + 6)  # the first call, the warm-up, the samples
    assert fake_cupti.calls().count("cuptiEnableDomain") == 2  # a call traces the driver and runtime APIs


def test_with_another_cupti_subscriber_calls_are_told_apart_by_external_ids(cuda, fake_cupti):
    """After torch.profiler (Kineto keeps CUPTI's one subscription): the same kernels, memsets and times, by the
    external id each call is marked with; another thread's launches meanwhile are not the call's."""
    device, fake, lib = cuda
    fake_cupti.lib.fake_cupti_set_other_subscriber(1)
    scratch = device.empty(256, np.uint8)

    def op():
        lib.cuMemsetD8Async(scratch.address, 0, 256, None)
        launch(lib, GEMM)
        other = threading.Thread(target=launch, args=(lib, BIAS, 0, 32))
        other.start()
        other.join()
        fake.runtime_launch(BIAS, 1, 64)

    res = hb.bench_callable(op, device=device, cache="warm", graph=False, iterations=5, warmup=1)
    assert res.timer == "cupti"
    np.testing.assert_allclose(res.times_us, 2 * KERNEL_US, atol=1e-6)
    assert [(k.kind, k.name) for k in res.kernels] == [("memset", "memset"), ("kernel", "gemm"), ("kernel", "bias")]
    calls = fake_cupti.calls()
    assert "cuptiEnableDomain" not in calls and calls.count("cuptiActivityPushExternalCorrelationId") == 1 + 1 + 5
    assert fake_cupti.lib.fake_cupti_external_depth(5) == 0 and not fake_cupti.tracing


class _Torch:
    """What pyhipbench reads of torch: torch.autograd._profiler_enabled(), and no CUDA device of its own."""
    def __init__(self) -> None:
        self.recording = True
        self.autograd = types.SimpleNamespace(_profiler_enabled=lambda: self.recording)
        self.cuda = types.SimpleNamespace(is_available=lambda: False)


def test_while_torch_profiler_records_auto_is_events_with_a_note_and_cupti_refused(cuda, monkeypatch, caplog):
    device, fake, lib = cuda
    torch = _Torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    with caplog.at_level(logging.WARNING):
        res = hb.bench_callable(lambda: launch(lib, GEMM), device=device, cache="warm", graph=False, iterations=3)
    note = ("timer events, not cupti: torch.profiler was recording (CUPTI's records are its own during its "
            "session); measure outside the session for kernel time")
    assert res.timer == "events" and res.timer_note == note and res.to_dict()["timer_note"] == note
    assert res.summary().endswith(f"; {note}") and note in caplog.text
    with pytest.raises(BenchError, match=r"^timer='cupti' while torch.profiler records in this process: "):
        hb.bench_callable(lambda: launch(lib, GEMM), device=device, timer="cupti", graph=False, iterations=3)
    torch.recording = False  # the session ended: CUPTI's records are anyone's again
    res = hb.bench_callable(lambda: launch(lib, GEMM), device=device, cache="warm", graph=False, iterations=3)
    assert res.timer == "cupti" and res.timer_note is None


def test_a_call_that_launches_nothing_under_events_is_refused(device):
    """Events around a call that issued no GPU work read 0.000 µs (on AMD exactly): refused, as cupti refuses it."""
    with pytest.raises(MeasurementError, match=r"^every call of 'nothing' read 0\.000 µs between its events: "):
        hb.bench_callable(lambda: None, device=device, timer="events", graph=False, iterations=3, name="nothing")


def test_after_torch_profiler_a_call_reads_kernel_ns_not_tsc_ticks(cuda, fake_cupti):
    """After a torch.profiler session: another subscriber, and records in the TSC ticks of Kineto's timestamp
    callback; the same kernel times as before."""
    device, fake, lib = cuda
    fake_cupti.lib.fake_cupti_set_other_subscriber(1)
    fake_cupti.lib.fake_cupti_set_ticks_per_ns(2.1)
    res = hb.bench_callable(lambda: (launch(lib, GEMM), launch(lib, BIAS)), device=device, cache="warm",
                            graph=False, iterations=4, warmup=0)
    assert res.timer == "cupti"
    np.testing.assert_allclose(res.times_us, 2 * KERNEL_US, rtol=1e-3)
    np.testing.assert_allclose(res.span_us, 2 * KERNEL_US, rtol=1e-3)


def test_a_kernel_record_delivered_twice_counts_once(cuda, fake_cupti):
    """The same record twice (one correlation id, start and end) is one kernel, for the probe's plan too."""
    device, fake, lib = cuda
    fake_cupti.lib.fake_cupti_records_twice(1000)
    res = hb.bench_callable(lambda: (launch(lib, GEMM), launch(lib, BIAS)), device=device, cache="warm",
                            graph=False, iterations=4, warmup=0)
    np.testing.assert_allclose(res.times_us, 2 * KERNEL_US, atol=1e-6)
    assert res.timer == "cupti" and [k.name for k in res.kernels] == ["gemm", "bias"]


def test_kernels_launched_through_the_runtime_api_are_attributed(cuda):
    device, fake, lib = cuda
    res = hb.bench_callable(lambda: fake.runtime_launch(GEMM, 1, 64), device=device, cache="warm", graph=False,
                            iterations=4, warmup=0)
    np.testing.assert_allclose(res.times_us, KERNEL_US, atol=1e-6)
    assert [k.name for k in res.kernels] == ["gemm"]


def test_another_threads_launches_are_not_the_calls(cuda):
    device, fake, lib = cuda

    def op():
        other = threading.Thread(target=launch, args=(lib, BIAS))
        other.start()
        other.join()
        launch(lib, GEMM)

    res = hb.bench_callable(op, device=device, cache="warm", graph=False, iterations=4, warmup=0)
    np.testing.assert_allclose(res.times_us, KERNEL_US, atol=1e-6)
    assert [k.name for k in res.kernels] == ["gemm"]


def test_work_on_another_stream_counts_with_the_cupti_timer(cuda):
    device, fake, lib = cuda
    stream = ctypes.c_void_p()
    assert lib.cuStreamCreate(ctypes.byref(stream), 1) == 0
    res = hb.bench_callable(lambda: launch(lib, GEMM, stream.value), device=device, cache="warm", graph=False,
                            iterations=3, warmup=0)
    np.testing.assert_allclose(res.times_us, KERNEL_US, atol=1e-6)


def test_the_clean_step_runs_before_each_call_and_is_not_counted(cuda):
    device, fake, lib = cuda
    res = hb.bench_callable(lambda: launch(lib, GEMM), device=device, graph=False, iterations=3, warmup=0)
    assert res.cache_state == "clean-cold"
    np.testing.assert_allclose(res.times_us, KERNEL_US, atol=1e-6)
    clean = device.bundled_kernel("clean").handle
    functions = [r.function for r in fake.records("cuLaunchKernel") if r.function in (clean, GEMM)]
    assert functions == [GEMM] + [clean, GEMM] * 3  # the first call is untimed, with no clean step


def test_a_callable_that_launches_nothing_is_a_clear_error(cuda):
    device, _, _ = cuda
    with pytest.raises(MeasurementError, match="call 0 of '.*' launched no kernel: the cupti timer times"):
        hb.bench_callable(lambda: None, device=device, cache="warm", graph=False, iterations=3, warmup=0)


def test_what_the_callable_raises_propagates_and_tracing_ends(cuda, fake_cupti):
    device, _, lib = cuda
    calls = []

    def op():
        calls.append(1)
        launch(lib, GEMM)
        if len(calls) == 3:
            raise KeyError("candidate failed")

    with pytest.raises(KeyError, match="candidate failed"):
        hb.bench_callable(op, device=device, cache="warm", graph=False, iterations=5, warmup=0)
    assert not fake_cupti.tracing
    res = hb.bench_callable(lambda: launch(lib, GEMM), device=device, cache="warm", graph=False, iterations=2,
                            warmup=0)  # the timer and CUPTI are as before
    assert res.samples == 2


def test_a_callable_on_a_stream_of_its_own_is_captured_and_replayed(cuda, fake_cupti):
    device, fake, lib = cuda
    stream = ctypes.c_void_p()
    assert lib.cuStreamCreate(ctypes.byref(stream), 1) == 0

    def op():
        launch(lib, GEMM, stream.value)
        launch(lib, BIAS, stream.value)

    res = hb.bench_callable(op, device=device, stream=stream.value, cache="warm", iterations=4, warmup=1)
    assert res.ran == "graph" and res.call_note is None
    np.testing.assert_allclose(res.times_us, 2 * KERNEL_US, atol=1e-6)
    assert len(fake.records("cuGraphLaunch")) == 5
    assert [r.function for r in fake.records("cuLaunchKernel") if r.function in (GEMM, BIAS)] == [GEMM, BIAS]
    assert [k.name for k in res.kernels] == ["gemm", "bias"]
    assert "cuptiEnableDomain" not in fake_cupti.calls()  # a replay traces cuGraphLaunch alone


def test_a_capture_that_fails_falls_back_to_calling_and_says_why(cuda):
    """The callable claims a blocking stream but launches on the legacy stream: the driver invalidates the
    capture (the launch's own error ignored, as a careless library would)."""
    device, fake, lib = cuda
    stream = ctypes.c_void_p()
    assert lib.cuStreamCreate(ctypes.byref(stream), 0) == 0
    res = hb.bench_callable(lambda: lib.cuLaunchKernel(GEMM, 1, 1, 1, 64, 1, 1, 0, None, None, None),
                            device=device, stream=stream.value, cache="warm", iterations=3, warmup=0)
    assert res.ran == "call" and res.call_note.startswith("called: capture failed (DriverError: cuStreamEndCapture")
    np.testing.assert_allclose(res.times_us, KERNEL_US, atol=1e-6)


def test_graph_true_refuses_what_cannot_be_captured(cuda):
    device, _, lib = cuda
    with pytest.raises(BenchError, match="graph=True, but .* could not be captured: .*legacy default stream"):
        hb.bench_callable(lambda: launch(lib, GEMM), device=device, graph=True, iterations=2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(fn=42), "fn=42: expected a callable taking no arguments"),
    (dict(timer="graph"), "timer='graph': a callable is timed call by call; expected cupti or events"),
    (dict(cache="dirty-cold"), "cache='dirty-cold': a callable's buffers are its own"),
    (dict(graph="yes"), "graph='yes': expected 'auto', True or False"),
    (dict(stream=-1), "stream=-1: expected a stream handle"),
    (dict(precision=2), "precision=2"),
    (dict(device="gpu0"), "device='gpu0': expected a pyhipbench.Device or None"),
    (dict(name=3), "name=3: expected a string"),
])
def test_bad_options_are_named_before_anything_runs(cuda, kwargs, message):
    device, fake, lib = cuda
    fn = kwargs.pop("fn", lambda: launch(lib, GEMM))
    before = len(fake.records("cuLaunchKernel"))
    with pytest.raises(BenchError, match=message):
        hb.bench_callable(fn, **{"device": device, **kwargs})
    assert len(fake.records("cuLaunchKernel")) == before


def test_the_events_timer_brackets_each_call_on_its_stream(device, fake_driver, backend_name):
    """On AMD (the fake HIP runtime) the events timer is the one for calls."""
    if backend_name == "hip":
        lib = fake_driver.lib
        lib.hipExtModuleLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint32] * 6 + [
            ctypes.c_size_t] + [ctypes.c_void_p] * 5 + [ctypes.c_uint32]

        def op():
            assert lib.hipExtModuleLaunchKernel(GEMM, 64, 1, 1, 64, 1, 1, 0, None, None, None, None, None, 0) == 0
    else:
        lib = fake_driver.lib
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3

        def op():
            launch(lib, GEMM)
    res = hb.bench_callable(op, device=device, timer="events", cache="warm", graph=False, iterations=4, warmup=0)
    assert res.timer == "events" and res.span_us is None and res.kernels == ()
    np.testing.assert_allclose(res.times_us, KERNEL_US, atol=1e-3)


QUANTILES = [None, (0.5, 0.2, 0.8), (0.5,), [0.1, 0.9]]


@pytest.mark.parametrize("quantiles", QUANTILES)
@pytest.mark.parametrize("return_mode", ["min", "max", "mean", "median", "all"])
def test_do_bench_returns_what_triton_returns_in_ms(cuda, monkeypatch, quantiles, return_mode):
    device, _, lib = cuda
    monkeypatch.setattr(hb._measure.callable, "_devices", {0: device})
    out = hb.do_bench(lambda: launch(lib, GEMM), warmup=1, rep=5, quantiles=quantiles, return_mode=return_mode)
    if quantiles is not None:
        if len(quantiles) == 1:
            assert isinstance(out, float) and out == pytest.approx(KERNEL_US / 1000)
        else:
            assert isinstance(out, list) and len(out) == len(quantiles)
            assert out == pytest.approx([KERNEL_US / 1000] * len(quantiles))
    elif return_mode == "all":
        assert isinstance(out, list) and len(out) >= 10 and all(t == pytest.approx(KERNEL_US / 1000) for t in out)
    else:
        assert isinstance(out, float) and out == pytest.approx(KERNEL_US / 1000)


def test_do_bench_sets_grads_to_none_before_each_call(cuda, monkeypatch):
    device, _, lib = cuda
    monkeypatch.setattr(hb._measure.callable, "_devices", {0: device})

    class Tensor:
        grad = "stale"
    tensor, seen = Tensor(), []

    def op():
        seen.append(tensor.grad)
        launch(lib, GEMM)
    hb.do_bench(op, warmup=1, rep=2, grad_to_none=[tensor])
    assert seen and all(g is None for g in seen)


@pytest.mark.parametrize("kwargs, message", [
    (dict(return_mode="p50"), "return_mode='p50': expected one of min, max, mean, median, all"),
    (dict(quantiles=(0.5, 1.5)), r"quantiles=\[0.5, 1.5\]: expected numbers in \[0, 1\]"),
    (dict(quantiles=()), r"quantiles=\(\): expected a non-empty list"),
    (dict(warmup=0, rep=0), "warmup=0, rep=0: expected a positive time budget in ms"),
    (dict(rep=-1), "rep=-1"),
    (dict(grad_to_none=3), r"^grad_to_none=3: expected a list of tensors \(each with a .grad\) or None"),
    (dict(grad_to_none="xy"), r"^grad_to_none='xy': expected a list of tensors"),
    (dict(grad_to_none=[1.5]), r"^grad_to_none=\[1.5\]: expected a list of tensors"),
])
def test_do_bench_names_a_bad_argument(kwargs, message):
    with pytest.raises(BenchError, match=message):
        hb.do_bench(lambda: None, **kwargs)


def test_a_compile_error_of_the_first_call_propagates_for_tritons_autotuner(cuda, monkeypatch):
    device, _, _ = cuda
    monkeypatch.setattr(hb._measure.callable, "_devices", {0: device})

    class OutOfResources(Exception):
        pass

    def op():
        raise OutOfResources("shared memory")
    with pytest.raises(OutOfResources):
        hb.do_bench(op)


@pytest.mark.parametrize("suffix", [".json", ".csv", ".md"])
def test_a_callables_result_writes_reads_back_and_compares(cuda, tmp_path, suffix):
    from pyhipbench._results import report
    device, _, lib = cuda
    res = hb.bench_callable(lambda: launch(lib, GEMM), device=device, cache="warm", graph=False, iterations=3,
                            warmup=0, name="gemm op")
    record = res.to_dict()
    assert record["grid"] is None and record["ran"] == "call"
    path = tmp_path / f"r{suffix}"
    path.write_text(report.render(path, [record], environment([device])))
    assert "gemm op" in path.read_text()
    if suffix == ".json":
        loaded = report.load(path)
        assert [c.key for c in compare(loaded, loaded)] == ["gemm op (a callable) (warm, cupti)"]
