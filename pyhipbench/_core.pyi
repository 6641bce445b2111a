"""pyhipbench's C++ core (csrc/bindings/): launch plans, driver libraries and the timers that run them.

Handles (contexts, functions, streams) and device addresses are plain ints. Times are µs, sizes bytes.
Bad input to the core raises pyhipbench.errors.BenchError (a ValueError); a failed driver call DriverError.
"""
from collections.abc import Callable, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

# ---- errors -----------------------------------------------------------------

class Error(Exception):
    """The root of every error a user can cause; pyhipbench.errors derives the Python layer's from it."""

class DriverError(Error, RuntimeError):
    """A driver call failed: "<call> failed: <name> (<code>): <message>"."""

    call: str            # the driver call, e.g. "cuLaunchKernel"
    code: int            # the driver's error code
    driver_message: str  # the driver's error string

class KernelFault(DriverError):
    """A kernel failed while running (e.g. an illegal address)."""

    context_usable: bool  # False after a sticky error: the process must restart to use the GPU

class LibraryError(Error, OSError):
    """A driver library (or libcupti) could not be loaded or lacks a symbol."""

class MeasurementError(Error, RuntimeError):
    """The launches ran but the timer could not time each (e.g. CUPTI dropped records)."""

def driver_error(call: str, code: int, name: str, message: str) -> DriverError:
    """The DriverError (not raised) for driver call `call` that returned `code`, the driver's `name` and
    `message` for it: what the Python backends raise, worded as the core words its own."""

def request_interrupt() -> None:
    """Stops the measurement in progress on any thread (it raises KeyboardInterrupt naming what it measured)
    within 50 ms, or the next one to start. Ctrl-C needs no call: the interpreter's signal handlers run
    from inside a measurement."""

# ---- drivers and device memory ------------------------------------------------

class Driver:
    """A driver library loaded by the core (dlopen); made by load_driver."""

    @property
    def backend(self) -> str:
        """'cuda' or 'hip'."""
    @property
    def library_path(self) -> str:
        """The library loaded."""

def load_driver(backend: str, library_path: str = "") -> Driver:
    """Loads the driver library of `backend` ('cuda' or 'hip'); `library_path` '' means
    $PYHIPBENCH_CUDA_LIBRARY / $PYHIPBENCH_HIP_LIBRARY, else libcuda.so.1 / libamdhip64.so."""

class RotatedBuffers:
    """The R - 1 rotated copies of device buffers, in one allocation, each buffer 256-byte aligned in its
    set (pyhipbench/rotated_buffers.hpp); freed by free() or when collected."""

    def __init__(self, driver: Driver, context: int, buffers: Sequence[tuple[int, int]], sets: int) -> None:
        """Copies each (device address, bytes) of `buffers` into sets 1 .. `sets` - 1, device to device in
        `context` (CUDA: a CUcontext handle; HIP: a device ordinal); returns when they are complete."""
    @property
    def sets(self) -> int:
        """Argument sets: R, or 1 once freed."""
    @property
    def buffers(self) -> int:
        """Buffers per set."""
    @property
    def set_stride_bytes(self) -> int:
        """Bytes from one copy set to the next (each buffer's size rounded up to 256 bytes, summed)."""
    def address(self, set: int, buffer: int) -> int:
        """Buffer `buffer`'s device address in set `set` (set 0: the original); IndexError past the end."""
    def free(self) -> None:
        """Frees the copies now; set 0, the originals, remains. Never raises; a second call frees nothing."""

# ---- launches -----------------------------------------------------------------

class LaunchLimits:
    """What a backend's launch call can express beyond the device's limits (pyhipbench/launch_plan.hpp)."""

    @property
    def max_global_threads(self) -> int:
        """The most threads per axis (grid x block) the launch call takes; 2**64 - 1 for no limit."""
    @property
    def limited_by(self) -> str:
        """Why, as check's message says; '' for no limit."""
    def check(self, grid: Sequence[int], block: Sequence[int]) -> None:
        """Raises BenchError naming the axis if grid x block (3 blocks, 3 threads per block) exceeds the limits."""

def launch_limits(backend: str) -> LaunchLimits:
    """The launch limits of backend 'cuda' or 'hip' (the timers check every plan against them)."""

