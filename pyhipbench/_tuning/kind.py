"""CandidateKind: a kind of tune() candidate that a front end brings (pyhipbench.triton's TritonLaunch).

The engine imports no front end. A front end's candidate class derives from
CandidateKind, so defining it is all it takes: tune() measures any instance
through the contender the instance makes, compiled ahead in the compile pool
like a SourceLaunch, and records its tags with its result.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .._device.device import Device
from .._measure.options import BenchOptions
from .trial import Contender

__all__ = ["CandidateKind"]


class CandidateKind(ABC):
    """A tune() candidate of a front end's kind: its label, its tags and the contender that measures it."""

    @property
    @abstractmethod
    def label(self) -> str:
        """Its label where tune() is given a list (numbered where two share one)."""

    @property
    def tags(self) -> dict[str, Any]:
        """What it is, as JSON values by name (a Triton launch's meta-parameters): the tags a recorded
        tuning keeps beside its label. None of its own by default."""
        return {}

    @abstractmethod
    def contender(self, device: Device, options: BenchOptions, launch_keywords: dict[str, Any],
                  compile_workers: int) -> Contender:
        """The contender that compiles (in the compile pool of `compile_workers` processes), loads on
        `device` and measures it with `options` and bench_chain()'s `launch_keywords` (stream, expect, atol,
        rtol, reset_to_zero, restore_value). BenchError for what it cannot take, before anything runs."""
