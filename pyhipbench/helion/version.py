"""The Helion release this integration is tested with, and the check that refuses any other in one line.

The first pass reaches Helion's internals (helion.autotuner.benchmark_provider's LocalBenchmarkProvider and
BaseSearch's provider class), which change between releases, so one release is accepted: the one the
tests and docs/helion.md were written against.
"""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ..errors import BenchError

__all__ = ["HELION_VERSION", "checked_helion_version"]

HELION_VERSION = "1.5.0"


def checked_helion_version() -> str:
    """The installed Helion's version; BenchError in one line where Helion is missing or another release."""
    try:
        installed = version("helion")
    except PackageNotFoundError:
        raise BenchError(f"pyhipbench.helion needs Helion {HELION_VERSION}, which is not installed; expected "
                         f"`pip install helion=={HELION_VERSION}`") from None
    if installed != HELION_VERSION:
        raise BenchError(f"Helion {installed} is installed; pyhipbench.helion reaches Helion's benchmark provider, "
                         f"whose internals change between releases, and knows {HELION_VERSION} only; expected "
                         f"`pip install helion=={HELION_VERSION}`")
    return installed
