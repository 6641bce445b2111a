"""triton.autotune's decorator with every config timed by pyhipbench.

A tuning goes in three steps. Every config (pruned first, in Python) is
specialised for the call's arguments and its compile started ahead: Triton's
cache answers configs compiled before, the compile pool compiles the rest in
parallel, and a thread makes what the device's first measurement needs once
(the timer's probe, the clean step; from the decoration on, for a device
given there). Once all have compiled, they are
measured back to back by the tuning engine (pyhipbench/_tuning/engine.py),
so the GPU is not left idle (its clock dropping) between compiles: loaded
ahead of the one measuring, raced, the configs tied with the fastest measured
again under sustained load, the fastest there winning. A config that fails
anywhere is recorded with its reason.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._compile.pool import default_workers
from .._device.device import Device
from .._measure.bench import set_up
from .._measure.callable import bench_callable_with
from .._measure.options import BenchOptions
from .._measure.result import Result
from .._progress import Progress
from .._tuning.engine import Policy, compile_trials, run_trials
from .._tuning.ties import TIE_HOLD_S
from .._tuning.trial import Trial
from .._tuning.tune import open_record, record_path
from .._tuning.tuning import CandidateResult
from .._tuning.tuning import Tuning as EngineTuning
from .._values import icache_flush as checked_icache_flush
from .._values import integer, real, show
from ..errors import BenchError, Error
from . import _kernel
from ._ahead import PLAIN_VALUES, Ahead, compile_ahead
from ._bench import BENCH_OPTIONS, LAUNCH_OPTIONS, bench_compiled_with
from ._cache import prepare_triton_early
from ._kernel import (
    Specialized,
    TritonKernel,
    _binder_view,
    _require_triton,
    specialize,
    target_of,
)
from ._tuning import ConfigResult, Tuning
from ._tuning_cache import TuningCache

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

    from .._tuning.record import TuningRecord

__all__ = ["autotune", "Autotuner", "Tuning", "ConfigResult", "TuneOptions"]


HOOKED_NOTE = ("timed through the callable path: Triton's launcher with the hooks around each call, their GPU "
               "work in the time, as triton.autotune times it")


@dataclass(frozen=True)
class TuneOptions:
    """autotune()'s own options, checked once: see autotune()."""
    icache_flush: bool | None = None
    race: bool = True
    tie_hold_s: float | None = TIE_HOLD_S
    prune_configs_by: dict[str, Any] = field(default_factory=dict)
    reset_to_zero: tuple[str, ...] = ()
    restore_value: tuple[str, ...] = ()
    pre_hook: Callable[..., Any] | None = None
    post_hook: Callable[..., Any] | None = None
    cache_results: bool = False
    compile_workers: int = field(default_factory=default_workers)
    compile_timeout_s: float | None = 120.0
    progress: bool | None = None
    record: Path | None = None


@dataclass
class _Call:
    """One tuning's call: the grid and arguments every config is measured with, and each tensor's DeviceArray
    view, adopted once for the whole tuning (by id(tensor))."""
    grid: Any
    args: Sequence[Any]
    kwargs: dict[str, Any]
    views: dict[int, Any] = field(default_factory=dict)


