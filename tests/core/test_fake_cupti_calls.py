"""The fake libcuda and libcupti's tracing of calls, driven through ctypes alone.

What the core's tracing of callables relies on, checked on the fakes
themselves: CUPTI's domain callbacks around each traced driver call, the
runtime launch's own callbacks and correlation, kernel records with names,
graph launches' kernel, memset and memcpy records, memcpy and memset records
and their layout, the HIP runtime's asynchronous memset and copy, and stream
capture's errors on the legacy stream (tests/fakes/fake_driver.c, fake_cupti.c).
"""
from __future__ import annotations

import ctypes

import pytest

from fakes.cupti import (
    API_ENTER,
    API_EXIT,
    CBID,
    CBID_CUDA_LAUNCH_KERNEL,
    DOMAIN_DRIVER_API,
    DOMAIN_RUNTIME_API,
    GPU_EPOCH_NS,
    KIND_CONCURRENT_KERNEL,
    KIND_KERNEL,
    KIND_MEMCPY,
    KIND_MEMSET,
    KIND_OVERHEAD,
    CuptiSession,
)
from fakes.driver import CAPTURE_IMPLICIT, CAPTURE_INVALIDATED, CAPTURE_UNSUPPORTED, STREAM_NON_BLOCKING, LaunchConfig
from fakes.host_backend import FAKE_CUDA_CONTEXT

KERNEL_NS = 4000  # the fake driver's default launch: 4 µs
COPY_NS = 1000    # its default memcpy or memset: 1 µs
MEMCPY_KIND_HTOD, MEMCPY_KIND_DTOD = 1, 8
PTX = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry my_kernel(\n.param .u64 p\n)\n{\nret;\n}\n"
F = 0xF00  # a made-up function handle
STREAM = 0x77  # a made-up stream handle


@pytest.fixture
def cuda(fake_driver_cuda, fake_cupti):
    """The fake libcuda, with the fake libcupti attached and a context current."""
    assert fake_driver_cuda.lib.cuCtxPushCurrent_v2(FAKE_CUDA_CONTEXT) == 0
    yield fake_driver_cuda
    fake_driver_cuda.lib.cuCtxPopCurrent_v2(None)


@pytest.fixture
def session(fake_cupti):
    s = CuptiSession(fake_cupti)
    yield s
    s.close()
    assert not fake_cupti.tracing


def launch(cuda, f=F, grid=(2, 1, 1), block=(32, 1, 1), stream=STREAM) -> int:
    return cuda.lib.cuLaunchKernel(f, *grid, *block, 0, stream, None, None)


def alloc(cuda, nbytes: int) -> int:
    address = ctypes.c_uint64()
    assert cuda.lib.cuMemAlloc_v2(ctypes.byref(address), nbytes) == 0
    return address.value


def read(address: int, nbytes: int) -> bytes:
    return ctypes.string_at(address, nbytes)  # fake device memory is host memory


def make_stream(cuda, flags: int = 0) -> int:
    stream = ctypes.c_void_p()
    assert cuda.lib.cuStreamCreate(ctypes.byref(stream), flags) == 0
    return stream.value


def capture(cuda, stream: int, issue) -> tuple[int, int]:
    """Captures what `issue()` sends to `stream`; (graph, exec)."""
    assert cuda.lib.cuStreamBeginCapture_v2(stream, 0) == 0
    issue()
    graph, exec_ = ctypes.c_void_p(), ctypes.c_void_p()
    assert cuda.lib.cuStreamEndCapture(stream, ctypes.byref(graph)) == 0
    assert cuda.lib.cuGraphInstantiateWithFlags(ctypes.byref(exec_), graph, 0) == 0
    return graph.value, exec_.value


def free_graph(cuda, graph: int, exec_: int) -> None:
    assert cuda.lib.cuGraphExecDestroy(exec_) == 0 and cuda.lib.cuGraphDestroy(graph) == 0


def pairs(calls):
    """The callbacks as (name, enter id) per call, checking each enter is followed by its exit."""
    assert len(calls) % 2 == 0
    out = []
    for enter, exit_ in zip(calls[::2], calls[1::2]):
        assert (enter["site"], exit_["site"]) == (API_ENTER, API_EXIT)
        assert enter["correlation_id"] == exit_["correlation_id"] and enter["cbid"] == exit_["cbid"]
        out.append((enter["name"], enter["cbid"], enter["correlation_id"]))
    return out


