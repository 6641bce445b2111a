"""Reads and steers a loaded fake libcupti (fake_cupti.c) through ctypes."""
from __future__ import annotations

import ctypes
import struct
from typing import Any

DOMAIN_DRIVER_API = 1   # CUPTI_CB_DOMAIN_DRIVER_API
DOMAIN_RUNTIME_API = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
KIND_MEMCPY, KIND_MEMSET, KIND_KERNEL, KIND_CONCURRENT_KERNEL, KIND_OVERHEAD = 1, 2, 3, 10, 17
API_ENTER, API_EXIT = 0, 1
# The callback ids the fake driver traces (fake_driver.c), as CUPTI numbers them.
CBID = {"cuCtxSynchronize": 17, "cuEventRecord": 119, "cuStreamSynchronize": 126, "cuMemsetD8Async": 216,
        "cuMemcpyHtoDAsync_v2": 277, "cuMemcpyDtoDAsync_v2": 281, "cuLaunchKernel": 307, "cuGraphLaunch": 514,
        "cuLaunchKernelEx": 652}
CBID_CUDA_LAUNCH_KERNEL = 211  # runtime domain: cudaLaunchKernel_v7000 (fake_runtime_launch_kernel)
GPU_EPOCH_NS = 1_000_000_000   # the fake GPU clock's reading at fake time 0


class FakeCallback(ctypes.Structure):
    """One callback the fake libcupti made to the subscriber (fake_cupti_callback)."""
    _fields_ = [("domain", ctypes.c_int), ("cbid", ctypes.c_uint32), ("site", ctypes.c_int),
                ("correlation_id", ctypes.c_uint32), ("result", ctypes.c_int), ("first_param", ctypes.c_uint64),
                ("name", ctypes.c_char * 40)]


class FakeCupti:
    """Controls and reads the fake libcupti; loading it attaches it to the fake libcuda beside it."""

    def __init__(self, path) -> None:
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)  # the same handle the core's dlopen gets
        self.lib.fake_cupti_log.restype = ctypes.c_char_p
        self.lib.fake_cupti_set_record_bytes.argtypes = [ctypes.c_size_t]
        self.lib.fake_cupti_set_ticks_per_ns.argtypes = [ctypes.c_double]
        self.lib.fake_cupti_set_copy_record_bytes.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self.lib.fake_cupti_fail.argtypes = [ctypes.c_char_p, ctypes.c_int]
        self.lib.fake_cupti_get_callback.restype = ctypes.POINTER(FakeCallback)
        self.lib.fake_cupti_callback_enabled.argtypes = [ctypes.c_int, ctypes.c_uint32]
        self.lib.fake_cupti_reset()

    def calls(self) -> list[str]:
        """The CUPTI calls made since the reset, in order (a forced flush is 'cuptiActivityFlushAll(forced)')."""
        return self.lib.fake_cupti_log().decode().split()

    def fail(self, call: str, code: int) -> None:
        """The next call named `call` returns `code`."""
        self.lib.fake_cupti_fail(call.encode(), code)

    def hold_default_flushes(self, n: int) -> None:
        """The next `n` default (unforced) flushes hand back nothing, as if a record were still incomplete."""
        self.lib.fake_cupti_hold_default_flushes(n)

    def fake_version(self, api_version: int, record_bytes: int) -> None:
        """Reports `api_version` and writes kernel records of `record_bytes` (CUPTI 12: 208, 13: 216)."""
        self.lib.fake_cupti_set_version(api_version)
        self.lib.fake_cupti_set_record_bytes(record_bytes)

    def copy_record_bytes(self, memcpy_bytes: int, memset_bytes: int) -> None:
        """Writes memcpy and memset records of these sizes (CUPTI 13, the default: 96 and 88)."""
        self.lib.fake_cupti_set_copy_record_bytes(memcpy_bytes, memset_bytes)

    def copy_records_without_time(self, n: int) -> None:
        """The next `n` memcpy or memset records have no timestamps (start = end = 0)."""
        self.lib.fake_cupti_copy_records_without_time(n)

    @property
    def callbacks_fired(self) -> int:
        """How many callbacks the subscriber got since the reset (entries and exits both count)."""
        return self.lib.fake_cupti_callbacks_fired()

    def callbacks(self) -> list[FakeCallback]:
        """The callbacks the subscriber got since the reset, in order (the first 4096)."""
        out = []
        for i in range(self.callbacks_fired):
            logged = self.lib.fake_cupti_get_callback(i)
            if not logged:
                break
            out.append(FakeCallback.from_buffer_copy(logged.contents))
        return out

    def callback_enabled(self, domain: int, cbid: int) -> bool:
        return bool(self.lib.fake_cupti_callback_enabled(domain, cbid))

    @property
    def tracing(self) -> bool:
        """Whether a subscription or any activity kind (kernel, memcpy, memset) is still on."""
        return bool(self.lib.fake_cupti_subscribed() or self.lib.fake_cupti_activity_enabled())

    @property
    def buffers_completed(self) -> int:
        return self.lib.fake_cupti_buffers_completed()


