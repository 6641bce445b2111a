"""The worker: one GPU, measuring the candidates it is given, one at a time.

`Worker` holds a Device, the modules it has loaded (by code key) and the
arguments it has made (by their specs, so candidates with the same argument
specs reuse them), and turns a `Task` into an `Outcome`, which says which
modules it holds after the task, so the scheduler sends a code object only to
a worker that may lack it. The same class runs in a spawned process per GPU
(`serve`, the local pool) and in a Ray actor (ray_cluster.py). A task is
one launch or a chain (its launches, or every kernel of its module), run
through bench_with as one sample; its bench options, the candidate's
BenchOptions (with racing, the bound), go to bench_with as they are. A
task that arrives while another measures is prepared meanwhile (its code
object loaded, its launches made and checked: prepare_ahead). It
never lets a pyhipbench error escape: bad input is an outcome; a fault is
an outcome that asks for the worker to be replaced, since the device
context may be lost. Hangs and process deaths are the
scheduler's to see (its watchdog, the process sentinel).
"""
from __future__ import annotations

import functools
import queue
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .._compile.pool import die_with_parent, unexpected
from .._device.device import Device
from .._device.memory import DeviceArray
from .._launch.arg_spec import ArgSpec, LaunchArgSpec, materialize, materialize_chain
from .._launch.args import Shared
from .._launch.launch import Launch, module_launches
from .._measure.bench import PreparedBench, prepare_bench
from .._measure.options import BenchOptions
from .._measure.resolved import resolve
from .._results.environment import device_record
from .._sources.chain import MODULE, Launches
from .._sources.code import CompileTarget
from .._tuning.ahead import PreparedAhead
from ..errors import BenchError, CodegenError, Error, IRError, KernelFault, ToolchainError

__all__ = ["Task", "Outcome", "DeviceFacts", "Worker", "serve", "INVALID", "FAULT", "ERROR", "TIMEOUT", "DIED"]

# Why a candidate failed (the store's `reason`).
INVALID = "invalid"  # bad input: the kernel, launch or arguments (or IR) cannot run; retrying cannot help
FAULT = "fault"      # the kernel faulted (KernelFault); the worker is replaced
ERROR = "error"      # another driver or measurement error; the worker is replaced
TIMEOUT = "timeout"  # the watchdog's limit passed; the worker was killed
DIED = "died"        # the worker process (or actor) died: an abort, a segfault, an LLVM abort

# Errors that say the candidate itself is wrong: recorded at once, never retried, worker kept.
_INVALID_ERRORS = (BenchError, IRError, CodegenError, ToolchainError)
ARGUMENT_SETS_KEPT = 4  # argument lists (by spec) a worker keeps for later candidates; older ones are freed
MODULES_KEPT = 64  # code objects a worker keeps loaded for later candidates; the least recently used is unloaded
# A worker process's GIL switch interval, s: as a measurement returns, the measuring thread waits for the GIL
# while the receiving or preparing thread runs Python; Python's 5 ms default would let that wait outlast a
# candidate's measurement.
SWITCH_INTERVAL_S = 2e-4


@dataclass(frozen=True)
class Task:
    """A candidate as a worker runs it: the code object travels only to a worker that may lack it."""
    candidate_id: str
    kernel: str  # the name the module knows it by (a C++ kernel's lowered name); a chain's: its name
    grid: tuple[int, ...] | None  # None: a chain's launches hold theirs
    block: tuple[int, ...] | None  # None: a chain's launches hold theirs
    args: tuple[ArgSpec, ...]
    shared_bytes: int
    bench: BenchOptions
    code_key: str  # what the worker keeps the loaded module by (Candidate.code_key)
    code: bytes | None  # None: the worker holds it (its outcomes said so)
    # A chain: its LaunchSpecs (kernels by the names the module knows them by), or MODULE (every kernel of
    # the module with grid, block, args and shared_bytes above); None: one launch.
    launches: Launches = None


