"""Triton compiles ahead of the GPU: into Triton's own cache, in the compile pool.

A compile worker imports the kernel's module, compiles for the target it is
handed (no GPU context: Triton compiles for a `GPUTarget` without a driver)
and leaves the result in Triton's cache; the process that measures then reads
that entry (_cache.py: under the key triton.compile makes) and loads it.
Triton's cache stays the one store of compiled kernels: a config compiled
before (by an earlier tuning, or by Triton itself) is found before any worker
is asked, and costs no compiling.

A kernel defined in the script being run (`__main__`) compiles in the pool
too: a worker imports the script's file under another name (_script.py),
where its top level only defines. A kernel compiles in the measuring process
instead, one config after another, when a worker could not import it
(defined inside a function, in a notebook, or in a script that runs code at
its top level) or when Triton's cache is bypassed (`TRITON_ALWAYS_COMPILE`):
`Ahead.note` says which.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._compile.pool import TaskOutcome, shared_pool
from ..errors import CodegenError
from . import _kernel
from ._cache import cache_entry, cached
from ._script import MAIN_ALIAS, top_level_work

if TYPE_CHECKING:
    from triton.runtime.jit import JITFunction

    from .._device.device import Device
    from ._kernel import Specialized, TritonKernel

__all__ = ["TritonBuild", "Ahead", "PLAIN_VALUES", "compile_ahead", "reference"]

# Values that travel as they are (to a worker, into JSON): Triton's knobs set in Python (not through the
# environment, which a spawned worker inherits), which change what Triton compiles and its cache key; the
# meta-parameters a label and a record's tags show (arrays given by name left out).
PLAIN_VALUES = (bool, int, float, str, type(None))


def reference(fn: "JITFunction") -> tuple[str, str, str | None] | str:
    """(module, qualified name, the module's file) under which a compile worker imports `fn`, or why it
    cannot."""
    module, name = fn.fn.__module__, fn.fn.__qualname__
    if "<locals>" in name:
        return f"{fn.__name__} is defined inside a function, which a compile worker cannot import"
    found: Any = sys.modules.get(module)
    for part in name.split("."):
        found = getattr(found, part, None)
    if found is not fn:
        return f"{module}.{name} is not {fn.__name__} itself (a decorator above @triton.jit, or a rebinding)"
    path = getattr(sys.modules[module], "__file__", None)
    if module == "__main__":  # the script being run: a worker imports its file under another name
        if path is None:
            return f"{fn.__name__} is defined in __main__ with no file (a notebook, the REPL), which a compile " \
                "worker cannot import"
        work = top_level_work(path)
        if work is not None:
            return f"{fn.__name__} is defined in {path}, whose {work}; a compile worker would run that again " \
                "(put it under if __name__ == \"__main__\":)"
        return MAIN_ALIAS, name, path
    return module, name, path


def _import(module: str, path: str | None) -> Any:
    """`module` as this process's sys.path finds it, else from its file (a module imported from a
    directory the parent no longer has on sys.path)."""
    if module in sys.modules:
        return sys.modules[module]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        if path is None:
            raise
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {module!r}, and {path} cannot be loaded")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def knob_overrides() -> dict[str, dict[str, Any]]:
    """Triton's knobs set in Python in this process (by group), to set the same in a worker (the pool gives
    a worker this process's environment, not the knobs set over it)."""
    knobs = _kernel._knobs
    groups = {name: group for name, group in vars(knobs).items() if isinstance(group, knobs.base_knobs)}
    return {name: {k: v for k, v in vars(group).items() if k in group.knob_descriptors and isinstance(v, PLAIN_VALUES)}
            for name, group in groups.items() if vars(group)}


@dataclass(frozen=True)
class TritonBuild:
    """A Specialized compile as a worker takes it: the function by reference, the binder's signature,
    constants and attributes, Triton's options, the target, and the knobs set in Python."""
    module: str
    qualname: str
    path: str | None
    signature: dict[str, str]
    constexprs: dict
    attrs: dict
    options: dict[str, Any]
    target: Any
    knobs: dict[str, dict[str, Any]]