# ---- domain callbacks ----

def test_the_driver_domain_brackets_each_traced_call_with_one_fresh_correlation_id(cuda, session, fake_cupti):
    buffer, source = alloc(cuda, 64), ctypes.create_string_buffer(b"x" * 64)
    stream = make_stream(cuda, STREAM_NON_BLOCKING)
    graph, exec_ = capture(cuda, stream, lambda: launch(cuda, stream=stream))
    event = ctypes.c_void_p()
    assert cuda.lib.cuEventCreate(ctypes.byref(event), 0) == 0
    assert session.enable_domain(DOMAIN_DRIVER_API) == 0
    config = LaunchConfig((1, 1, 1), (64, 1, 1), 0, STREAM, None, 0)
    results = [launch(cuda), cuda.lib.cuLaunchKernelEx(ctypes.byref(config), F, None, None),
               cuda.lib.cuGraphLaunch(exec_, stream), cuda.lib.cuMemsetD8Async(buffer, 7, 64, STREAM),
               cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer + 32, 32, STREAM),
               cuda.lib.cuMemcpyHtoDAsync_v2(buffer, source, 64, STREAM), cuda.lib.cuEventRecord(event, STREAM),
               cuda.lib.cuCtxSynchronize(), cuda.lib.cuStreamSynchronize(STREAM)]
    assert results == [0] * 9
    names = ["cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch", "cuMemsetD8Async", "cuMemcpyDtoDAsync_v2",
             "cuMemcpyHtoDAsync_v2", "cuEventRecord", "cuCtxSynchronize", "cuStreamSynchronize"]
    calls = pairs(session.calls)
    assert [(name, cbid) for name, cbid, _ in calls] == [(name, CBID[name]) for name in names]
    ids = [correlation_id for _, _, correlation_id in calls]
    assert len(set(ids)) == len(ids) and ids == sorted(ids)  # a fresh id per call
    assert all(c["domain"] == DOMAIN_DRIVER_API and c["context"] == FAKE_CUDA_CONTEXT for c in session.calls)
    assert all(c["result"] == 0 for c in session.calls if c["site"] == API_EXIT)
    # What the fake logged is what the subscriber got.
    logged = fake_cupti.callbacks()
    assert fake_cupti.callbacks_fired == len(session.calls) == len(logged)
    assert [(c.name.decode(), c.cbid, c.site, c.correlation_id) for c in logged] == \
        [(c["name"], c["cbid"], c["site"], c["correlation_id"]) for c in session.calls]
    assert cuda.lib.cuEventDestroy_v2(event) == 0
    free_graph(cuda, graph, exec_)
    assert cuda.lib.cuStreamDestroy_v2(stream) == 0


def test_a_launchs_params_hold_its_function_and_its_result_is_there_at_exit(cuda, session):
    session.enable_domain(DOMAIN_DRIVER_API)
    assert launch(cuda, f=0xABC) == 0
    enter, exit_ = session.calls
    assert enter["first_param"] == exit_["first_param"] == 0xABC  # cuLaunchKernel_params: the CUfunction first
    assert enter["symbol"] == "fake_kernel"
    cuda.fail("cuLaunchKernel", 1)
    assert launch(cuda) == 1
    assert [c["result"] for c in session.calls[2:]] == [0, 1]  # *function_return_value: the CUresult, at exit
    # cuLaunchKernelEx_params, as CUPTI's: the config first, then the CUfunction.
    config = LaunchConfig((3, 1, 1), (64, 1, 1), 0, STREAM, None, 0)
    assert cuda.lib.cuLaunchKernelEx(ctypes.byref(config), 0xDEF, None, None) == 0
    assert session.calls[-1]["params_head"] == (ctypes.addressof(config), 0xDEF)