@dataclass(frozen=True)
class Outcome:
    """What a worker made of a task: `result` (Result.to_dict() without the samples) or `reason` and `error`."""
    candidate_id: str
    result: dict[str, Any] | None = None
    reason: str | None = None
    error: str | None = None
    replace_worker: bool = False  # the device context may be unusable: start a fresh worker
    busy_s: float = 0.0           # the measurement's wall time on the GPU, seconds
    modules_held: frozenset[str] = frozenset()  # code keys of the modules loaded after the task


@dataclass(frozen=True)
class DeviceFacts:
    """A worker's device, as the scheduler needs it."""
    backend: str
    index: int
    name: str
    target: CompileTarget
    device_count: int  # devices the backend sees: how many workers the sweep starts by default
    place: str = ""    # where it is beyond this machine's device index (a Ray node and GPU id)
    record: dict[str, Any] = field(default_factory=dict)  # the device as a report records it (environment.py)

    @property
    def label(self) -> str:
        return f"{self.place}{self.backend}:{self.index} {self.name}"


@dataclass
class Worker:
    """One GPU's measurements. `Worker.open(backend, index)` opens the device."""
    device: Device
    modules: OrderedDict = field(default_factory=OrderedDict)  # code key -> Module, least recently used first
    arguments: OrderedDict = field(default_factory=OrderedDict)
    ahead: PreparedAhead[PreparedBench] = field(default_factory=PreparedAhead)  # by candidate id (prepare_ahead)
    timing_launches: bool = False  # the task measuring now times with the events timer (see prepare_ahead)
    # The modules and arguments kept, as a task is prepared (by prepare_ahead's thread, or by run).
    _preparing: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, backend: str | None, index: int) -> "Worker":
        return cls(Device(backend, index))

    def facts(self) -> DeviceFacts:
        backend = self.device.backend
        return DeviceFacts(backend.name, self.device.properties.index, self.device.name,
                           CompileTarget(self.device.arch, backend.compile_driver_version(),
                                         backend.triton_target(self.device.arch)), backend.device_count,
                           record=device_record(self.device))

    def prepare_ahead(self, task: Task, preparing: ThreadPoolExecutor) -> None:
        """Starts preparing `task` on `preparing`'s thread (its code object loaded, its kernel looked up, its
        launches made and checked: what run does before measuring), so that happens while the GPU measures
        the task before it (the measurement releases the GIL). Host work only, which the kernel timers
        (cupti, rocprofiler: each kernel's GPU time), batched and graph samples do not see; not while the
        events timer measures, whose samples span the host's launch calls. What fails there is the task's
        outcome, as it would be in run."""
        if self.timing_launches:
            return
        self.ahead.start(task.candidate_id, preparing, functools.partial(self._prepared, task))

    def _prepared(self, task: Task) -> PreparedBench:
        with self._preparing:
            return prepare_bench(self._launches(task), task.bench)

    def _module(self, task: Task):
        if task.code_key in self.modules:
            self.modules.move_to_end(task.code_key)
            return self.modules[task.code_key]
        if task.code is None:
            raise BenchError(f"the code object {task.code_key[:12]} was never sent to this worker")
        while len(self.modules) >= MODULES_KEPT:
            self.modules.popitem(last=False)[1].unload()
        module = self.device.load_module(task.code)
        self.modules[task.code_key] = module
        return module

    def _launches(self, task: Task) -> list[Launch]:
        """The task's launches: one, a chain's (arguments shared where its references say), or every kernel
        of the module on one argument list."""
        module = self._module(task)
        if task.launches is None:
            return [Launch(module.kernel(task.kernel), task.grid, task.block, self._arguments(task.args),
                           task.shared_bytes)]
        if task.launches == MODULE:
            return module_launches(module, task.grid, task.block, self._arguments(task.args),
                                   shared_bytes=task.shared_bytes)
        arguments = self._chain_arguments(tuple(launch.args for launch in task.launches))
        return [Launch(module.kernel(launch.kernel), launch.grid, launch.block, args, launch.shared_bytes)
                for launch, args in zip(task.launches, arguments)]

    def _cached(self, key: tuple, make) -> Any:
        """The arguments made for `key` (by `make()`: (what the task takes, every argument made)), kept for
        later tasks with the same specs; the least recently used are freed (the task measuring and the one
        prepared ahead of it hold the two most recently used entries)."""
        if key in self.arguments:
            self.arguments.move_to_end(key)
            return self.arguments[key][0]
        while len(self.arguments) >= ARGUMENT_SETS_KEPT:
            for argument in self.arguments.popitem(last=False)[1][1]:
                array = argument.array if isinstance(argument, Shared) else argument
                if isinstance(array, DeviceArray):
                    array.free()
        self.arguments[key] = make()
        return self.arguments[key][0]

    def _arguments(self, specs: tuple[ArgSpec, ...]) -> list:
        def make() -> tuple[list, list]:
            made = [materialize(spec, self.device) for spec in specs]
            return made, made
        return self._cached(specs, make)

    def _chain_arguments(self, launch_args: tuple[tuple[LaunchArgSpec, ...], ...]) -> list[list]:
        def make() -> tuple[list[list], list]:
            made = materialize_chain(launch_args, self.device)
            return made, list({id(a): a for args in made for a in args}.values())  # a shared array once
        return self._cached(("chain", launch_args), make)

    def run(self, task: Task) -> Outcome:
        """Measures `task`'s candidate; every pyhipbench error (and any other exception) becomes an outcome,
        which says which code objects the worker holds afterwards (not one that failed to load)."""
        started = time.perf_counter()

        def failed(reason: str, error: str, replace_worker: bool = True) -> Outcome:
            return Outcome(task.candidate_id, reason=reason, error=error, replace_worker=replace_worker,
                           busy_s=time.perf_counter() - started, modules_held=frozenset(self.modules))

        self.timing_launches = not resolve(task.bench, self.device).host_work_hidden
        try:
            result = self.ahead.take(task.candidate_id, functools.partial(self._prepared, task)).run()
        except _INVALID_ERRORS as e:
            return failed(INVALID, f"{type(e).__name__}: {e}", replace_worker=False)
        except KernelFault as e:
            usable = "the context is still usable" if e.context_usable else "the context is lost"
            return failed(FAULT, f"KernelFault: {e} ({usable})")
        except Error as e:
            return failed(ERROR, f"{type(e).__name__}: {e}")
        except Exception as e:  # a bug, or a library's own exception: say where, and start afresh
            return failed(ERROR, unexpected(e))
        record = result.to_dict()
        del record["times_us"]  # the statistics stay; thousands of samples per candidate would bloat the store
        return Outcome(task.candidate_id, result=record, busy_s=result.wall_s, modules_held=frozenset(self.modules))


