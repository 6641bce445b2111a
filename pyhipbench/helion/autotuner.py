"""Autotuner: Helion's `autotuner_fn` setting, giving Helion's own search pyhipbench's first pass.

It builds what Helion's default would (`default_autotuner_fn`: the search
HELION_AUTOTUNER names, LFBO tree search by default, with the effort
profile's parameters, inside the autotune cache), then sets the provider
class of the search, and of every search the cache's best-of-K builds,
to RacingProvider. Those two attributes (`BaseSearch._benchmark_provider_cls`,
`AutotuneCacheBase._autotuner_factory`) are Helion 1.5.0 internals: no
public setting chooses a provider, and PopulationBasedSearch's constructor
does not pass one on.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .._device.device import Device
from .._tuning.engine import Policy
from ..errors import BenchError
from .first_pass import FirstPass
from .ledger import Ledger

__all__ = ["Autotuner"]


class Autotuner:
    """Helion's `autotuner_fn(bound_kernel, args, **kwargs)`: Helion's default search and cache, each
    candidate measured with `policy` on `device` (a FirstPass per search: a race's bound holds for one
    kernel's shapes only), counting into `ledger`."""

    def __init__(self, policy: Policy, device: Device | None, ledger: Ledger) -> None:
        self.policy, self.device, self.ledger = policy, device, ledger

    def __call__(self, bound_kernel: Any, args: Sequence[object], **kwargs: object) -> Any:
        """Helion's default autotuner for `bound_kernel` on `args`, its provider RacingProvider. BenchError
        where the first pass cannot take Helion's place: a backend with its own timer, several shapes at
        once, a distributed kernel."""
        import torch.distributed as dist
        from helion.autotuner.base_search import BaseSearch, _MultiShapeAutotuneArgs
        from helion.runtime.settings import default_autotuner_fn

        from .provider import RacingProvider

        backend = bound_kernel.config_spec.backend
        if backend.name != "triton" or backend.get_do_bench() is not None:
            raise BenchError(f"pyhipbench.helion: backend {backend.name!r} times its kernels its own way; "
                             "expected Helion's triton backend")
        if isinstance(args, _MultiShapeAutotuneArgs):
            raise BenchError("pyhipbench.helion: a multi-shape autotune (Helion's MultiShapeBenchmarkProvider) "
                             "is not measured by pyhipbench; expected one set of arguments")
        if dist.is_available() and dist.is_initialized():
            raise BenchError("pyhipbench.helion: torch.distributed is initialized; the first pass measures on "
                             "one GPU without agreeing each result across ranks; expected a single-process "
                             "autotune")
        tuner = default_autotuner_fn(bound_kernel, args, **kwargs)

        def given_provider(search: Any) -> Any:
            if not isinstance(search, BaseSearch) or not hasattr(search, "_benchmark_provider_cls"):
                raise BenchError(f"pyhipbench.helion: Helion built a {type(search).__name__}, not a search "
                                 "whose provider can be chosen; expected a helion.autotuner BaseSearch")
            first_pass = FirstPass(self.policy, self.device, self.ledger)
            search._benchmark_provider_cls = functools.partial(RacingProvider, first_pass=first_pass)
            return search

        given_provider(tuner.autotuner)
        factory = tuner._autotuner_factory
        if factory is not None:
            tuner._autotuner_factory = lambda: given_provider(factory())
        return tuner