def test_only_cuLaunchKernel_calls_back_when_only_its_callback_is_enabled(cuda, session, fake_cupti):
    buffer = alloc(cuda, 16)
    assert session.enable_callback(DOMAIN_DRIVER_API, CBID["cuLaunchKernel"]) == 0
    cuda.lib.cuMemsetD8Async(buffer, 1, 16, STREAM)
    cuda.lib.cuCtxSynchronize()
    launch(cuda)
    cuda.runtime_launch(F, 1, 32)
    assert [(c["name"], c["site"]) for c in session.calls] == [("cuLaunchKernel", API_ENTER),
                                                                ("cuLaunchKernel", API_EXIT)]
    # A domain on, then one of its callbacks off: the others still come.
    session.enable_domain(DOMAIN_DRIVER_API)
    session.enable_callback(DOMAIN_DRIVER_API, CBID["cuLaunchKernel"], on=False)
    assert not fake_cupti.callback_enabled(DOMAIN_DRIVER_API, CBID["cuLaunchKernel"])
    del session.calls[:]
    launch(cuda)
    cuda.lib.cuMemsetD8Async(buffer, 1, 16, STREAM)
    assert [c["name"] for c in session.calls] == ["cuMemsetD8Async"] * 2


def test_enable_domain_checks_its_subscriber_and_domain(cuda, session, fake_cupti):
    assert session.enable_domain(0) == 1 and session.enable_domain(7) == 1  # CUPTI_ERROR_INVALID_PARAMETER
    assert fake_cupti.lib.cuptiEnableDomain(1, ctypes.c_void_p(0x1234), DOMAIN_DRIVER_API) == 1
    assert session.enable_domain(DOMAIN_DRIVER_API) == 0 and session.enable_domain(DOMAIN_DRIVER_API, on=False) == 0
    launch(cuda)
    assert session.calls == [] and "cuptiEnableDomain" in fake_cupti.calls()


def test_unsubscribing_ends_every_callback(cuda, session, fake_cupti):
    session.enable_domain(DOMAIN_DRIVER_API)
    session.enable_domain(DOMAIN_RUNTIME_API)
    session.close()
    launch(cuda)
    cuda.runtime_launch(F, 1, 32)
    assert session.calls == [] and fake_cupti.callbacks_fired == 0
    assert not fake_cupti.callback_enabled(DOMAIN_DRIVER_API, CBID["cuLaunchKernel"])


# ---- the runtime launch ----

def test_a_runtime_launch_calls_back_in_the_runtime_domain_alone(cuda, session):
    session.enable_domain(DOMAIN_DRIVER_API)
    session.enable_domain(DOMAIN_RUNTIME_API)
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    assert cuda.runtime_launch(0xF01, 5, 128, STREAM) == 0
    (name, cbid, runtime_id), = pairs(session.calls)  # no driver callback for the launch inside it
    assert (name, cbid) == ("cudaLaunchKernel_v7000", CBID_CUDA_LAUNCH_KERNEL)
    assert all(c["domain"] == DOMAIN_RUNTIME_API for c in session.calls)
    assert session.calls[0]["first_param"] == 0xF01  # cudaLaunchKernel_v7000_params: func first
    kernel, = session.records()
    assert kernel["correlation_id"] == runtime_id  # the kernel is the runtime call's
    assert kernel["grid"] == (5, 1, 1) and kernel["block"] == (128, 1, 1)
    assert kernel["end"] - kernel["start"] == KERNEL_NS
    record, = cuda.records("cudaLaunchKernel")
    assert (record.function, record.stream, list(record.grid)) == (0xF01, STREAM, [5, 1, 1])


def test_a_runtime_launch_is_attributed_without_any_callback(cuda, session):
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    launch(cuda)
    cuda.runtime_launch(F, 1, 32)
    launch(cuda)
    ids = [r["correlation_id"] for r in session.records()]
    assert len(ids) == 3 and len(set(ids)) == 3  # every traced call numbered, subscribed to or not


# ---- kernel records ----

def test_kernel_records_carry_the_kernels_name(cuda, session):
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    assert cuda.lib.cuModuleLoadData(ctypes.byref(module), PTX) == 0
    assert cuda.lib.cuModuleGetFunction(ctypes.byref(function), module, b"my_kernel") == 0
    cuda.name_function(0xF02, "named_by_the_test")
    launch(cuda, f=function.value)
    launch(cuda, f=0xF02)
    launch(cuda, f=0xF03)
    assert cuda.lib.cuModuleUnload(module) == 0
    # Read after the unload: CUPTI owns the names its records point to.
    assert [r["name"] for r in session.records()] == ["my_kernel", "named_by_the_test", "fake_kernel"]


