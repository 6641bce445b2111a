"""triton.autotune's decorator with every config timed by pyhipbench."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._device.device import Device
from .._measure.options import BenchOptions
from .._measure.result import Result
from .._values import icache_flush as checked_icache_flush
from .._values import show
from ..errors import BenchError, Error
from . import _kernel
from ._bench import BENCH_OPTIONS, bench_compiled_with, split_options
from ._kernel import _binder_view, _require_triton, compile

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

__all__ = ["autotune", "Autotuner", "Tuning", "ConfigResult"]

@dataclass(frozen=True)
class ConfigResult:
    """One autotune candidate: its pyhipbench Result, or why it could not run."""
    config: Any              # the triton.Config
    result: Result | None    # None when it failed
    error: str | None = None  # the failure: a compile error, a limit it exceeds, a fault

    @property
    def median_us(self) -> float | None:
        return None if self.result is None else self.result.median_us

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: the config, and the median, CI (µs), timer, cache state, samples, why it
        stopped and the race's bound (µs; None: not raced), or the error."""
        out: dict[str, Any] = {"config": {**self.config.all_kwargs()}}
        if self.result is None:
            return {**out, "error": self.error}
        r = self.result
        return {**out, "median_us": r.median_us, "ci_us": list(r.ci_us), "timer": r.timer,
                "cache_state": r.cache_state, "samples": r.samples, "stop_reason": r.stop_reason,
                "slower_than_us": r.slower_than_us}


@dataclass(frozen=True)
class Tuning:
    """The outcome of tuning one key: every config's result, and the fastest (by median)."""
    key: tuple
    results: tuple[ConfigResult, ...]
    best: Any  # the winning triton.Config

    @property
    def failed(self) -> tuple[ConfigResult, ...]:
        return tuple(r for r in self.results if r.result is None)


