"""What the sweep tests share: kernels that misbehave on the fake HIP runtime, and their environment.

The fake (tests/fakes/fake_driver.c) faults, hangs or aborts in the launch of
a kernel named in FAKE_KERNEL_FAULT / FAKE_KERNEL_HANG / FAKE_KERNEL_ABORT, and
reports FAKE_HIP_DEVICE_COUNT devices. Workers are spawned processes (or Ray
actors), so they find the fake through the environment: PYHIPBENCH_HIP_LIBRARY
names it for hip-python and the core alike.
"""
from __future__ import annotations

from collections import deque
from pathlib import Path

import pyhipbench as hb
from pyhipbench import CompileTarget
from pyhipbench._sweep.worker import DeviceFacts, Worker

# Four kernels with one signature (src, dst, n): `copy` measures; the others misbehave by name.
IR = 'target triple = "amdgcn-amd-amdhsa"\n' + "".join(
    f"define amdgpu_kernel void @{name}(ptr addrspace(1) %src, ptr addrspace(1) %dst, i64 %n) {{\n  ret void\n}}\n"
    for name in ("copy", "fault", "hang", "crash"))
ARGS = ["array:float32:4096", "array:float32:4096", "int64:4096"]
FAST = {"cache": "warm", "max_time_s": 0.05}


def sweep_environment(fake_hip_library: Path, devices: int = 2) -> dict[str, str]:
    return {"PYHIPBENCH_HIP_LIBRARY": str(fake_hip_library), "FAKE_HIP_DEVICE_COUNT": str(devices),
            "FAKE_KERNEL_FAULT": "fault", "FAKE_KERNEL_HANG": "hang", "FAKE_KERNEL_ABORT": "crash"}


def space(good: int, bad: tuple[str, ...] = ("fault", "hang", "crash"), bench: dict | None = None) -> dict:
    """A search space over IR: `good` copies with different grids, then one candidate per bad kernel."""
    return {"defaults": {"source": {"kind": "llvm-ir", "text": IR}, "block": [64], "args": ARGS,
                         "bench": bench or FAST},
            "candidates": [{"kernel": "copy", "grid": [g + 1], "tags": {"g": g}} for g in range(good)]
            + [{"kernel": name, "grid": [1]} for name in bad]}


class InProcess:
    """An Executor (scheduler.py) with one worker in this process, on a fake sm_90 device: the
    scheduler, its CPU compiler pool and Worker.run are the real ones."""

    def __init__(self, device: hb.Device) -> None:
        self.worker = Worker(device)
        self.pending: deque = deque()

    def initial_slots(self) -> list[int]:
        return [0]

    def more_slots(self, facts: DeviceFacts) -> list[int]:
        return []

    def start(self, slot: int) -> None:
        self.pending.append((slot, "ready", DeviceFacts("cuda", 0, "Fake GPU", CompileTarget("sm_90", 13000, ("cuda", 90, 32)), 1)))

    def submit(self, slot: int, task) -> None:
        self.pending.append((slot, "outcome", self.worker.run(task)))

    def kill(self, slot: int) -> None:
        pass

    def events(self, timeout: float) -> list:
        events, self.pending = list(self.pending), deque()
        return events

    def close(self) -> None:
        pass
