"""pyhipbench.inductor: PyTorch Inductor's GPU benchmarking (max-autotune) measured by pyhipbench.

    import pyhipbench.inductor
    pyhipbench.inductor.install()          # or PYHIPBENCH_INDUCTOR=1 in the environment
    model = torch.compile(model, mode="max-autotune-no-cudagraphs")
    pyhipbench.inductor.ledger()           # what pyhipbench measured, counted
    pyhipbench.inductor.uninstall()        # Inductor's own benchmarker again

From install() on, every CUDA benchmark Inductor makes (select_algorithm's
choices, fused kernels, kernel and subgraph benchmarks, its autotune
subprocesses) is measured by bench_callable: the kernels the call launched
(CUPTI on NVIDIA), a clean cold cache before each sample, adaptive stopping.
A list of choices races (a choice surely slower than the best so far stops
early) and its finalists are measured again under sustained load, through
the tuning engine. docs/inductor.md says which torch takes which path and
what a returned number means.
"""
from __future__ import annotations

from typing import Any

from .._device.device import Device
from .._tuning.ties import TIE_HOLD_S
from ..errors import BenchError
from ._gpu_benchmark import ready
from ._installation import current, install_settings, remove
from ._ledger import Ledger
from ._settings import ENV_VAR, Settings

__all__ = ["ENV_VAR", "Ledger", "install", "uninstall", "installed", "ledger"]


def install(*, device_type: str = "cuda", device: Device | None = None, race: bool = True,
            tie_hold_s: float | None = TIE_HOLD_S, **bench_options: Any) -> str:
    """Makes Inductor's GPU benchmarking in this process (and the autotune subprocesses it starts) go
    through pyhipbench, until uninstall(); returns how torch was reached ("register_benchmarker" or
    "benchmarker instance").

    `device_type`: torch's device type taken over ("cuda", NVIDIA and ROCm builds alike). `device`: the
    pyhipbench Device the callables run on (None: torch's current device at each benchmark). `race`, `tie_hold_s`
    (s): hb.tune's, for each list of choices. `bench_options`: bench_callable's options (`BenchOptions`, rotate
    aside) for every measurement, such as `precision`, `max_time_s` (s), `cache` ("clean-cold" or "warm").
    Where torch sees a CUDA device, the measuring is made ready here (`device`, or torch's current one): what
    a process's first measurement sets up once (the device, the kernel timer, the clean step, CUPTI's tracing)
    is done now rather than inside the first benchmark. BenchError in one line, before anything is replaced,
    for bad input, a torch whose benchmarker cannot be reached, or a second install.
    """
    settings = Settings.checked(device_type, device, race, tie_hold_s, bench_options)
    try:
        import torch
    except ImportError as e:
        raise BenchError(f"pyhipbench.inductor.install(): torch cannot be imported ({e}); expected torch 2.11 or "
                         "later") from None
    if current() is None and torch.cuda.is_available():
        index = torch.cuda.current_device() if device is None else device.properties.index
        scratch = torch.empty(1, device=torch.device("cuda", index))
        ready(settings, scratch.zero_)
    return install_settings(settings).path


def uninstall() -> bool:
    """Inductor's own benchmarking back, for the rest of the process and the subprocesses it starts later
    (the environment variable as it was before install(); unset after an installation it made). False when
    nothing was installed."""
    return remove()


def installed() -> str | None:
    """How torch's benchmarking is reached while installed ("register_benchmarker", "benchmarker instance"),
    or None."""
    installation = current()
    return None if installation is None else installation.path or "pending: Inductor not imported yet"


def ledger() -> Ledger | None:
    """What pyhipbench measured for Inductor in this process since it was installed (counts and seconds;
    an autotune subprocess keeps its own), or None while nothing is installed."""
    installation = current()
    return None if installation is None else installation.ledger