class Autotuner:
    """`triton.autotune`'s configs and key, each config timed by pyhipbench.

    Calling `kernel[grid](*args, **kwargs)` tunes once per distinct key (the
    values of the `key` arguments and every argument's dtype, as Triton's
    autotuner) and launches the fastest config through Triton. `tune` tunes
    without launching; `tunings` holds every key's Tuning. With `race`, each
    config after the first stops as soon as its median's CI lies wholly above
    the lowest CI upper bound so far (bench's `slower_than_us`, stop_reason
    "slower"): the winner is measured to the precision, a config surely
    slower only until that is sure.
    """

    def __init__(self, fn: "JITFunction", configs: Sequence[Any], key: Sequence[str], device: Device | None,
                 options: BenchOptions, launch_options: dict[str, Any], icache_flush: bool | None = None,
                 race: bool = True, prune_configs_by: dict[str, Any] | None = None,
                 reset_to_zero: Sequence[str] = (), restore_value: Sequence[str] = ()) -> None:
        self.fn, self.configs, self.keys = fn, list(configs), list(key)
        self.prune_configs_by = dict(prune_configs_by or {})
        self.resets = {"reset_to_zero": list(reset_to_zero), "restore_value": list(restore_value)}
        self.icache_flush, self.race = icache_flush, race
        self._device = device
        self.options, self.launch_options = options, launch_options
        self.tunings: dict[tuple, Tuning] = {}

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
        """The Tuning for these arguments' key: each config compiled and timed (once per key).
        A config that fails to compile, exceeds a limit or faults is recorded with the reason;
        BenchError if every config failed."""
        key = self.key_of(args, kwargs)
        if key in self.tunings:
            return self.tunings[key]
        results: list[ConfigResult] = []
        for config in self.pruned(args, kwargs):
            results.append(self._try(config, grid, args, kwargs, self._race_bound(results)))
        ran = [r for r in results if r.result is not None]
        if not ran:
            reasons = "; ".join(f"{r.config}: {r.error}" for r in results)
            raise BenchError(f"autotune of {self.fn.__name__!r} for key {key!r}: no config ran; {reasons}")
        tuning = Tuning(key, tuple(results), min(ran, key=lambda r: r.result.median_us).config)
        self.tunings[key] = tuning
        return tuning

    def pruned(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The configs to time, as Triton's autotuner prunes them, before anything is compiled:
        `early_config_prune(configs, named_args, **kwargs)`, then the `top_k` (a count, or a fraction
        of the configs) that `perf_model(**named_args, **kwargs, **config.all_kwargs())` ranks first."""
        named = dict(zip(self.fn.arg_names, args))
        configs = self.configs
        prune = self.prune_configs_by
        if prune.get("early_config_prune") is not None:
            configs = list(prune["early_config_prune"](configs, named, **kwargs))
            if not configs or not all(isinstance(c, _kernel._triton.Config) for c in configs):
                raise BenchError(f"early_config_prune returned {show(configs)}: expected a non-empty list of "
                                 "the triton.Config it was given")
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
                order = sorted(range(len(configs)), key=lambda i: estimates[i])  # ties keep the configs' order
                configs = [configs[i] for i in order[:top_k]]
        return configs

    def _race_bound(self, results: list[ConfigResult]) -> float | None:
        """Racing's bound: the lowest CI upper bound so far, µs (None before a config ran,
        without racing, or with a fixed iteration count)."""
        bounds = [r.result.ci_us[1] for r in results if r.result is not None]
        if not (self.race and bounds) or self.options.iterations is not None:
            return None
        return min(bounds)

    def _try(self, config: Any, grid: Any, args: Sequence[Any], kwargs: dict[str, Any],
             bound_us: float | None) -> ConfigResult:
        if config.pre_hook is not None:
            return ConfigResult(config, None, "Config.pre_hook runs Python before each launch, "
                                "which the C++ loop cannot; tune this config with triton.autotune")
        clash = sorted(set(config.all_kwargs()) & set(kwargs))
        if clash:
            return ConfigResult(config, None, f"the call also passes {', '.join(clash)}, "
                                "which the config sets (Triton refuses this too)")
        kernel = None
        try:
            kernel = compile(self.fn, list(args), self.device, icache_flush=self.icache_flush, **kwargs,
                             **config.all_kwargs())
            options = self.options if bound_us is None else self.options.replace(slower_than_us=bound_us)
            return ConfigResult(config, bench_compiled_with(kernel, grid, options, **self.resets,
                                                            **self.launch_options))
        except Error as e:
            return ConfigResult(config, None, f"{type(e).__name__}: {e}")
        finally:
            if kernel is not None:
                kernel.unload()

    def run(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        """Tunes for these arguments' key if not yet, then launches the winner through Triton
        (pyhipbench arrays and typed scalars handed to it as it takes them)."""
        tuning = self.tune(grid, *args, **kwargs)
        views = [_binder_view(name, value) for name, value in zip(self.fn.arg_names, args)]
        return self.fn[grid](*views, **{k: _binder_view(k, v) for k, v in kwargs.items()},
                             **tuning.best.all_kwargs())

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


def autotune(configs: Sequence[Any], key: Sequence[str], *, device: Device | None = None,
             icache_flush: bool | None = None, race: bool = True, prune_configs_by: dict[str, Any] | None = None,
             reset_to_zero: Sequence[str] | None = None, restore_value: Sequence[str] | None = None,
             **bench_options: Any) -> Callable[["JITFunction"], Autotuner]:
    """A decorator like `triton.autotune(configs, key)`, timing each config with pyhipbench.

    `bench_options`: bench()'s options for every candidate (timer,
    cache, precision, max_time_s, ...). `device`: None opens `Device()` on
    first use. `icache_flush`: as for `compile`. `race`: stop each config
    once it is surely slower than the best so far (Autotuner; False measures
    every config to the precision; a fixed `iterations` never races).
    Apply it above `@triton.jit`.
    `prune_configs_by`: as triton.autotune's ({"early_config_prune": f,
    "perf_model": g, "top_k": n}), run in Python before anything is compiled.
    `reset_to_zero`, `restore_value`: names of array arguments zeroed, or given
    back their contents, before each sample, outside its timing (untimed reset
    steps on the GPU, not Python hooks). `pre_hook`/`post_hook` (Python around
    each launch, which the C++ loop does not run) are not taken; `warmup`/`rep`
    are pyhipbench's stopping rule here (`precision`, `max_time_s`, `iterations`).
    """
    _require_triton()
    icache_flush = checked_icache_flush(icache_flush)
    configs = list(configs) if isinstance(configs, (list, tuple)) else configs
    if not isinstance(configs, list) or not configs or not all(isinstance(c, _kernel._triton.Config) for c in configs):
        raise BenchError(f"configs={show(configs)}: expected a non-empty list of triton.Config")
    if isinstance(key, str) or not isinstance(key, (list, tuple)) or not all(isinstance(k, str) for k in key):
        raise BenchError(f"key={show(key)}: expected a list of argument names")
    if "slower_than_us" in bench_options:
        raise BenchError(f"autotune option slower_than_us={show(bench_options['slower_than_us'])}: autotune sets "
                         "it to the best config's CI so far; expected race=True (the default) or race=False")
    unknown = sorted(set(bench_options) - set(BENCH_OPTIONS))
    if unknown:
        raise BenchError(f"autotune option {unknown[0]!r}: expected bench() options "
                         f"({', '.join(o for o in BENCH_OPTIONS if o != 'slower_than_us')})")
    options, launch_options = split_options(bench_options)
    if not isinstance(race, bool):
        raise BenchError(f"race={show(race)}: expected True (the default) or False")
    prune = _checked_prune(prune_configs_by)
    resets = {what: _names(what, names) for what, names in (("reset_to_zero", reset_to_zero),
                                                               ("restore_value", restore_value))}

    def decorate(fn: "JITFunction") -> Autotuner:
        if not isinstance(fn, _kernel.JITFunction):
            raise BenchError(f"autotune decorates a @triton.jit function, got {show(fn)}")
        for what, names in (("key", key), *resets.items()):
            missing = [k for k in names if k not in fn.arg_names]
            if missing:
                raise BenchError(f"{what} names {', '.join(missing)}, not parameters of {fn.__name__!r} "
                                 f"({', '.join(fn.arg_names)})")
        return Autotuner(fn, configs, key, device, options, launch_options, icache_flush, race, prune, **resets)

    return decorate


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