def test_kernel_activity_kind_3_writes_kernel_records_too(cuda, session):
    session.enable_activity(KIND_KERNEL)
    launch(cuda)
    record, = session.records()
    assert record["kind"] == KIND_KERNEL and record["start"] == GPU_EPOCH_NS


def test_a_graph_launch_writes_a_record_per_kernel_node_with_its_correlation_id(cuda, session):
    stream = make_stream(cuda)
    graph, exec_ = capture(cuda, stream, lambda: [launch(cuda, grid=(g, 1, 1), block=(64, 2, 1), stream=stream)
                                                  for g in (3, 4)])
    session.enable_domain(DOMAIN_DRIVER_API)
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    assert session.records() == []  # captured launches do not run
    assert cuda.lib.cuGraphLaunch(exec_, stream) == 0
    (_, cbid, graph_id), = pairs(session.calls)
    first, second = session.records()
    assert cbid == CBID["cuGraphLaunch"]
    assert first["correlation_id"] == second["correlation_id"] == graph_id
    assert (first["grid"], second["grid"]) == ((3, 1, 1), (4, 1, 1)) and first["block"] == (64, 2, 1)
    assert first["end"] - first["start"] == KERNEL_NS and second["start"] == first["end"]  # one after the other
    free_graph(cuda, graph, exec_)
    assert cuda.lib.cuStreamDestroy_v2(stream) == 0


def test_cuLaunchKernelEx_launches_the_configs_shape_on_its_stream(cuda, session):
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    config = LaunchConfig((7, 2, 1), (96, 1, 1), 512, STREAM, None, 0)
    assert cuda.lib.cuLaunchKernelEx(ctypes.byref(config), F, None, None) == 0
    record, = cuda.records("cuLaunchKernelEx")
    assert (list(record.grid), list(record.block), record.shared_bytes, record.stream) == \
        ([7, 2, 1], [96, 1, 1], 512, STREAM)
    kernel, = session.records()
    assert kernel["grid"] == (7, 2, 1) and kernel["block"] == (96, 1, 1)
    assert cuda.lib.cuLaunchKernelEx(None, F, None, None) == 1


# ---- memcpy and memset records ----

def test_async_memset_and_memcpys_change_memory_and_write_their_records(cuda, session):
    buffer, host = alloc(cuda, 64), ctypes.create_string_buffer(bytes(range(64)))
    session.enable_domain(DOMAIN_DRIVER_API)
    session.enable_activity(KIND_MEMCPY, KIND_MEMSET)
    assert cuda.lib.cuMemsetD8Async(buffer, 0xAB, 64, STREAM) == 0
    assert read(buffer, 64) == b"\xab" * 64
    assert cuda.lib.cuMemcpyHtoDAsync_v2(buffer, host, 64, STREAM) == 0
    assert read(buffer, 64) == bytes(range(64))
    assert cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer + 32, 16, STREAM) == 0
    assert read(buffer, 16) == bytes(range(32, 48))
    ids = [correlation_id for _, _, correlation_id in pairs(session.calls)]
    memset, htod, dtod = session.records()
    assert memset == {"kind": KIND_MEMSET, "value": 0xAB, "bytes": 64, "start": GPU_EPOCH_NS,
                      "end": GPU_EPOCH_NS + COPY_NS, "device_id": 0, "context_id": 1, "stream_id": STREAM + 7,
                      "correlation_id": ids[0], "flags": 1, "memory_kind": 3}
    assert (htod["kind"], htod["copy_kind"], htod["src_kind"], htod["dst_kind"], htod["bytes"]) == \
        (KIND_MEMCPY, MEMCPY_KIND_HTOD, 1, 3, 64)
    assert (dtod["kind"], dtod["copy_kind"], dtod["src_kind"], dtod["dst_kind"], dtod["bytes"]) == \
        (KIND_MEMCPY, MEMCPY_KIND_DTOD, 3, 3, 16)
    assert [htod["correlation_id"], dtod["correlation_id"]] == ids[1:]
    assert (htod["start"], dtod["start"], dtod["end"]) == (memset["end"], htod["end"], htod["end"] + COPY_NS)
    assert htod["flags"] == dtod["flags"] == 1 and htod["stream_id"] == STREAM + 7
    assert [(r.call, r.value, r.stream) for r in cuda.records() if b"Async" in r.call] == [
        (b"cuMemsetD8Async", 64, STREAM), (b"cuMemcpyHtoDAsync_v2", 64, STREAM), (b"cuMemcpyDtoDAsync_v2", 16, STREAM)]


