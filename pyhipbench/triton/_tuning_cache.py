"""cache_results: a tuning stored in Triton's cache directory, read back by later processes.

The key is Triton's own for its autotuner's cache (Triton's version, the
backend's hash, the kernel's source and what it calls, the cache-invalidating
environment variables, the tuning key, the configs), with the device's model
and architecture and pyhipbench's version and measurement options added: a
tuning measured on another GPU, by another pyhipbench, or with other options
is not reused, nor one whose ties were held for another time (tie_hold_s).
Editing the kernel changes its source's hash, so its old tunings are never
found again.
"""
from __future__ import annotations

import hashlib
import json
import time
import warnings
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from .._device.device import Device
from .._measure.options import BenchOptions
from ._cache import backend_of, installation_key
from ._kernel import target_of
from ._tuning import ConfigResult, Tuning

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

__all__ = ["TuningCache"]

FORMAT = 1  # the stored file's layout


class TuningCache:
    """Where the tuning of `fn` for `key` over `configs` on `device` with `options` (and its ties held
    `tie_hold_s`, s) is stored."""

    def __init__(self, fn: "JITFunction", device: Device, options: BenchOptions, configs: list[Any],
                 key: tuple, tie_hold_s: float | None) -> None:
        from triton._C.libtriton import get_cache_invalidating_env_vars
        from triton.runtime.cache import get_cache_manager

        self.configs, self.key = configs, key
        measured = {name: getattr(options, name) for name in BenchOptions.field_names()}
        parts = [installation_key(), backend_of(target_of(device)).hash(), fn.cache_key,
                 str(sorted(get_cache_invalidating_env_vars().items())), str(key),
                 *[json.dumps(c.all_kwargs(), sort_keys=True, default=str) for c in configs],
                 f"pyhipbench {version('pyhipbench')}", device.name, device.arch,
                 json.dumps(measured, sort_keys=True, default=str), f"tie_hold_s {tie_hold_s}"]
        self.manager = get_cache_manager(hashlib.sha256("-".join(parts).encode()).hexdigest())
        self.file_name = f"{fn.__name__[:150]}.pyhipbench-autotune.json"

    def load(self, started: float) -> Tuning | None:
        """The stored tuning, or None when there is none (or it cannot be read: a warning says why)."""
        path = self.manager.get_file(self.file_name)
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8") as f:
                stored = json.load(f)
            if stored.get("format") != FORMAT or len(stored["results"]) != len(self.configs):
                raise ValueError(f"format {stored.get('format')!r} with {len(stored['results'])} configs; "
                                 f"expected format {FORMAT} with {len(self.configs)}")
            results = []
            for config, result in zip(self.configs, stored["results"]):
                if result["config"] != json.loads(json.dumps(config.all_kwargs(), default=str)):
                    raise ValueError(f"config {result['config']} where {config} was expected")
                results.append(ConfigResult(config, None, result.get("error"), "cache", stored=result))
            best = self.configs[int(stored["best"])]
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            warnings.warn(f"cache_results: {path} cannot be read back ({e}); tuning again", stacklevel=4)
            return None
        return Tuning(self.key, tuple(results), best, time.perf_counter() - started, 0.0, from_cache=True)

    def store(self, tuning: Tuning) -> None:
        results = [r.to_dict() for r in tuning.results]
        text = json.dumps({"format": FORMAT, "key": [str(k) for k in tuning.key], "results": results,
                           "best": self.configs.index(tuning.best)}, default=str)
        self.manager.put(text, self.file_name, binary=False)