class LaunchPlan:
    """What a sample launches: one kernel, or a chain of kernels in order, each with R argument sets packed
    before timing (pyhipbench/launch_plan.hpp)."""

    def __init__(self, function: int, kernel_name: str, grid: Sequence[int], block: Sequence[int],
                 shared_bytes: int, stream: int, arg_sets: Sequence[bytes], arg_offsets: Sequence[int]) -> None:
        """`function`: a CUfunction / hipFunction_t; `grid`: 3 block counts; `block`: 3 thread counts;
        `shared_bytes`: dynamic shared memory, bytes; `stream`: a stream handle (0: the default stream);
        `arg_sets`: each set's packed argument bytes; `arg_offsets`: each argument's byte offset in a set."""
    @staticmethod
    def chain(kernels: Sequence[tuple[int, str, Sequence[int], Sequence[int], int, int, Sequence[bytes],
                                      Sequence[int]]]) -> LaunchPlan:
        """A chain: each of `kernels` a tuple (function, kernel_name, grid, block, shared_bytes, stream, arg_sets,
        arg_offsets), all with the same number of sets and the same stream."""
    @property
    def sets(self) -> int:
        """R, the argument sets."""
    @property
    def kernels(self) -> int:
        """Kernels per sample."""
    @property
    def name(self) -> str:
        """The kernel's name; a chain's names joined by ' -> '."""
    @property
    def kernel_names(self) -> list[str]: ...
    @property
    def id(self) -> int:
        """Unique to this plan in the process (never reused)."""
    def set_clean_step(self, function: int, kernel_name: str, grid: Sequence[int], block: Sequence[int],
                       args: bytes, arg_offsets: Sequence[int]) -> None:
        """An untimed launch before each sample, on the plan's stream (the clean-cold clean step)."""
    @property
    def has_clean_step(self) -> bool: ...
    def add_reset(self, destinations: Sequence[int], source: int, bytes: int) -> None:
        """An untimed step before each sample: `bytes` bytes at destinations[set] set to zero (source 0) or
        copied from device address `source`."""
    @property
    def resets(self) -> int:
        """Reset steps before each sample."""
    def arg_pointers(self, set: int, kernel: int = 0) -> list[int]:
        """The kernelParams addresses of one set (for tests of the packing); IndexError past the end."""
    def params_address(self, set: int, kernel: int = 0) -> int:
        """Where set `set`'s kernelParams array lives: what the driver is handed."""

class CallPlan:
    """A callable to time: the GPU work of one call is one sample (pyhipbench/call_plan.hpp)."""

    def __init__(self, name: str, call: Callable[[], object], stream: int) -> None:
        """`call` runs with the GIL taken back, once per sample; `stream`: where the clean step and the
        events timer's event pair go (0: the default stream)."""
    @property
    def name(self) -> str: ...
    @property
    def stream(self) -> int: ...
    def set_clean_step(self, function: int, kernel_name: str, grid: Sequence[int], block: Sequence[int],
                       args: bytes, arg_offsets: Sequence[int]) -> None:
        """An untimed launch before each call, on the call's stream (the clean step)."""
    @property
    def has_clean_step(self) -> bool: ...

def make_graph_call(driver: Driver, context: int, graph: int, stream: int, name: str) -> CallPlan:
    """A CallPlan replaying captured graph `graph` (a CUgraph / hipGraph_t handle) on `stream`."""

def capture_call(driver: Driver, context: int, stream: int, call: Callable[[], object], name: str) -> CallPlan:
    """Captures what `call` issues on `stream` into a graph and returns a CallPlan replaying it."""

class Activity:
    """One kernel, memcpy or memset a call issued, as the cupti timer saw it."""

    @property
    def sample(self) -> int: ...
    @property
    def kind(self) -> str:
        """'kernel', 'memcpy' or 'memset'."""
    @property
    def name(self) -> str: ...
    @property
    def start_ns(self) -> int:
        """On the GPU's clock."""
    @property
    def end_ns(self) -> int: ...
    @property
    def bytes(self) -> int: ...
    @property
    def duration_us(self) -> float: ...

# ---- timers -------------------------------------------------------------------

class Timer:
    """A timer of the core, or one written in Python: subclass and define run(plan, samples, first_set)."""

    def __init__(self, name: str) -> None: ...
    @property
    def name(self) -> str: ...
    @overload
    def run(self, plan: LaunchPlan, samples: int, first_set: int = 0) -> tuple[npt.NDArray[np.float64], int, float]:
        """Takes `samples` samples, chain k on argument set (first_set + k) mod plan.sets; returns (µs per
        sample as a float64 array, launches per sample, host µs spent issuing them all)."""
    @overload
    def run(self, call: CallPlan, samples: int) -> tuple[npt.NDArray[np.float64], int, float]:
        """Takes `samples` calls, each a sample; as above."""