def test_copies_take_time_on_the_fake_clock_before_the_next_kernel(cuda, session):
    buffer = alloc(cuda, 8)
    session.enable_activity(KIND_CONCURRENT_KERNEL, KIND_MEMSET)
    cuda.copy_ms(0.0025)
    cuda.lib.cuMemsetD8Async(buffer, 0, 8, STREAM)
    launch(cuda)
    memset, kernel = session.records()
    assert memset["end"] - memset["start"] == 2500 and kernel["start"] == memset["end"]


def test_memcpy_and_memset_records_only_of_the_kinds_enabled(cuda, session, fake_cupti):
    buffer = alloc(cuda, 8)
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    cuda.lib.cuMemsetD8Async(buffer, 0, 8, STREAM)
    cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer, 8, STREAM)
    assert session.records() == [] and fake_cupti.lib.fake_cupti_buffers_requested() == 0
    session.enable_activity(KIND_MEMSET)
    cuda.lib.cuMemsetD8Async(buffer, 0, 8, STREAM)
    cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer, 8, STREAM)
    assert [r["kind"] for r in session.records()] == [KIND_MEMSET]
    assert fake_cupti.lib.cuptiActivityDisable(KIND_MEMSET) == 0 and fake_cupti.lib.cuptiActivityEnable(6) == 21  # EVENT: not faked


def test_records_of_every_kind_are_stepped_over_by_their_size(cuda, session, fake_cupti):
    buffer = alloc(cuda, 8)
    fake_cupti.lib.fake_cupti_set_foreign_records(2)  # before each kernel record: a kernel and an overhead record
    fake_cupti.copy_record_bytes(88, 80)              # other sizes than CUPTI 13's
    session.enable_activity(KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET)
    for _ in range(3):
        cuda.lib.cuMemsetD8Async(buffer, 1, 8, STREAM)
        launch(cuda)
        cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer, 8, STREAM)
    kinds = [r["kind"] for r in session.records()]
    assert kinds == [KIND_MEMSET, KIND_CONCURRENT_KERNEL, KIND_OVERHEAD, KIND_CONCURRENT_KERNEL, KIND_MEMCPY] * 3


def test_copy_records_without_time(cuda, session, fake_cupti):
    buffer = alloc(cuda, 8)
    session.enable_activity(KIND_MEMSET)
    fake_cupti.copy_records_without_time(1)
    cuda.lib.cuMemsetD8Async(buffer, 1, 8, STREAM)
    cuda.lib.cuMemsetD8Async(buffer, 1, 8, STREAM)
    first, second = session.records()
    assert (first["start"], first["end"]) == (0, 0) and second["start"] > 0


def test_async_copies_check_their_context_and_ranges(cuda, fake_driver_cuda):
    buffer = alloc(cuda, 16)
    assert cuda.lib.cuMemsetD8Async(buffer + 8, 0, 16, STREAM) == 1  # runs past the allocation
    assert cuda.lib.cuMemcpyHtoDAsync_v2(buffer, None, 16, STREAM) == 1
    cuda.fail("cuMemcpyDtoDAsync_v2", 2)
    assert cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer, 16, STREAM) == 2
    cuda.lib.cuCtxPopCurrent_v2(None)
    assert cuda.lib.cuMemsetD8Async(buffer, 0, 16, STREAM) == 201  # no current context
    assert cuda.lib.cuCtxPushCurrent_v2(FAKE_CUDA_CONTEXT) == 0
    assert not [r for r in cuda.records() if b"Async" in r.call]


# ---- stream capture ----

def test_the_legacy_stream_cannot_be_captured(cuda):
    assert cuda.lib.cuStreamBeginCapture_v2(None, 0) == CAPTURE_UNSUPPORTED
    assert cuda.lib.cuStreamBeginCapture_v2(1, 0) == CAPTURE_UNSUPPORTED  # CU_STREAM_LEGACY
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    for code, expected in [(900, b"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"),
                           (901, b"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"),
                           (906, b"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT")]:
        cuda.lib.cuGetErrorName(code, ctypes.byref(name))
        cuda.lib.cuGetErrorString(code, ctypes.byref(text))
        assert name.value == expected and text.value and text.value != b"unknown error"


