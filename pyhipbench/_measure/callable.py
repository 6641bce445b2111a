"""bench_callable(): timing whatever a Python callable launches on the GPU.

1. Check the options on the CPU (as bench() does; a callable's buffers are its
   own, so there is no rotation: warm or clean-cold).
2. Call it once, untimed (its first call may compile), and note the wall time.
3. Where it can be captured (`graph`), capture one call into a graph: through
   torch.cuda.graph when torch is imported (its allocator keeps the graph's
   memory), else by stream capture of `stream`; each sample then replays the
   graph from the core's loop. If capture fails, the callable is called, and
   the result says why (`call_note`).
4. The core's `measure` takes the samples, a call (or replay) each, with the
   clean step (clean-cold) before each on the callable's stream: the same
   warm-up, adaptive stopping and racing as a kernel's.

What a sample is, by timer:
    cupti   the sum of the kernels the call launched, each attributed to the
            call by CUPTI's correlation of the API call that launched it (from
            this thread, by any library: driver or runtime API, Triton, torch,
            cuBLAS), never by time window; the span (first kernel start to
            last end) and each kernel's, memcpy's and memset's median beside
    events  the event pair around the call on `stream`: everything on that
            stream from the call's first work to its last, gaps included;
            work on other streams is not seen (AMD: the only timer for calls)
"""
from __future__ import annotations

import logging
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _core
from .._device.device import Device
from .._values import show
from ..errors import BenchError, Error, MeasurementError
from .bench import _device_facts
from .cache import clean_step
from .energy import energy_counter, measure_energy, sample_s
from .options import BenchOptions, fixed_count, takes_options
from .resolved import resolve
from .result import Clock, KernelTime, Result
from .rotation import Rotation
from .timers import CALL_TIMERS, TIMERS, core_timer

log = logging.getLogger(__name__)
GRAPH_MODES = ("auto", True, False)
_devices: dict[int, Device] = {}  # the Device of each index, made once: its timers and clean step are reused


@takes_options(leave_out=("rotate",))
def bench_callable(fn: Callable[[], object], *, graph: bool | str = "auto", stream: int | None = None,
                   device: Device | None = None, name: str | None = None, **options: Any) -> Result:
    """Times what `fn()` launches on the GPU (µs per call) until its median is known to ±`precision`.

    `options`: bench()'s (`BenchOptions`), rotate aside (a callable's buffers are its own): `timer`
    ("auto": cupti where it works, else events), `cache` ("auto": clean-cold; or warm), `precision`,
    `max_time_s` (s), `iterations`, `warmup`, `slower_than_us` (µs), `throttle_threshold`, `energy` and
    `hold_s` (s). `graph`: "auto" replays a captured graph where capture works and calls `fn` otherwise;
    True requires the graph; False always calls. `stream`: the stream handle `fn` issues its work on
    (None: torch's current stream when torch is imported, else the default stream); the clean step and
    the events timer's events go there. `device`: where it runs (None: torch's current device, else the
    first GPU). `name`: for the result (None: `fn`'s name). What `fn` raises propagates as it is.
    """
    check_call(fn, graph, options.get("timer", "auto"))  # before the options, whose message on a timer is not
    checked = BenchOptions.from_keywords("bench_callable", options, leave_out=("rotate",))  # a call's
    return bench_callable_with(fn, checked, graph=graph, stream=stream, device=device, name=name)


def bench_callable_with(fn: Callable[[], object], options: BenchOptions, *, graph: bool | str = "auto",
                        stream: int | None = None, device: Device | None = None, name: str | None = None) -> Result:
    """bench_callable() with its measurement options already checked (tune(), autotune's hooked configs)."""
    check_call(fn, graph, options.timer)
    if options.cache_state == "dirty-cold":
        raise BenchError("cache='dirty-cold': a callable's buffers are its own, so pyhipbench cannot rotate "
                         "them; expected 'clean-cold' or 'warm'")
    device = callable_device(device)
    label = name if name is not None else getattr(fn, "__qualname__", None) or type(fn).__name__
    if not isinstance(label, str):
        raise BenchError(f"name={show(label)}: expected a string")
    stream = _stream(stream)
    resolved = resolve(options, device, calls=True)
    timer = resolved.timer
    rule = options.stop_rule()
    counter = energy_counter(device) if options.energy else None  # refused before anything runs

    started = time.perf_counter()
    fn()  # untimed: it may compile
    device.synchronize()
    first_call_s = time.perf_counter() - started
    plan, note, keep = _call_plan(fn, device, stream, label, graph)
    if resolved.clean_step:
        clean_step(device).attach(plan)
    timing = core_timer(device, timer)
    taken = _core.measure(timing, plan, rule, options.warmup)
    times_us = taken.times_us
    if timer == "events" and not np.any(times_us > 0):  # the cupti timer refuses the same call in the core
        raise MeasurementError(f"every call of '{label}' read 0.000 µs between its events: it issued no GPU "
                               "work on the stream it was timed on; expected a callable that launches GPU "
                               "kernels there (the stream argument, else the default stream)")
    energy = None if counter is None else measure_energy(
        counter, lambda n: _core.measure(timing, plan, fixed_count(n, 0), 0), sample_s(taken))
    del keep  # the captured graph's owner (torch's CUDAGraph), alive until the replays are done
    log.info("%s: %s, timer %s%s, cache %s%s; %d samples, stopped: %s", label, "called" if note else "graph replayed",
             timer, " (auto)" if options.timer == "auto" else "", options.cache_state,
             " (auto)" if options.cache == "auto" else "", len(times_us), taken.stop_reason)
    llc = device.properties.llc_bytes
    return Result(label, _device_facts(device.properties), None,
                  Rotation(1, 0, llc, "a callable's buffers are its own: not rotated", 1), times_us,
                  timer=timer, cache_state=options.cache_state,
                  stop_reason="iterations" if options.iterations is not None else taken.stop_reason,
                  precision=rule.precision, warmup=taken.warmup_samples, launches_per_sample=1,
                  host_us_per_kernel=taken.host_us / len(times_us), wall_s=time.perf_counter() - started,
                  target=None, slower_than_us=options.slower_than_us,
                  ran="call" if note else "graph", kernels=_activity_times(taken.activities, len(times_us)),
                  span_us=taken.span_us if len(taken.span_us) else None, call_note=note or None,
                  timer_note=resolved.timer_note,
                  first_call_s=first_call_s,
                  clock=Clock.of(taken), throttled_samples=taken.throttled_samples, energy=energy)


