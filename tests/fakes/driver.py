"""Reads and steers a loaded fake driver library (fake_driver.c) through ctypes."""
from __future__ import annotations

import ctypes
import gc


class FakeRecord(ctypes.Structure):
    _fields_ = [("call", ctypes.c_char * 40), ("function", ctypes.c_size_t),
                ("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3),
                ("shared_bytes", ctypes.c_uint64), ("stream", ctypes.c_size_t),
                ("params", ctypes.c_size_t), ("arg_values", ctypes.c_uint64 * 8),
                ("start_event", ctypes.c_size_t), ("stop_event", ctypes.c_size_t),
                ("event", ctypes.c_size_t), ("value", ctypes.c_size_t),
                ("blocked_by", ctypes.c_uint64)]


CONTEXT_CALLS = ("cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "hipSetDevice")
# What a launch does to memory: called with the function handle and the kernelParams array.
KernelBody = ctypes.CFUNCTYPE(None, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))


class FakeDriver:
    """Controls and reads one loaded fake driver library."""

    def __init__(self, path) -> None:
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)  # the same handle the core's dlopen gets
        self.lib.fake_get_record.restype = ctypes.POINTER(FakeRecord)
        self.lib.fake_set_launch_ms.argtypes = [ctypes.c_double]
        self.lib.fake_set_launch_ms_step.argtypes = [ctypes.c_double]
        self.lib.fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        # Devices and timers of earlier tests release their events and streams
        # when collected: collect them now, so their calls are not in this record.
        gc.collect()
        self.lib.fake_reset()

    def records(self, call: str | None = None) -> list[FakeRecord]:
        all_records = [self.lib.fake_get_record(i).contents for i in range(self.lib.fake_record_count())]
        return [r for r in all_records if call is None or r.call.decode() == call]

    def work(self) -> list[FakeRecord]:
        """Every record but the calls that only make a context current.

        A timer makes its context current to free its events when Python
        collects it, which may be during a later test: "nothing was launched"
        is checked on this.
        """
        return [r for r in self.records() if r.call.decode() not in CONTEXT_CALLS]

    def live_allocations(self) -> int:
        """Device allocations the fake holds now (made through it, not the host backend's)."""
        if hasattr(self.lib, "fake_hip_live_allocations"):  # the HIP runtime keeps its own
            return self.lib.fake_hip_live_allocations()
        return self.lib.fake_live_device_allocations()

    def fail(self, call: str, code: int, after: int = 0, sticky: bool = False) -> None:
        self.lib.fake_fail(call.encode(), code, after, int(sticky))

    def read_args(self, n: int) -> None:
        self.lib.fake_set_args_to_read(n)

    def run_kernel(self, body, function: int | None = None) -> None:
        """Makes each launch of `function` (None: every launch) call `body(params)`, `params` the launch's
        kernelParams (host memory stands for device memory, so `body` can do what the kernel would)."""
        def call(launched: int, params) -> None:
            if function is None or launched == function:
                body(params)
        self._body = KernelBody(call)  # kept alive as long as the driver may call it
        self.lib.fake_set_kernel_body(self._body)


def mapped_libraries(name: str) -> list[str]:
    """Paths of the loaded shared objects whose file name starts with `name`."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if f"/{name}" in line})
