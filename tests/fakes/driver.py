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

# Error codes the fake gives for stream capture, as CUDA (and HIP) number them.
CAPTURE_UNSUPPORTED, CAPTURE_INVALIDATED, CAPTURE_IMPLICIT = 900, 901, 906
STREAM_NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING / hipStreamNonBlocking


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig, as cuLaunchKernelEx takes it."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attributes", ctypes.c_void_p), ("attribute_count", ctypes.c_uint)]


# The argument types of the fake's entry points that take more than ints, for calling them through ctypes.
_ARGTYPES = {
    "fake_runtime_launch_kernel": [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p],
    "fake_set_copy_ms": [ctypes.c_double],
    "fake_set_sm_clock_mhz": [ctypes.c_double],
    "fake_throttle_stamps": [ctypes.c_int, ctypes.c_double],
    "fake_set_function_name": [ctypes.c_size_t, ctypes.c_char_p],
    "cuLaunchKernel": [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3,
    "cuLaunchKernelEx": [ctypes.POINTER(LaunchConfig), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p],
    "cuMemsetD8Async": [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p],
    "cuMemcpyDtoDAsync_v2": [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p],
    "cuMemcpyHtoDAsync_v2": [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
    "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
    "cuMemFree_v2": [ctypes.c_uint64],
    "cuCtxPushCurrent_v2": [ctypes.c_void_p],
    "cuEventRecord": [ctypes.c_void_p, ctypes.c_void_p],
    "cuStreamSynchronize": [ctypes.c_void_p],
    "cuStreamCreate": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint],
    "cuStreamDestroy_v2": [ctypes.c_void_p],
    "cuStreamBeginCapture_v2": [ctypes.c_void_p, ctypes.c_int],
    "cuStreamEndCapture": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)],
    "cuGraphInstantiateWithFlags": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_ulonglong],
    "cuGraphLaunch": [ctypes.c_void_p, ctypes.c_void_p],
    "cuGraphExecDestroy": [ctypes.c_void_p],
    "cuGraphDestroy": [ctypes.c_void_p],
    "cuModuleLoadData": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p],
    "cuModuleGetFunction": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p],
    "cuModuleUnload": [ctypes.c_void_p],
    "hipMemsetAsync": [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p],
    "hipMemcpyDtoDAsync": [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p],
    "hipMalloc": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t],
    "hipFree": [ctypes.c_void_p],
    "hipStreamCreateWithFlags": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint],
    "hipStreamDestroy": [ctypes.c_void_p],
    "hipStreamBeginCapture": [ctypes.c_void_p, ctypes.c_int],
    "hipStreamEndCapture": [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)],
    "hipGraphInstantiate": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                            ctypes.c_size_t],
    "hipGraphLaunch": [ctypes.c_void_p, ctypes.c_void_p],
    "hipGraphExecDestroy": [ctypes.c_void_p],
    "hipGraphDestroy": [ctypes.c_void_p],
}


class FakeDriver:
    """Controls and reads one loaded fake driver library."""

    def __init__(self, path) -> None:
        self.path = str(path)
        self.lib = ctypes.CDLL(self.path)  # the same handle the core's dlopen gets
        self.lib.fake_get_record.restype = ctypes.POINTER(FakeRecord)
        self.lib.fake_set_launch_ms.argtypes = [ctypes.c_double]
        self.lib.fake_set_launch_ms_step.argtypes = [ctypes.c_double]
        self.lib.fake_fail.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        for name, argtypes in _ARGTYPES.items():
            if hasattr(self.lib, name):  # the HIP calls are only in the HIP build
                getattr(self.lib, name).argtypes = argtypes
        # Devices and timers of earlier tests release their events and streams
        # when collected: collect them now, so their calls are not in this record.
        gc.collect()
        self.lib.fake_reset()

    def records(self, call: str | None = None) -> list[FakeRecord]:
        all_records = [self.lib.fake_get_record(i).contents for i in range(self.lib.fake_record_count())]
        return [r for r in all_records if call is None or r.call.decode() == call]

    def work(self) -> list[FakeRecord]:
        """Every record but the calls that only make a context current, and the clock probe's
        ("clock probe ..." set-up, "clock stamp" launches: fake_driver.c records them so).

        A timer makes its context current to free its events when Python
        collects it, which may be during a later test: "nothing was launched"
        is checked on this.
        """
        return [r for r in self.records() if r.call.decode() not in CONTEXT_CALLS
                and not r.call.decode().startswith("clock ")]

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

    def runtime_launch(self, function: int, grid_x: int, block_x: int, stream: int = 0) -> int:
        """Launches as cudaLaunchKernel does under CUPTI (fake_runtime_launch_kernel): its result."""
        return self.lib.fake_runtime_launch_kernel(function, grid_x, block_x, stream)

    def copy_ms(self, ms: float) -> None:
        """Each memcpy and memset takes `ms` on the fake clock (default 0.001: 1 µs)."""
        self.lib.fake_set_copy_ms(ms)

    def name_function(self, function: int, name: str) -> None:
        """The kernel name CUPTI reports for the (made-up) handle `function`, until the next reset."""
        self.lib.fake_set_function_name(function, name.encode())


def mapped_libraries(name: str) -> list[str]:
    """Paths of the loaded shared objects whose file name starts with `name`."""
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if f"/{name}" in line})