def make_timer(name: str, driver: Driver, context: int, *, launches_per_sample: int = 0, spin_function: int = 0,
               spin_timeout_ms: float = 1000.0) -> Timer:
    """A timer `name` ('events', 'graph', 'batched'; CUDA also 'cupti', HIP also 'rocprofiler') on `driver`,
    running in `context`
    (CUDA: a CUcontext handle; HIP: a device ordinal). `launches_per_sample`: kernel nodes per graph, launches
    per batch (0: the default, 100). `spin_function` (batched, HIP only): the `spin` kernel's handle.
    `spin_timeout_ms` (batched): how long the spin kernel waits for a batch to be queued, ms."""

# ---- statistics and stopping --------------------------------------------------

class Summary:
    """Statistics of one sample, all in µs except the counts, `confidence` and rel_ci."""

    @property
    def count(self) -> int: ...
    @property
    def median(self) -> float: ...
    @property
    def ci_low(self) -> float:
        """The median's confidence interval, µs."""
    @property
    def ci_high(self) -> float: ...
    @property
    def confidence(self) -> float:
        """Of that interval, in (0, 1)."""
    @property
    def mean(self) -> float: ...
    @property
    def stdev(self) -> float:
        """Sample standard deviation, µs (0 for one sample)."""
    @property
    def min(self) -> float: ...
    @property
    def max(self) -> float: ...
    @property
    def p10(self) -> float: ...
    @property
    def p90(self) -> float: ...
    @property
    def outliers(self) -> int:
        """Samples beyond Tukey's fences (1.5 IQR outside the quartiles)."""
    @property
    def rel_ci(self) -> float:
        """Half-width of the median's confidence interval over the median (0.01 = ±1 %)."""

def summarize(times_us: npt.ArrayLike, confidence: float = 0.95) -> Summary:
    """All statistics of `times_us` (µs, any order)."""