@dataclass
class _Config:
    """A config as the tuning engine measures it (a Contender): specialised, compiling, loaded, measured."""
    tuner: "Autotuner"
    call: _Call
    config: Any
    spec: Specialized | None = None
    ahead: Ahead | None = None
    kernel: TritonKernel | None = None

    def start_compile(self) -> None:
        """Triton's cache looked up, else the compile sent to the compile pool where a worker can import the
        kernel (else it compiles here, in finish_compile)."""
        t = self.tuner.tune_options
        assert self.spec is not None
        [self.ahead] = compile_ahead([self.spec], self.tuner.device.arch, t.compile_workers, t.compile_timeout_s)

    def finish_compile(self) -> str | None:
        """The pool's compile waited for, or the compile made here; where it compiled, when that is here."""
        assert self.spec is not None and self.ahead is not None
        return self.ahead.finish(self.spec, self.tuner.device.arch)

    def prepare(self) -> None:
        """The kernel loaded on the device (Triton's cache read, for a compile ahead). Not for a hooked config,
        which Triton's launcher loads itself."""
        if self.tuner._hooked(self.config):
            return
        assert self.spec is not None and self.ahead is not None
        self.kernel = self.ahead.load(self.spec, self.tuner.device, self.tuner.tune_options.icache_flush)

    def measure(self, options: BenchOptions) -> Result:
        tuner, call = self.tuner, self.call
        if tuner._hooked(self.config):
            return tuner._bench_hooked(self.config, call.grid, call.args, call.kwargs, options)
        assert self.kernel is not None
        return bench_compiled_with(self.kernel, call.grid, options, views=call.views, **tuner._resets(),
                                   **tuner.launch_options)

    def release(self) -> None:
        if self.kernel is not None:
            self.kernel.unload()


