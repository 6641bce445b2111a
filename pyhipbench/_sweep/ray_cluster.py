"""The Ray executor: the same worker as a Ray actor per GPU, on an existing cluster.

Each actor asks Ray for one GPU (`num_gpus=1`); Ray sets
CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES on AMD) to it, so inside the actor
its device is index 0. Results come back to the driver process, which alone
writes the database. An actor that dies (an abort, a segfault) shows as
RayActorError on its pending call; one that hangs is killed by the
scheduler's watchdog (`ray.kill`); either is replaced by a new actor, which
Ray gives the freed GPU. An actor runs its calls in turn, so a task the
scheduler sends ahead waits in the actor's queue; the calls of a replaced
actor are forgotten. There is no standby actor: each asks Ray for a whole GPU
(`num_gpus=1`), so a spare would hold a GPU of its own, or need fractional
GPUs pinned to the node of the actor it stands in for. Ray is an optional dependency: without it a
NoDeviceError says how to install it.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from ..errors import Error, NoDeviceError
from .worker import DeviceFacts, Task, Worker

__all__ = ["RayCluster", "RayWorker"]

INSTALL_RAY = "pip install 'ray[default]'"


class RayWorker:
    """The actor: a Worker on the GPU Ray gave it (index 0 of the visible ones)."""

    def __init__(self, backend: str | None) -> None:
        self.backend = backend
        self.worker: Worker | None = None

    def facts(self) -> tuple[str, Any]:
        try:
            self.worker = Worker.open(self.backend, 0)
        except Error as e:
            return "error", f"{type(e).__name__}: {e}"
        import ray  # in the actor's process, where ray is present
        place = f"ray {ray.util.get_node_ip_address()} GPU {','.join(map(str, ray.get_gpu_ids()))} "
        return "ready", replace(self.worker.facts(), place=place)

    def run(self, task: Task) -> tuple[str, Any]:
        return "outcome", self.worker.run(task)


def _import_ray():
    try:
        import ray
    except ImportError:
        raise NoDeviceError(f"a sweep on a Ray cluster needs ray, which is not installed ({INSTALL_RAY})") from None
    return ray


class RayCluster:
    """Actors on the Ray cluster at `address` ("ray://host:10001", "auto"; an already initialised
    Ray is used as it is): `gpus` of them, or one per GPU of the cluster."""

    def __init__(self, address: str, backend: str | None = None, gpus: int | None = None) -> None:
        self.ray = ray = _import_ray()
        self.owns_connection = not ray.is_initialized()
        if self.owns_connection:
            try:
                ray.init(address=address, log_to_driver=False)
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise NoDeviceError(f"cannot connect to the Ray cluster at {address!r}: {e}") from None
        count = gpus if gpus is not None else int(ray.cluster_resources().get("GPU", 0))
        if count < 1:
            resources = ray.cluster_resources()
            if self.owns_connection:  # the sweep ends here: leave no Ray connection behind
                ray.shutdown()
            raise NoDeviceError(f"the Ray cluster at {address!r} has no GPUs (cluster resources: "
                                f"{resources})")
        self.count = count
        self.backend = backend
        self.actor_class = ray.remote(num_gpus=1, max_restarts=0)(RayWorker)
        self.actors: dict[int, Any] = {}
        self.pending: dict[Any, int] = {}  # object ref -> slot

    def initial_slots(self) -> list[int]:
        return list(range(self.count))

    def more_slots(self, facts: DeviceFacts) -> list[int]:
        return []

    def start(self, slot: int) -> None:
        self.kill(slot)
        self.actors[slot] = self.actor_class.remote(self.backend)
        self.pending[self.actors[slot].facts.remote()] = slot

    def submit(self, slot: int, task: Task) -> None:
        self.pending[self.actors[slot].run.remote(task)] = slot

    def kill(self, slot: int) -> None:
        actor = self.actors.pop(slot, None)
        if actor is None:
            return
        for ref in [r for r, s in self.pending.items() if s == slot]:
            del self.pending[ref]
        self.ray.kill(actor, no_restart=True)

    def events(self, timeout_s: float) -> list[tuple[int, str, Any]]:
        if not self.pending:
            time.sleep(timeout_s)
            return []
        ready, _ = self.ray.wait(list(self.pending), num_returns=len(self.pending), timeout=timeout_s)
        ready = set(ready)
        out = []
        for ref in [r for r in self.pending if r in ready]:  # in the order sent: an actor's outcomes in turn
            slot = self.pending.pop(ref)
            try:
                out.append((slot, *self.ray.get(ref)))
            except self.ray.exceptions.RayActorError as e:
                out.append((slot, "died", f"the Ray actor died: {str(e).splitlines()[0]}"))
            except self.ray.exceptions.RayTaskError as e:  # an exception the worker does not make an outcome
                out.append((slot, "died", f"the Ray actor raised {type(e.cause).__name__}: {e.cause}"))
        return out

    def close(self) -> None:
        for slot in list(self.actors):
            self.kill(slot)
        if self.owns_connection:
            self.ray.shutdown()