# ---- a CUPTI client played from Python, for tests of the fake's API itself ----

class CallbackData(ctypes.Structure):
    """CUpti_CallbackData, the fields up to correlationId."""
    _fields_ = [("callback_site", ctypes.c_int), ("function_name", ctypes.c_char_p),
                ("function_params", ctypes.c_void_p), ("function_return_value", ctypes.c_void_p),
                ("symbol_name", ctypes.c_char_p), ("context", ctypes.c_void_p), ("context_uid", ctypes.c_uint32),
                ("correlation_data", ctypes.c_void_p), ("correlation_id", ctypes.c_uint32)]


Subscriber = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
BufferRequested = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(ctypes.c_size_t))
BufferCompleted = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                                   ctypes.c_size_t)
_LAUNCHES = {(DOMAIN_DRIVER_API, CBID["cuLaunchKernel"]), (DOMAIN_DRIVER_API, CBID["cuLaunchKernelEx"]),
             (DOMAIN_RUNTIME_API, CBID_CUDA_LAUNCH_KERNEL)}
# The fake libcupti keeps the buffer callbacks registered after a session: they must outlive it.
_KEPT_ALIVE: list[Any] = []


def parse_record(address: int) -> dict[str, Any]:
    """One activity record at `address`, as a dict of the fields the fake writes."""
    kind = struct.unpack_from("<I", ctypes.string_at(address, 4))[0]
    if kind in (KIND_KERNEL, KIND_CONCURRENT_KERNEL):
        raw = ctypes.string_at(address, 112)
        start, end = struct.unpack_from("<QQ", raw, 16)
        name = struct.unpack_from("<Q", raw, 104)[0]
        return {"kind": kind, "start": start, "end": end, "stream_id": struct.unpack_from("<I", raw, 48)[0],
                "grid": struct.unpack_from("<3i", raw, 52), "block": struct.unpack_from("<3i", raw, 64),
                "correlation_id": struct.unpack_from("<I", raw, 92)[0],
                "name": ctypes.string_at(name).decode() if name else None}
    if kind in (KIND_MEMCPY, KIND_MEMSET):
        raw = ctypes.string_at(address, 52)
        fields = {"kind": kind, "bytes": struct.unpack_from("<Q", raw, 8)[0],
                  "start": struct.unpack_from("<Q", raw, 16)[0], "end": struct.unpack_from("<Q", raw, 24)[0],
                  "device_id": struct.unpack_from("<I", raw, 32)[0], "context_id": struct.unpack_from("<I", raw, 36)[0],
                  "stream_id": struct.unpack_from("<I", raw, 40)[0],
                  "correlation_id": struct.unpack_from("<I", raw, 44)[0]}
        if kind == KIND_MEMCPY:
            fields.update(copy_kind=raw[4], src_kind=raw[5], dst_kind=raw[6], flags=raw[7])
        else:
            fields.update(value=struct.unpack_from("<I", raw, 4)[0], flags=struct.unpack_from("<H", raw, 48)[0],
                          memory_kind=struct.unpack_from("<H", raw, 50)[0])
        return fields
    return {"kind": kind}


