"""Helion's autotuning measured through pyhipbench (docs/helion.md).

    import helion, pyhipbench.helion
    measuring = pyhipbench.helion.Measuring()
    @helion.kernel(**measuring.settings())
    def kernel(...): ...

Helion's search (its default, LFBO tree search, with the effort profile's
parameters) chooses the configs as it would; pyhipbench measures each one
(racing the best of the search so far: first_pass.py) and Helion's
re-benchmarks of the configs near the best (the tuning engine's race and
tie round: rebenchmark.py). Helion's compile, precompile and accuracy
check against the baseline stay Helion's (provider.py). Helion
HELION_VERSION only (version.py).
"""
from __future__ import annotations

from .ledger import Ledger
from .measuring import Measuring
from .version import HELION_VERSION

__all__ = ["HELION_VERSION", "Ledger", "Measuring"]
