"""Settings: how Inductor's benchmarking is measured once pyhipbench takes it over, checked once, and carried to
Inductor's benchmarking subprocesses in the environment variable."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .._device.device import Device
from .._tuning.engine import Policy
from .._tuning.ties import TIE_HOLD_S
from .._values import show
from ..errors import BenchError

__all__ = ["ENV_VAR", "DEVICE_TYPES", "Settings"]

ENV_VAR = "PYHIPBENCH_INDUCTOR"
# torch's device type for NVIDIA and for AMD (ROCm builds of torch name HIP devices "cuda" too).
DEVICE_TYPES = ("cuda",)


@dataclass(frozen=True)
class Settings:
    """`policy`: the options of every measurement, racing and the tie round's hold (as hb.tune's); `device`:
    where the callables run (None: torch's current device at each call); `keywords`: what install() was
    given, bench options and policy only, for a subprocess to install the same."""
    policy: Policy
    device: Device | None
    keywords: dict[str, Any]

    @classmethod
    def checked(cls, device_type: object, device: object, race: object, tie_hold_s: object,
                bench_options: dict[str, Any]) -> Settings:
        """BenchError in one line for a device type other than CUDA's, a device that is not a pyhipbench
        Device, or bad options (before anything is replaced)."""
        if device_type not in DEVICE_TYPES:
            raise BenchError(f"device_type={show(device_type)}: pyhipbench takes over Inductor's GPU "
                             f"benchmarking for torch's {' and '.join(DEVICE_TYPES)} devices (NVIDIA, and AMD "
                             "under ROCm builds of torch); expected 'cuda'")
        if device is not None and not isinstance(device, Device):
            raise BenchError(f"device={show(device)}: expected a pyhipbench.Device or None (torch's current device)")
        policy = Policy.from_keywords("pyhipbench.inductor.install", dict(bench_options), race, tie_hold_s,
                                      own_buffers=True, leave_out=("rotate",))
        return cls(policy, device, {**bench_options, "race": race, "tie_hold_s": tie_hold_s})

    @classmethod
    def from_keywords(cls, keywords: dict[str, Any]) -> Settings:
        """The settings install(**keywords) would make (the device aside: torch's current one), checked as
        install() checks them: the environment variable's JSON object, or a bench script's."""
        given = dict(keywords)
        return cls.checked(given.pop("device_type", "cuda"), None, given.pop("race", True),
                           given.pop("tie_hold_s", TIE_HOLD_S), given)

    def environment_value(self) -> str:
        """The environment variable's value that installs these settings in a subprocess (the device aside:
        a subprocess measures on the device it is given)."""
        if self.keywords == _DEFAULT_KEYWORDS:
            return "1"
        try:
            return json.dumps(self.keywords, sort_keys=True)
        except TypeError as e:  # a numpy scalar, say
            raise BenchError(f"install options {self.keywords!r}: {e}; expected plain numbers, strings and "
                             "booleans (Inductor's subprocesses get them as JSON)") from None


_DEFAULT_KEYWORDS = {"race": True, "tie_hold_s": TIE_HOLD_S}


def keywords_from_environment(value: str) -> dict[str, Any] | None:
    """install()'s keywords from the environment variable's value: None when it is unset, empty or "0" (no
    install); {} for "1"; a JSON object's items. BenchError in one line for anything else."""
    text = value.strip()
    if text in ("", "0"):
        return None
    if text == "1":
        return {}
    try:
        keywords = json.loads(text)
    except ValueError:
        keywords = None
    if not isinstance(keywords, dict):
        raise BenchError(f"{ENV_VAR}={value!r}: expected 1 (install with the defaults), 0 or unset (do not), "
                         "or a JSON object of pyhipbench.inductor.install()'s keywords")
    return keywords