def median_ci(sorted_times_us: npt.ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """The median's distribution-free confidence interval from ascending samples, µs."""

def attach_rocprofiler(library: str = "") -> str:
    """Loads rocprofiler-sdk ($PYHIPBENCH_ROCPROFILER_LIBRARY, else librocprofiler-sdk.so, $ROCM_PATH/lib,
    /opt/rocm/lib) and configures its kernel-dispatch trace, once per process, before HIP initialises; why the
    rocprofiler timer cannot trace, or '' when it can."""

DEFAULT_THRESHOLD: float  # 0.02: the smallest relative difference judge() and racing count

def judge(difference: float, low: float, high: float, threshold: float = ...) -> str:
    """How B compares with A ('faster', 'slower', 'same' or "can't tell") from the relative difference of their
    medians B / A - 1, its 95 % confidence interval [low, high], and the smallest difference that matters,
    `threshold` (a fraction; DEFAULT_THRESHOLD when left out)."""

class StopRule:
    """Targets and caps of one measurement (pyhipbench/stopping.hpp)."""

    def __init__(self, *, precision: float = ..., min_samples: int = ..., max_samples: int = ...,
                 max_time_s: float = ..., settle: float = ..., max_warmup_samples: int = ...,
                 warmup_chunk: int = ..., first_chunk: int = ..., tick_us: float = ...,
                 slower_than_us: float = ..., race_threshold: float = ...,
                 throttle_threshold: float = ..., hold_s: float = ...) -> None:
        """Each field left out takes the core's default (stopping.hpp; `StopRule()` shows them). Raises
        BenchError naming the first field out of range."""
    @property
    def precision(self) -> float:
        """Relative half-width of the median's 95 % CI to reach; 0: no target."""
    @property
    def min_samples(self) -> int:
        """Timed samples before a 'precision' or 'slower' stop, at least."""
    @property
    def max_samples(self) -> int:
        """Timed samples at most: then the stop is 'max-samples'."""
    @property
    def max_time_s(self) -> float:
        """Wall time of the measurement, warm-up included (the hold not), s."""
    @property
    def settle(self) -> float:
        """Warm-up ends when consecutive chunk medians agree within this fraction (or one tick_us)."""
    @property
    def max_warmup_samples(self) -> int:
        """Untimed samples (the hold's included) after which a warm-up that waits for the medians to settle ends,
        settled or not."""
    @property
    def warmup_chunk(self) -> int:
        """Samples per warm-up chunk."""
    @property
    def first_chunk(self) -> int:
        """Samples of the first timed chunk."""
    @property
    def tick_us(self) -> float:
        """A CI no wider than one tick of the timer's clock counts as precise, µs."""
    @property
    def slower_than_us(self) -> float:
        """Racing: stop once the median is surely slower than this (judge, at race_threshold), µs; 0: never."""
    @property
    def race_threshold(self) -> float:
        """Racing: "slower" means by more than this fraction."""
    @property
    def throttle_threshold(self) -> float:
        """A run below this fraction of the rated SM clock is taken again; 0: never."""
    @property
    def hold_s(self) -> float:
        """Untimed runs back to back for at least this long before the warm-up, s; 0: none."""
    def stop_reason(self, summary: Summary, elapsed_s: float) -> str | None:
        """Why to stop after a chunk ('precision', 'slower', 'max-samples', 'max-time'), or None to go on."""
    def next_chunk(self, summary: Summary) -> int:
        """Samples to ask for next, given the summary of the timed samples so far."""
    def settled(self, previous_median_us: float, median_us: float) -> bool:
        """Whether two consecutive warm-up chunk medians (µs) agree within `settle`, or one `tick_us`."""

class Measurement:
    """What measure() took: the timed samples and how it stopped."""

    @property
    def times_us(self) -> npt.NDArray[np.float64]:
        """The timed samples, µs per sample."""
    @property
    def kernel_times_us(self) -> npt.NDArray[np.float64]:
        """A chain's kernels' own times (cupti), samples x kernels, µs; no columns otherwise."""
    @property
    def span_us(self) -> npt.NDArray[np.float64]:
        """Each sample's first kernel start to last kernel end (cupti; chains, calls), µs; empty otherwise."""
    @property
    def activities(self) -> list[Activity]:
        """A call's kernels, memcpys and memsets (cupti)."""
    @property
    def stop_reason(self) -> str:
        """'precision', 'slower', 'max-samples' or 'max-time'."""
    @property
    def warmup_samples(self) -> int:
        """Untimed samples run first."""
    @property
    def launches_per_sample(self) -> int: ...
    @property
    def host_us(self) -> float:
        """Host µs spent issuing the timed samples' launches."""
    @property
    def precision_reached(self) -> float:
        """The median CI's relative half-width at the stop."""
    @property
    def clock_mhz(self) -> npt.NDArray[np.float64]:
        """The SM clock of each run whose samples were kept, MHz (CUDA's clock probe; empty where not read)."""
    @property
    def clock_samples(self) -> list[int]:
        """Samples kept from each of those runs."""
    @property
    def default_clock_mhz(self) -> float:
        """The device's rated SM clock, MHz (0: unread)."""
    @property
    def throttled_samples(self) -> int:
        """Samples discarded as taken below the throttle threshold."""

@overload
def measure(timer: Timer, plan: LaunchPlan, rule: StopRule, warmup: int | None = None) -> Measurement:
    """Times `plan` with `timer` in chunks until `rule` says stop, warming up first (`warmup` untimed samples,
    or None: until two chunk medians settle); one timer session throughout."""
@overload
def measure(timer: Timer, call: CallPlan, rule: StopRule, warmup: int | None = None) -> Measurement:
    """The same for a callable's calls (the events and cupti timers)."""

# ---- rotation -----------------------------------------------------------------

MIN_HEADROOM_BYTES: int  # device memory always left free for the driver, bytes
HEADROOM_FRACTION: float  # of the device's memory left free for the driver

def headroom_bytes(total_bytes: int) -> int:
    """Device memory left free for the driver, bytes: HEADROOM_FRACTION of `total_bytes`, at least
    MIN_HEADROOM_BYTES."""

def plan_rotation(set_bytes: int, llc_bytes: int, free_bytes: int, total_bytes: int, rotate: int | None = None,
                  launches: int | None = None) -> tuple[int, int, str]:
    """(R, R before the free-memory cap, why) for one rotated set of `set_bytes` against a last-level cache of
    `llc_bytes` and `free_bytes` of `total_bytes` device memory; `rotate`: R itself, or None to choose it;
    `launches`: the most launches the run makes (pyhipbench/rotation.hpp)."""