class CuptiSession:
    """Plays a CUPTI client through ctypes against the fake libcupti.

    Subscribes a Python callback that keeps what each callback was handed
    (`calls`), supplies activity buffers and reads back the records CUPTI
    delivered (`records()`). `close()` turns everything it enabled off.
    """

    def __init__(self, cupti: FakeCupti, buffer_bytes: int = 1 << 16) -> None:
        self.lib = cupti.lib
        self.buffer_bytes = buffer_bytes
        self.calls: list[dict[str, Any]] = []
        self._buffers: dict[int, Any] = {}
        self._delivered: list[tuple[int, int]] = []
        self._kinds: set[int] = set()
        self.lib.cuptiSubscribe.argtypes = [ctypes.POINTER(ctypes.c_void_p), Subscriber, ctypes.c_void_p]
        self.lib.cuptiEnableDomain.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int]
        self.lib.cuptiEnableCallback.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        self.lib.cuptiUnsubscribe.argtypes = [ctypes.c_void_p]
        self.lib.cuptiActivityRegisterCallbacks.argtypes = [BufferRequested, BufferCompleted]
        self.lib.cuptiActivityFlushAll.argtypes = [ctypes.c_uint32]
        self.lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                        ctypes.POINTER(ctypes.c_void_p)]
        self._subscriber_fn = Subscriber(self._on_callback)
        self._requested_fn = BufferRequested(self._on_buffer_requested)
        self._completed_fn = BufferCompleted(self._on_buffer_completed)
        _KEPT_ALIVE.extend([self._subscriber_fn, self._requested_fn, self._completed_fn, self._buffers])
        self.subscriber = ctypes.c_void_p()
        assert self.lib.cuptiActivityRegisterCallbacks(self._requested_fn, self._completed_fn) == 0
        assert self.lib.cuptiSubscribe(ctypes.byref(self.subscriber), self._subscriber_fn, None) == 0

    def _on_callback(self, userdata, domain, cbid, data) -> None:
        d = CallbackData.from_address(data)
        first = ctypes.c_uint64.from_address(d.function_params).value if d.function_params else None
        # The params live only during the call: a launch's first two words (its CUfunction, or
        # cuLaunchKernelEx's config and CUfunction) are kept; every params struct has at least one.
        words = 2 if (domain, cbid) in _LAUNCHES else 1
        head = struct.unpack(f"<{words}Q", ctypes.string_at(d.function_params, 8 * words)) if first is not None else ()
        self.calls.append({"domain": domain, "cbid": cbid, "site": d.callback_site,
                           "name": d.function_name.decode(), "correlation_id": d.correlation_id,
                           "first_param": first, "params_head": head,
                           "result": ctypes.c_int.from_address(d.function_return_value).value,
                           "symbol": d.symbol_name.decode() if d.symbol_name else None, "context": d.context})

    def _on_buffer_requested(self, buffer, size, max_records) -> None:
        memory = ctypes.create_string_buffer(self.buffer_bytes)
        self._buffers[ctypes.addressof(memory)] = memory
        buffer[0] = ctypes.addressof(memory)
        size[0] = self.buffer_bytes
        max_records[0] = 0

    def _on_buffer_completed(self, context, stream_id, buffer, size, valid_size) -> None:
        self._delivered.append((buffer, valid_size))

    def enable_domain(self, domain: int, on: bool = True) -> int:
        return self.lib.cuptiEnableDomain(int(on), self.subscriber, domain)

    def enable_callback(self, domain: int, cbid: int, on: bool = True) -> int:
        return self.lib.cuptiEnableCallback(int(on), self.subscriber, domain, cbid)

    def enable_activity(self, *kinds: int) -> None:
        for kind in kinds:
            assert self.lib.cuptiActivityEnable(kind) == 0, kind
            self._kinds.add(kind)

    def records(self) -> list[dict[str, Any]]:
        """Flushes (forced); the records delivered since the last call, read with cuptiActivityGetNextRecord."""
        assert self.lib.cuptiActivityFlushAll(1) == 0
        out = []
        for buffer, valid in self._delivered:
            record = ctypes.c_void_p()
            while self.lib.cuptiActivityGetNextRecord(buffer, valid, ctypes.byref(record)) == 0:
                out.append(parse_record(record.value))
        self._delivered.clear()
        return out

    def close(self) -> None:
        for kind in self._kinds:
            self.lib.cuptiActivityDisable(kind)
        self._kinds.clear()
        self.lib.cuptiUnsubscribe(self.subscriber)