def test_legacy_stream_work_during_a_blocking_capture_invalidates_it(cuda, session):
    buffer = alloc(cuda, 8)
    stream = make_stream(cuda)  # blocking: synchronizes with the legacy stream
    session.enable_activity(KIND_CONCURRENT_KERNEL)
    graphs = cuda.lib.fake_live_graphs()
    assert cuda.lib.cuStreamBeginCapture_v2(stream, 0) == 0
    assert launch(cuda, stream=stream) == 0
    assert launch(cuda, stream=0) == CAPTURE_IMPLICIT
    assert cuda.runtime_launch(F, 1, 32, 0) == CAPTURE_IMPLICIT
    assert cuda.lib.cuMemsetD8Async(buffer, 0, 8, None) == CAPTURE_IMPLICIT
    assert launch(cuda, stream=stream) == CAPTURE_INVALIDATED
    assert cuda.lib.cuMemsetD8Async(buffer, 0, 8, stream) == CAPTURE_INVALIDATED
    graph = ctypes.c_void_p(0x1)
    assert cuda.lib.cuStreamEndCapture(stream, ctypes.byref(graph)) == CAPTURE_INVALIDATED
    assert graph.value is None and cuda.lib.fake_live_graphs() == graphs
    assert session.records() == []  # nothing ran
    assert launch(cuda, stream=0) == 0  # the capture is over
    assert cuda.lib.cuStreamDestroy_v2(stream) == 0


def test_a_non_blocking_streams_capture_ignores_the_legacy_stream(cuda):
    stream = make_stream(cuda, STREAM_NON_BLOCKING)
    graph, exec_ = capture(cuda, stream, lambda: (launch(cuda, stream=stream), launch(cuda, stream=0)))
    assert len(cuda.records("captured cuLaunchKernel")) == 1 and len(cuda.records("cuLaunchKernel")) == 1
    free_graph(cuda, graph, exec_)
    assert cuda.lib.cuStreamDestroy_v2(stream) == 0


def test_captured_memsets_and_memcpys_replay_with_the_graph_launch(cuda, session):
    buffer, host = alloc(cuda, 32), ctypes.create_string_buffer(b"h" * 16)
    stream = make_stream(cuda, STREAM_NON_BLOCKING)
    ctypes.memset(buffer, 0, 32)

    def issue():
        assert cuda.lib.cuMemsetD8Async(buffer, 0x11, 32, stream) == 0
        assert cuda.lib.cuMemcpyHtoDAsync_v2(buffer + 16, host, 16, stream) == 0
        assert launch(cuda, stream=stream) == 0
        assert cuda.lib.cuMemcpyDtoDAsync_v2(buffer, buffer + 16, 8, stream) == 0

    graph, exec_ = capture(cuda, stream, issue)
    assert read(buffer, 32) == bytes(32)  # captured, not run
    assert [r.call for r in cuda.records() if r.call.startswith(b"captured")] == [
        b"captured cuMemsetD8Async", b"captured cuMemcpyHtoDAsync_v2", b"captured cuLaunchKernel",
        b"captured cuMemcpyDtoDAsync_v2"]
    session.enable_domain(DOMAIN_DRIVER_API)
    session.enable_activity(KIND_CONCURRENT_KERNEL, KIND_MEMCPY, KIND_MEMSET)
    for _ in range(2):  # each launch sets and copies again
        ctypes.memset(buffer, 0, 32)
        assert cuda.lib.cuGraphLaunch(exec_, stream) == 0
        assert read(buffer, 32) == b"h" * 8 + b"\x11" * 8 + b"h" * 16
    graph_ids = [correlation_id for _, _, correlation_id in pairs(session.calls)]
    records = session.records()
    assert [r["kind"] for r in records] == [KIND_MEMSET, KIND_MEMCPY, KIND_CONCURRENT_KERNEL, KIND_MEMCPY] * 2
    assert [r["correlation_id"] for r in records] == [graph_ids[0]] * 4 + [graph_ids[1]] * 4
    assert [r.get("copy_kind") for r in records[:4]] == [None, MEMCPY_KIND_HTOD, None, MEMCPY_KIND_DTOD]
    assert [r.call for r in cuda.records() if r.call.startswith(b"graph")] == [
        b"graph memset node", b"graph memcpy node", b"graph node", b"graph memcpy node"] * 2
    free_graph(cuda, graph, exec_)
    assert cuda.lib.cuStreamDestroy_v2(stream) == 0


