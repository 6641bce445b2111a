"""Measuring: the one object a Helion user makes; its `settings()` are the Helion settings that measure
a kernel's autotuning through pyhipbench."""
from __future__ import annotations

from typing import Any

from .._device.device import Device
from .._tuning.engine import Policy
from .._tuning.ties import TIE_HOLD_S
from .._values import show
from ..errors import BenchError
from .autotuner import Autotuner
from .ledger import Ledger
from .rebenchmark import Rebenchmark
from .version import checked_helion_version

__all__ = ["Measuring"]


class Measuring:
    """Helion's autotuning measured through pyhipbench: `@helion.kernel(**Measuring().settings())`.

    `race`: a candidate stops once it is surely slower than the best of the search so far (False: each is
    measured to the precision). `tie_hold_s`: in Helion's re-benchmarks, the candidates tied with the
    fastest are measured again, after a hold of this many seconds (None or 0: no tie round).
    `device`: where the kernels run (None: torch's current device). `bench_options`: bench()'s options
    (`BenchOptions`: `timer`, `cache`, `precision`, `max_time_s` in s, ...) for every measurement,
    `slower_than_us` aside (racing sets it) and `rotate` (a kernel's buffers are Helion's own). `ledger`:
    the counts and seconds of what was measured.
    BenchError in one line for a value of the wrong type and where the installed Helion is missing or a
    release this integration does not know (version.py).
    """

    def __init__(self, *, race: bool = True, tie_hold_s: float | None = TIE_HOLD_S, device: Device | None = None,
                 **bench_options: Any) -> None:
        checked_helion_version()
        if device is not None and not isinstance(device, Device):
            raise BenchError(f"pyhipbench.helion device={show(device)}: expected a pyhipbench.Device or None")
        self.policy = Policy.from_keywords("pyhipbench.helion", bench_options, race, tie_hold_s, own_buffers=True,
                                           leave_out=("rotate",))
        self.device = device
        self.ledger = Ledger()

    def settings(self) -> dict[str, Any]:
        """Helion settings (`helion.kernel(**...)` or `helion.Settings(**...)`): `autotuner_fn` (Helion's
        default search, its first pass measured here) and `autotune_benchmark_fn` (its re-benchmarks
        measured here), both counting into this object's `ledger`."""
        return {"autotuner_fn": Autotuner(self.policy, self.device, self.ledger),
                "autotune_benchmark_fn": Rebenchmark(self.policy, self.device, self.ledger)}