def ready_to_compile(module: str, qualname: str, path: str | None, target: Any) -> None:
    """What compile_build does before its first compile for `target`: Triton's compiler and backends imported,
    Triton's installation hash and the backend's (its ptxas version) made (each cached for the process), the
    kernel's module imported. Done once in the compile pool's fork server: every worker forked after starts
    with it."""
    from triton.compiler.compiler import make_backend
    from triton.runtime.cache import triton_key

    triton_key()
    make_backend(target).hash()
    _import(module, path)


def compile_build(build: TritonBuild) -> float:
    """In a compile worker: Triton's compile of `build` into Triton's cache; its seconds."""
    from triton.compiler import ASTSource

    for group, values in build.knobs.items():
        for name, value in values.items():
            setattr(getattr(_kernel._knobs, group), name, value)
    fn: Any = _import(build.module, build.path)
    for part in build.qualname.split("."):
        fn = getattr(fn, part)
    start = time.perf_counter()
    _kernel._triton.compile(ASTSource(fn, build.signature, build.constexprs, build.attrs), target=build.target,
                    options=build.options)
    return time.perf_counter() - start


@dataclass
class Ahead:
    """Where one compile happens: "cache" (Triton's cache has it: `entry`, its cache_entry, read when the
    kernel is loaded), "pool" (a worker compiles it into the cache: `future`'s TaskOutcome), or "here" (the
    measuring process; `note` says why). `what`: the compile, for messages. Once finished: `compiled`
    (Triton's CompiledKernel, for a compile made here), `compile_s` (the worker's or this process's seconds
    compiling) and `queue_s` (seconds it waited for a worker)."""
    where: str
    future: Future | None = None
    note: str | None = None
    what: str = ""
    entry: tuple[str, dict[str, str]] | None = None
    compiled: Any = None
    compile_s: float = 0.0
    queue_s: float = 0.0

    def finish(self, spec: "Specialized", arch: str) -> str | None:
        """The pool's compile waited for (its failure raised as this process's own compile says it), or the
        compile made here; the note on why it compiled here."""
        if self.future is not None:
            outcome: TaskOutcome = self.future.result()
            self.queue_s, self.compile_s = outcome.queue_s, outcome.run_s
            if not outcome.ok:
                raise CodegenError(f"Triton could not compile {self.what}: {outcome.error}")
        if self.where == "here":
            compiling = time.perf_counter()
            try:
                self.compiled = _kernel.triton_compile(spec, arch)
            finally:
                self.compile_s = time.perf_counter() - compiling
        return self.note

    def load(self, spec: "Specialized", device: "Device", icache_flush: bool | None) -> "TritonKernel":
        """The finished compile's kernel loaded on `device`: the one made here, else Triton's cache entry read
        (where the entry went meanwhile, build compiles)."""
        compiled = self.compiled
        if compiled is None and self.entry is not None:
            compiled = cached(spec, self.entry)
        return _kernel.build(spec, device, icache_flush, compiled)


def compile_ahead(specs: "list[Specialized]", arch: str, workers: int, timeout_s: float | None) -> list[Ahead]:
    """Each spec's compile for `arch` (the device's, for messages) started: cached ones left alone, the rest
    submitted to the compile pool where a worker can import the kernel; returns at once (the futures stream
    in)."""
    aheads: list[Ahead] = []
    knobs: dict[str, dict[str, Any]] | None = None
    for spec in specs:
        entry = cache_entry(spec)
        if entry is not None:
            aheads.append(Ahead("cache", entry=entry))
            continue
        where = reference(spec.fn)
        if isinstance(where, str) or _kernel._knobs.compilation.always_compile:
            note = where if isinstance(where, str) else \
                "Triton's cache is bypassed (TRITON_ALWAYS_COMPILE), so a worker's compile could not be reused"
            aheads.append(Ahead("here", note=f"compiled in this process: {note}"))
            continue
        if knobs is None:  # the first compile for the pool: its workers are forked ready for it
            knobs = knob_overrides()
            shared_pool(workers).warm(ready_to_compile, *where, spec.target)
        build = TritonBuild(*where, spec.signature, spec.constexprs, spec.attrs, spec.compile_options,
                            spec.target, knobs)
        aheads.append(Ahead("pool", shared_pool(workers).submit(compile_build, build, timeout_s=timeout_s),
                            what=f"{spec.fn.__name__!r} for {arch} with {spec.describe()}"))
    return aheads