class Autotuner:
    """`triton.autotune`'s configs and key, each config timed by pyhipbench.

    Calling `kernel[grid](*args, **kwargs)` tunes once per distinct key (the
    values of the `key` arguments and every argument's dtype, as Triton's
    autotuner) and launches the fastest config through Triton. `tune` tunes
    without launching; `tunings` holds every key's Tuning. With `race`, each
    config after the first stops as soon as its median's CI lies wholly above
    the lowest CI upper bound so far (bench's `slower_than_us`, stop_reason
    "slower"): the winner is measured to the precision, a config surely
    slower only until that is sure. With `tie_hold_s`, the configs tied with
    the fastest are measured again, twice each (fastest first, then in the
    reverse order), each run after running back to back untimed, at the
    clock the GPU's power limit sustains for that config
    (`ConfigResult.sustained`); the fastest of them there wins. The policy is
    the tuning engine's (pyhipbench/_tuning/): this class specialises,
    compiles and launches.
    """

    def __init__(self, fn: "JITFunction", configs: Sequence[Any], key: Sequence[str], device: Device | None,
                 options: BenchOptions, launch_options: dict[str, Any], tune: TuneOptions | None = None) -> None:
        self.fn, self.configs, self.keys = fn, list(configs), list(key)
        self.tune_options = TuneOptions() if tune is None else tune
        self._device = device
        self.options, self.launch_options = options, launch_options
        self.tunings: dict[tuple, Tuning] = {}
        self._setting_up: threading.Thread | None = None

    @property
    def policy(self) -> Policy:
        """The tuning engine's policy for this autotuner's configs."""
        return Policy(self.options, self.tune_options.race, self.tune_options.tie_hold_s)

    @property
    def device(self) -> Device:
        if self._device is None:
            self._device = Device()
        return self._device

    def key_of(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple:
        named = {**dict(zip(self.fn.arg_names, args)), **kwargs}
        named = {k: v for k, v in named.items() if k in self.fn.arg_names}
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def tune(self, grid: int | Sequence[int] | Callable[[dict[str, Any]], Any], *args: Any,
             **kwargs: Any) -> Tuning:
        """The Tuning for these arguments' key: each config compiled (ahead, in parallel) and timed
        (back to back), once per key; with `cache_results`, read back from an earlier process's file when
        one matches. A config that fails to compile, exceeds a limit or faults is recorded with the reason;
        BenchError if every config failed."""
        key = self.key_of(args, kwargs)
        if key in self.tunings:
            return self.tunings[key]
        started = time.perf_counter()
        configs = self.pruned(args, kwargs)
        cache = TuningCache(self.fn, self.device, self.options, configs, key, self.tune_options.tie_hold_s) \
            if self.tune_options.cache_results and not any(self._hooked(c) for c in configs) else None
        tuning = None if cache is None else cache.load(started)
        if tuning is None:
            recording = open_record(self.tune_options.record)  # a bad file refused before anything runs
            try:
                order, compile_wall_s, trials = self._tuned(grid, args, kwargs, configs, started)
                results = [_config_result(trial) for trial in trials]
                if order:  # kept before it is recorded: a database that fails the write loses no tuning
                    tuning = Tuning(key, tuple(results), configs[order[0]], time.perf_counter() - started,
                                    compile_wall_s)
                    self.tunings[key] = tuning
                    if cache is not None:
                        cache.store(tuning)
                if recording is not None:
                    self._record(recording, trials, configs, order, key, time.perf_counter() - started)
            finally:
                if recording is not None:
                    recording.close()
            if not order:
                reasons = "; ".join(f"{r.config}: {r.error}" for r in results)
                raise BenchError(f"autotune of {self.fn.__name__!r} for key {key!r}: no config ran; {reasons}")
        self.tunings[key] = tuning
        return tuning

    def _tuned(self, grid: Any, args: Sequence[Any], kwargs: dict[str, Any], configs: list[Any],
               started: float) -> tuple[list[int], float, list[Trial]]:
        """Every config compiled and measured by the engine: the ranking, the compile wall (s) and the
        trials."""
        progress = Progress(len(configs), show=self.tune_options.progress, unit="config",
                            desc=f"{self.fn.__name__} compiling")
        setting_up = self._set_up_started()
        call = _Call(grid, args, kwargs)
        trials = [Trial(str(config), _Config(self, call, config)) for config in configs]
        try:
            for trial, config in zip(trials, configs):
                self._specialized(trial, config, call)
            compile_trials(trials, progress)
            compile_wall_s = time.perf_counter() - started
            for trial, config in zip(trials, configs):
                if self._hooked(config) and trial.error is None:
                    trial.note = HOOKED_NOTE
            setting_up.join()
            progress.step(f"{self.fn.__name__} measuring")
            order = run_trials(trials, self.policy, self.device, progress)
        finally:
            setting_up.join()
            progress.close()
        if self.tune_options.pre_hook is not None:  # as Triton's autotuner leaves the arguments after tuning
            self.tune_options.pre_hook(self._named(args, kwargs), reset_only=True)
        return order, compile_wall_s, trials

    def _record(self, recording: TuningRecord, trials: list[Trial], configs: list[Any], order: list[int],
                key: tuple, wall_s: float) -> None:
        """The tuning added to its results database (autotune's `record=`), each config tagged by its
        meta-parameters (plain values; a dtype or other object left out) and the tuning's key."""
        recording.write(EngineTuning(tuple(CandidateResult.of(t, c) for t, c in zip(trials, configs)),
                                     tuple(order), wall_s),
                        [{"label": t.label, "key": [str(k) for k in key],
                          **{k: v for k, v in c.all_kwargs().items() if isinstance(v, PLAIN_VALUES)}}
                         for t, c in zip(trials, configs)], self.device)

    def _set_up_started(self) -> threading.Thread:
        """The device's measurement set-up (the timer's probe, the clean step: bench's set_up) on a thread
        of its own, started once: at decoration for a device given there, else by the first tuning, while
        its configs specialise and compile. Each tuning joins it before measuring."""
        if self._setting_up is None:
            self._setting_up = threading.Thread(target=_set_up, args=(self.device, self.options), daemon=True,
                                                name="pyhipbench device set-up")
            self._setting_up.start()
        return self._setting_up

    def pruned(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The configs to time, as Triton's autotuner prunes them, before anything is compiled:
        `early_config_prune(configs, named_args, **kwargs)`, then the `top_k` (a count, or a fraction
        of the configs) that `perf_model(**named_args, **kwargs, **config.all_kwargs())` ranks first."""
        named = dict(zip(self.fn.arg_names, args))
        configs = self.configs
        prune = self.tune_options.prune_configs_by
        if prune.get("early_config_prune") is not None:
            kept = prune["early_config_prune"](configs, named, **kwargs)
            if not isinstance(kept, (list, tuple)) or not kept or \
                    not all(isinstance(c, _kernel._triton.Config) for c in kept):
                raise BenchError(f"early_config_prune returned {show(kept)}: expected a non-empty list of "
                                 "the triton.Config it was given")
            configs = list(kept)
        if prune.get("perf_model") is not None:
            top_k = prune.get("top_k", 10)
            if isinstance(top_k, float) and 0 < top_k <= 1:
                top_k = max(1, int(len(self.configs) * top_k))
            if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
                raise BenchError(f"prune_configs_by top_k={show(top_k)}: expected a count >= 1 or a fraction "
                                 "in (0, 1] of the configs")
            if len(configs) > top_k:
                model = prune["perf_model"]
                estimates = [model(**named, **kwargs, **c.all_kwargs()) for c in configs]
                for config, estimate in zip(configs, estimates):
                    if isinstance(estimate, bool) or not isinstance(estimate, (int, float)) or estimate != estimate:
                        raise BenchError(f"perf_model returned {show(estimate)} for {config}: expected a number "
                                         "(an estimated time), which the configs are ranked by")
                order = sorted(range(len(configs)), key=lambda i: estimates[i])  # ties keep the configs' order
                configs = [configs[i] for i in order[:top_k]]
        return configs

    def _hooked(self, config: Any) -> bool:
        """Whether Python hooks run around this config's launches (its pre_hook, autotune's pre/post_hook)."""
        t = self.tune_options
        return t.pre_hook is not None or t.post_hook is not None or config.pre_hook is not None

    def _specialized(self, trial: Trial, config: Any, call: _Call) -> None:
        clash = sorted(set(config.all_kwargs()) & set(call.kwargs))
        if clash:
            trial.failed(f"the call also passes {', '.join(clash)}, which the config sets (Triton refuses "
                         "this too)")
            return
        contender = trial.contender
        assert isinstance(contender, _Config)
        try:
            contender.spec = specialize(self.fn, list(call.args), target_of(self.device), **call.kwargs,
                                        **config.all_kwargs())
        except Error as e:
            trial.failed(f"{type(e).__name__}: {e}")

    def _resets(self) -> dict[str, tuple[str, ...]]:
        return {"reset_to_zero": self.tune_options.reset_to_zero, "restore_value": self.tune_options.restore_value}

    def _named(self, args: Sequence[Any], kwargs: dict[str, Any], config: Any = None) -> dict[str, Any]:
        """The arguments by name, as Triton's hooks receive them (with the config's meta-parameters)."""
        return {**dict(zip(self.fn.arg_names, args)), **kwargs, **({} if config is None else config.all_kwargs())}

    def _bench_hooked(self, config: Any, grid: Any, args: Sequence[Any], kwargs: dict[str, Any],
                      options: BenchOptions) -> Result:
        """A config whose hooks run Python around each launch: the hooks and Triton's own launch, called
        each sample (bench_callable, never a graph replay: the hooks must run)."""
        t = self.tune_options
        if self.launch_options.get("expect") is not None:
            raise BenchError("expect= checks the outputs of pyhipbench's own launch; a config with hooks is "
                             "launched by Triton: expected no expect, or no hooks")
        named = self._named(args, kwargs, config)
        views = [_binder_view(name, value) for name, value in zip(self.fn.arg_names, args)]
        meta = {**{k: _binder_view(k, v) for k, v in kwargs.items()}, **config.all_kwargs()}
        launcher = self.fn[grid]

        def call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(named)
            if t.pre_hook is not None:
                t.pre_hook(named)
            try:
                launcher(*views, **meta)
            except Exception as e:
                if t.post_hook is not None:
                    t.post_hook(named, exception=e)
                raise
            if t.post_hook is not None:
                t.post_hook(named, exception=None)

        timer = options.timer if options.timer in ("auto", "cupti", "events") else "auto"
        stream = self.launch_options.get("stream")
        try:
            return bench_callable_with(call, options.replace(timer=timer), graph=False,
                                       stream=getattr(stream, "handle", stream), device=self.device,
                                       name=self.fn.__name__)
        except Error:
            raise
        except Exception as e:  # what Triton's launch or a hook raised: this config's failure
            raise BenchError(f"{type(e).__name__}: {' '.join(str(e).split())}") from e

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Tunes for these arguments' key if not yet, then launches the winner through Triton
        (pyhipbench arrays and typed scalars handed to it as it takes them)."""
        tuning = self.tune(grid, *args, **kwargs)
        views = [_binder_view(name, value) for name, value in zip(self.fn.arg_names, args)]
        return self.fn[grid](*views, **{k: _binder_view(k, v) for k, v in kwargs.items()},
                             **tuning.best.all_kwargs())

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