def check_call(fn: object, graph: object, timer: object) -> None:
    """BenchError for what no callable can be timed with: not a callable, a graph mode or a timer (by
    name) that does not time calls."""
    if not callable(fn):
        raise BenchError(f"fn={show(fn)}: expected a callable taking no arguments")
    if graph not in GRAPH_MODES or isinstance(graph, int) and not isinstance(graph, bool):
        raise BenchError(f"graph={show(graph)}: expected 'auto', True or False")
    if timer in TIMERS and timer not in CALL_TIMERS:
        raise BenchError(f"timer={timer!r}: a callable is timed call by call; expected "
                         f"{' or '.join(CALL_TIMERS)} or 'auto'")


def callable_device(device: Device | None) -> Device:
    """`device`, checked; None: torch's current device where torch is imported, else the first GPU (one
    Device per index, made once)."""
    if device is not None:
        if not isinstance(device, Device):
            raise BenchError(f"device={show(device)}: expected a pyhipbench.Device or None")
        return device
    torch = sys.modules.get("torch")
    index = torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else 0
    if index not in _devices:
        _devices[index] = Device(None, index)  # the first backend that works: torch's, on a machine with one
    return _devices[index]


def _stream(stream: int | None) -> int:
    if stream is None:
        torch = sys.modules.get("torch")
        return torch.cuda.current_stream().cuda_stream if torch is not None and torch.cuda.is_available() else 0
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise BenchError(f"stream={show(stream)}: expected a stream handle (an int >= 0) or None")
    return stream


def _call_plan(fn: Callable[[], object], device: Device, stream: int, label: str,
               graph: bool | str) -> tuple[_core.CallPlan, str, Any]:
    """(the plan, why it calls `fn` rather than replaying a graph ('' when it replays), the graph's owner)."""
    if graph is False:
        return _core.CallPlan(label, fn, stream), "called: graph=False", None
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available():
            owner = torch.cuda.CUDAGraph(keep_graph=True)
            with torch.cuda.graph(owner):
                fn()
            plan = _core.make_graph_call(device.driver, device.backend.context, owner.raw_cuda_graph(), stream,
                                         label)
            return plan, "", owner
        if stream == 0:
            raise BenchError("the callable's stream is the legacy default stream, which cannot be captured "
                             "(pass stream=, the stream it issues its work on, or import torch)")
        return _core.capture_call(device.driver, device.backend.context, stream, fn, label), "", None
    except (Error, RuntimeError, TypeError) as e:  # torch raises RuntimeError for what a capture refuses
        if graph is True:
            raise BenchError(f"graph=True, but {label!r} could not be captured: {e}") from e
        device.synchronize()
        return _core.CallPlan(label, fn, stream), f"called: capture failed ({_first_line(e)})", None


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _activity_times(activities: list[_core.Activity], samples: int) -> tuple[KernelTime, ...]:
    """Each kernel, memcpy and memset of a call, with its median (µs), from the calls that issued the
    most common sequence of them (a call that, say, compiled, issues others)."""
    if not activities:
        return ()
    by_sample: list[list[_core.Activity]] = [[] for _ in range(samples)]
    for a in activities:
        by_sample[a.sample].append(a)
    signatures = [tuple((a.kind, a.name, a.bytes) for a in s) for s in by_sample]
    common = Counter(signatures).most_common(1)[0][0]
    durations = np.array([[a.duration_us for a in s] for s, sig in zip(by_sample, signatures) if sig == common])
    return tuple(KernelTime(name, kind, float(np.median(durations[:, k])), bytes=size)
                 for k, (kind, name, size) in enumerate(common))
