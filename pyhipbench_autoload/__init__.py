"""pyhipbench's torch.backends entry point: PYHIPBENCH_INDUCTOR=1 takes over Inductor's benchmarking in code
one cannot edit.

`import torch` calls every entry point of the "torch.backends" group
(torch._import_device_backends, unless TORCH_DEVICE_BACKEND_AUTOLOAD=0).
This module is the one it imports, outside the pyhipbench package so that
importing it loads nothing else: with the variable unset or 0, `torch_backend`
reads the environment and returns. With it set, it waits, importing nothing,
until Inductor's benchmarking module and its choice selection are imported,
and installs pyhipbench.inductor into each as it finishes importing. Nothing
here raises into `import torch`: a failure is one line on the log (stderr
unless logging is configured).
"""
from __future__ import annotations

import logging
import os
import sys
from typing import Any

ENV_VAR = "PYHIPBENCH_INDUCTOR"
# The modules pyhipbench.inductor replaces a part of (its _torch_paths.py names the same two).
WATCHED = ("torch._inductor.runtime.benchmarking", "torch._inductor.select_algorithm")


def torch_backend() -> None:
    """The entry point: with PYHIPBENCH_INDUCTOR set (not 0), pyhipbench.inductor installed into Inductor's
    modules as they are imported."""
    if os.environ.get(ENV_VAR, "").strip() in ("", "0"):
        return
    pending = [name for name in WATCHED if name not in sys.modules]
    for name in WATCHED:
        if name in sys.modules:
            _install(name)
    if pending and not any(isinstance(finder, AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, AfterImport(pending))


class AfterImport:
    """A meta path finder for the watched modules only: each found by the finders after it, its loader wrapped
    so that pyhipbench.inductor is installed into it once it has executed; gone when none is left."""

    def __init__(self, pending: list[str]) -> None:
        self.pending = pending

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.pending:
            return None
        self.pending.remove(name)
        if not self.pending:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = ThenInstall(spec.loader, name)
                return spec
        return None


class ThenInstall:
    """A loader that executes its module with the loader it wraps, then installs into it."""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader, self.name = loader, name

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        _install(self.name)

    def __getattr__(self, attr: str) -> Any:  # get_source, get_filename, ...: the wrapped loader's
        return getattr(self.loader, attr)


def _install(name: str) -> None:
    try:
        from pyhipbench.inductor._installation import install_from_environment
        install_from_environment(name)
    except Exception as e:  # never into `import torch` or Inductor's import: one line on the log instead (a
        # warning would be raised there where warnings are errors, as under pytest's -W error)
        logging.getLogger("pyhipbench.inductor").warning(
            "%s=%r: pyhipbench did not take over %s: %s: %s", ENV_VAR, os.environ.get(ENV_VAR), name,
            type(e).__name__, e)