def serve(connection, backend: str | None, index: int) -> None:
    """A worker process's main (multiprocessing, spawn): open device `index`, send ("ready", DeviceFacts)
    or ("error", message), then answer each Task with an Outcome until the connection closes or an
    outcome asks for a fresh worker."""
    die_with_parent()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        worker = Worker.open(backend, index)
        connection.send(("ready", worker.facts()))
    except Error as e:
        connection.send(("error", f"{type(e).__name__}: {e}"))
        return
    # Tasks are taken as they arrive, by a thread of their own, which starts preparing each one at once on
    # another (prepare_ahead), so a task sent ahead is loaded and checked while the GPU measures the one
    # before it.
    tasks: queue.Queue[Task | None] = queue.Queue()

    def receive() -> None:
        while True:
            try:
                task = connection.recv()
            except (EOFError, OSError):  # the parent is gone, or closed the connection: no more tasks
                tasks.put(None)
                return
            try:
                worker.prepare_ahead(task, preparing)
            except RuntimeError:  # the worker is ending (it asked to be replaced): this task is the parent's again
                return
            tasks.put(task)

    with ThreadPoolExecutor(1, thread_name_prefix="pyhipbench prepare-ahead") as preparing:
        threading.Thread(target=receive, name="pyhipbench tasks", daemon=True).start()
        while True:
            task = tasks.get()
            if task is None:
                return
            outcome = worker.run(task)
            connection.send(("outcome", outcome))
            if outcome.replace_worker:
                sys.stdout.flush()
                return