def autotune(configs: Sequence[Any], key: Sequence[str], *, prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             pre_hook: Callable[..., Any] | None = None, post_hook: Callable[..., Any] | None = None,
             warmup: float | None = None, rep: float | None = None, use_cuda_graph: bool = False,
             do_bench: Callable[..., Any] | None = None, cache_results: bool = False,
             device: Device | None = None, icache_flush: bool | None = None, race: bool = True,
             tie_hold_s: float | None = TIE_HOLD_S, compile_workers: int | None = None,
             compile_timeout_s: float | None = 120.0, progress: bool | None = None,
             record: str | os.PathLike[str] | None = None,
             **bench_options: Any) -> Callable[["JITFunction"], Autotuner]:
    """A decorator like `triton.autotune(configs, key, ...)`, timing each config with pyhipbench.

    Apply it above `@triton.jit`. triton.autotune's arguments:

    - `prune_configs_by`: {"early_config_prune": f, "perf_model": g, "top_k": n}, run in Python before
      anything is compiled.
    - `reset_to_zero`, `restore_value`: names of array arguments zeroed, or given back their contents,
      before each sample, outside its timing (untimed reset steps on the GPU, not Python hooks), and
      once more after the tuning.
    - `pre_hook(args, reset_only=False)`, `post_hook(args, exception)`, and a config's `Config.pre_hook`:
      Python around each launch, which the C++ loop does not run, so such configs are timed through
      the callable path (`ConfigResult.note` says so): the hooks' GPU work is then in the time, as in
      triton.autotune. `pre_hook` replaces reset_to_zero and restore_value, as in Triton: give one.
    - `warmup`, `rep` (ms): as triton.testing.do_bench's, `warmup + rep` becomes `max_time_s` (the
      most a config is measured; the precision usually stops it sooner); give them or max_time_s.
    - `use_cuda_graph=True`: the graph timer (each sample replays a captured graph of launches), with
      the dirty-cold cache state unless `cache` is given (a graph's samples have no clean step).
    - `cache_results=True` (or Triton's TRITON_CACHE_AUTOTUNING=1): each tuning is stored in Triton's
      cache directory and read back by later processes, keyed as Triton keys its own (Triton's
      version, the backend, the kernel's source, the environment, the tuning key, the configs) and by
      the device's model and pyhipbench's measurement options; not for hooked configs (as Triton).
    - `do_bench`: refused; pyhipbench is the benchmarker here (for Triton's own autotuner, pass
      `do_bench=pyhipbench.do_bench` to triton.autotune instead).

    pyhipbench's own: `bench_options`, bench()'s options for every config (timer, cache, precision,
    max_time_s, ...; bench()'s `warmup`, untimed samples, is `warmup_samples` here). `device`: None
    opens `Device()` on first use. `icache_flush`: as for `compile`. `race`: stop each config once it is
    surely slower than the best so far (False measures every config to the precision; a fixed
    `iterations` never races). `tie_hold_s`: the configs tied with the fastest (those compare's rule
    does not call more than 2 % slower than it; the 4 fastest) are measured again, twice each (fastest
    first, then in the reverse order), each run after running back to back untimed (the fastest's first
    for this many seconds, or half as long after a screen whose kernels ran that long; every other run
    for half as long), and the fastest there wins (None or 0: the fastest median wins;
    docs/measurement.md#ties-under-sustained-load says why).
    `compile_workers`: the compile pool's processes (None: the CPUs less one); `compile_timeout_s`: the
    most one config's compile may take in a worker (None: no limit), past which it fails and its worker
    is replaced. `progress`: a bar on stderr over the configs
    (compiling, then measuring) for a tuning that lasts past a second; None: when stderr is a terminal.
    `record`: a results database (SQLite; a new file, or one tunings were recorded into) each tuning is
    added to, as `pyhipbench.tune(record=)` adds one: a row per config, tagged by its meta-parameters and
    the tuning's key (docs/sweeps.md#tunings-in-a-results-database).
    """
    _require_triton()
    if device is not None and not isinstance(device, Device):
        raise BenchError(f"device={show(device)}: expected a pyhipbench.Device (hb.Device(\"cuda\", 0)) or None "
                         "(the first GPU, on first use)")
    configs = list(configs) if isinstance(configs, (list, tuple)) else configs
    if not isinstance(configs, list) or not configs or not all(isinstance(c, _kernel._triton.Config) for c in configs):
        raise BenchError(f"configs={show(configs)}: expected a non-empty list of triton.Config")
    if isinstance(key, str) or not isinstance(key, (list, tuple)) or not all(isinstance(k, str) for k in key):
        raise BenchError(f"key={show(key)}: expected a list of argument names")
    if do_bench is not None:
        raise BenchError(f"do_bench={show(do_bench)}: pyhipbench.triton.autotune times every config itself; "
                         "to keep a do_bench, use triton.autotune(..., do_bench=pyhipbench.do_bench)")
    # bench()'s warmup (untimed samples) is warmup_samples here: warmup is triton.autotune's, in ms.
    own = [o if o != "warmup" else "warmup_samples" for o in BENCH_OPTIONS]
    unknown = sorted(set(bench_options) - set(own))
    if unknown:
        raise BenchError(f"autotune option {unknown[0]!r}: expected triton.autotune's arguments or bench() "
                         f"options ({', '.join(own)})")
    if "warmup_samples" in bench_options:
        bench_options["warmup"] = bench_options.pop("warmup_samples")
    bench_options = {**bench_options, **_triton_timing(warmup, rep, use_cuda_graph, bench_options)}
    launch_options = {k: bench_options.pop(k) for k in LAUNCH_OPTIONS if k in bench_options}
    policy = Policy.from_keywords("autotune", bench_options, race, tie_hold_s)
    options = policy.options
    for name, hook in (("pre_hook", pre_hook), ("post_hook", post_hook)):
        if hook is not None and not callable(hook):
            raise BenchError(f"{name}={show(hook)}: expected a callable")
    resets = {what: _names(what, names) for what, names in (("reset_to_zero", reset_to_zero),
                                                               ("restore_value", restore_value))}
    if pre_hook is not None and any(resets.values()):
        raise BenchError("pre_hook with reset_to_zero or restore_value: Triton's pre_hook replaces them; "
                         "expected one of the two")
    if not isinstance(cache_results, bool):
        raise BenchError(f"cache_results={show(cache_results)}: expected True or False")
    tune = TuneOptions(
        icache_flush=checked_icache_flush(icache_flush), race=policy.race, tie_hold_s=policy.tie_hold_s,
        prune_configs_by=_checked_prune(prune_configs_by),
        pre_hook=pre_hook, post_hook=post_hook,
        cache_results=cache_results or bool(_kernel._knobs.autotuning.cache),
        compile_workers=default_workers() if compile_workers is None else integer("compile_workers",
                                                                                  compile_workers, 1, 1024),
        compile_timeout_s=None if compile_timeout_s is None else real("compile_timeout_s", compile_timeout_s,
                                                                      above=0),
        progress=_progress_option(progress), record=record_path(record),
        **{what: tuple(names) for what, names in resets.items()})

    def decorate(fn: "JITFunction") -> Autotuner:
        if not isinstance(fn, _kernel.JITFunction):
            raise BenchError(f"autotune decorates a @triton.jit function, got {show(fn)}")
        for what, names in (("key", key), *resets.items()):
            missing = [k for k in names if k not in fn.arg_names]
            if missing:
                raise BenchError(f"{what} names {', '.join(missing)}, not parameters of {fn.__name__!r} "
                                 f"({', '.join(fn.arg_names)})")
        tuner = Autotuner(fn, configs, key, device, options, launch_options, tune)
        if device is not None:  # decorated at import, tuned at the first call: these are done by then
            prepare_triton_early(target_of(device))
            tuner._set_up_started()
        return tuner

    return decorate