def test_stream_synchronize_is_recorded(cuda):
    assert cuda.lib.cuStreamSynchronize(STREAM) == 0
    record, = cuda.records("cuStreamSynchronize")
    assert record.stream == STREAM


# ---- HIP ----

def hip_alloc(hip, nbytes: int) -> int:
    pointer = ctypes.c_void_p()
    assert hip.lib.hipMalloc(ctypes.byref(pointer), nbytes) == 0
    return pointer.value


def test_hip_async_memset_and_copy_change_memory_are_recorded_and_take_time(fake_driver_hip):
    hip = fake_driver_hip
    buffer = hip_alloc(hip, 64)
    start, stop = ctypes.c_void_p(), ctypes.c_void_p()
    assert hip.lib.hipEventCreate(ctypes.byref(start)) == 0 and hip.lib.hipEventCreate(ctypes.byref(stop)) == 0
    hip.lib.hipEventRecord(start, None)
    assert hip.lib.hipMemsetAsync(buffer, 0x1FF, 32, STREAM) == 0  # the value's low byte
    assert hip.lib.hipMemcpyDtoDAsync(buffer + 32, buffer, 32, STREAM) == 0
    hip.lib.hipEventRecord(stop, None)
    assert read(buffer, 64) == b"\xff" * 64
    elapsed = ctypes.c_float()
    assert hip.lib.hipEventElapsedTime(ctypes.byref(elapsed), start, stop) == 0
    assert elapsed.value == pytest.approx(0.002)  # 1 µs each
    memset, = hip.records("hipMemsetAsync")
    copy, = hip.records("hipMemcpyDtoDAsync")
    assert (memset.value, memset.stream, memset.arg_values[0], memset.arg_values[1]) == (32, STREAM, buffer, 0xFF)
    assert (copy.value, copy.arg_values[0], copy.arg_values[1]) == (32, buffer + 32, buffer)
    assert hip.lib.hipMemsetAsync(buffer + 60, 0, 8, STREAM) == 1  # past the allocation
    hip.fail("hipMemcpyDtoDAsync", 2)
    assert hip.lib.hipMemcpyDtoDAsync(buffer, buffer, 8, STREAM) == 2
    for event in (start, stop):
        hip.lib.hipEventDestroy(event)
    assert hip.lib.hipFree(buffer) == 0


def test_hip_captures_memsets_and_copies_into_its_graphs(fake_driver_hip):
    hip = fake_driver_hip
    buffer = hip_alloc(hip, 16)
    ctypes.memset(buffer, 0, 16)
    stream, graph, exec_ = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert hip.lib.hipStreamCreateWithFlags(ctypes.byref(stream), 1) == 0
    assert hip.lib.hipStreamBeginCapture(None, 0) == CAPTURE_UNSUPPORTED
    assert hip.lib.hipStreamBeginCapture(stream, 0) == 0
    assert hip.lib.hipMemsetAsync(buffer, 5, 8, stream) == 0
    assert hip.lib.hipMemcpyDtoDAsync(buffer + 8, buffer, 8, stream) == 0
    assert hip.lib.hipStreamEndCapture(stream, ctypes.byref(graph)) == 0
    assert read(buffer, 16) == bytes(16)
    assert hip.lib.hipGraphInstantiate(ctypes.byref(exec_), graph, None, None, 0) == 0
    assert hip.lib.hipGraphLaunch(exec_, stream) == 0
    assert read(buffer, 16) == b"\x05" * 16
    assert [r.call for r in hip.records() if r.call.startswith(b"graph")] == [b"graph memset node",
                                                                              b"graph memcpy node"]
    assert hip.lib.hipGraphExecDestroy(exec_) == 0 and hip.lib.hipGraphDestroy(graph) == 0
    assert hip.lib.hipStreamDestroy(stream) == 0 and hip.lib.hipFree(buffer) == 0