def _set_up(device: Device, options: BenchOptions) -> None:
    """bench's set_up, on a thread of its own: a failure there is met again, and recorded, by the first
    config's measurement."""
    try:
        set_up(device, options)
    except Error:
        pass


def _config_result(trial: Trial) -> ConfigResult:
    """A trial of the engine as the ConfigResult autotune reports."""
    config = trial.contender
    assert isinstance(config, _Config)
    ahead = config.ahead
    return ConfigResult(config.config, trial.result, trial.error, None if ahead is None else ahead.where,
                        None if ahead is None else ahead.compile_s,
                        ahead.queue_s if ahead is not None and ahead.where == "pool" else None,
                        trial.measure_s if trial.error is None else None, trial.note, trial.sustained)


def _triton_timing(warmup: object, rep: object, use_cuda_graph: object, bench_options: dict[str, Any]
                   ) -> dict[str, Any]:
    """triton.autotune's warmup / rep (ms) and use_cuda_graph as bench() options."""
    mapped: dict[str, Any] = {}
    if warmup is not None or rep is not None:
        if "max_time_s" in bench_options:
            raise BenchError(f"warmup={show(warmup)}, rep={show(rep)} with max_time_s="
                             f"{show(bench_options['max_time_s'])}: warmup + rep is max_time_s; expected one")
        budget_ms = (0 if warmup is None else real("warmup", warmup, minimum=0)) + \
            (0 if rep is None else real("rep", rep, minimum=0))
        if not budget_ms > 0:
            raise BenchError(f"warmup={show(warmup)}, rep={show(rep)}: expected a positive time budget in ms")
        mapped["max_time_s"] = budget_ms / 1000
    if not isinstance(use_cuda_graph, bool):
        raise BenchError(f"use_cuda_graph={show(use_cuda_graph)}: expected True or False")
    if use_cuda_graph:
        if bench_options.get("timer", "graph") != "graph":
            raise BenchError(f"use_cuda_graph=True with timer={show(bench_options['timer'])}: use_cuda_graph is "
                             "timer='graph'; expected one")
        mapped["timer"] = "graph"
    return mapped


def _progress_option(progress: object) -> bool | None:
    if progress is not None and not isinstance(progress, bool):
        raise BenchError(f"progress={show(progress)}: expected True, False or None (a bar when stderr is a terminal)")
    return progress


PRUNE_KEYS = ("early_config_prune", "perf_model", "top_k")


def _checked_prune(prune: object) -> dict[str, Any]:
    if prune is None:
        return {}
    if not isinstance(prune, dict) or set(prune) - set(PRUNE_KEYS):
        raise BenchError(f"prune_configs_by={show(prune)}: expected a dict of {', '.join(PRUNE_KEYS)}")
    for name in ("early_config_prune", "perf_model"):
        if prune.get(name) is not None and not callable(prune[name]):
            raise BenchError(f"prune_configs_by {name}={show(prune[name])}: expected a callable")
    return dict(prune)


def _names(what: str, names: object) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str) or not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise BenchError(f"{what}={show(names)}: expected a list of argument names")
    return list(names)

