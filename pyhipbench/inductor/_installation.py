"""Installation: what pyhipbench replaced in Inductor, module by module, and how it is undone."""
from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

from ..errors import BenchError
from ._choice_race import race_choices
from ._gpu_benchmark import GpuBenchmark
from ._ledger import Ledger
from ._settings import ENV_VAR, Settings, keywords_from_environment
from ._torch_paths import BENCHMARKING, SELECT_ALGORITHM, hook_benchmarker, path_of, wrap_benchmark_choices

__all__ = ["Installation", "current", "install_settings", "install_from_environment", "remove"]


class Installation:
    """`settings` applied to each of Inductor's modules as it is given (`apply`), each undone by `remove`;
    what it measures counted into `ledger`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ledger = Ledger()
        self.undo: dict[str, Callable[[], None]] = {}
        self.path = ""  # how the benchmarker was reached (torch_paths.path_of), once it was

    def apply(self, module_name: str) -> None:
        """The replacement in `module_name` (imported already): the benchmarker, or the list of choices."""
        if module_name in self.undo:
            return
        module, version = sys.modules[module_name], _torch_version()
        if module_name == BENCHMARKING:
            self.path = path_of(module, version)
            self.undo[module_name] = hook_benchmarker(module, version, GpuBenchmark(self.settings, self.ledger))
        elif module_name == SELECT_ALGORITHM:
            policy, device, ledger = self.settings.policy, self.settings.device, self.ledger
            self.undo[module_name] = wrap_benchmark_choices(
                module, version, lambda original: race_choices(original, policy, device, ledger))

    def remove(self) -> None:
        for undo in reversed(list(self.undo.values())):
            undo()
        self.undo.clear()


class _State:
    """The process's installation, the environment variable's value before install() set it, and whether an
    install() is under way."""
    installation: Installation | None = None
    environment_before: str | None = None
    installing = False


def current() -> Installation | None:
    return _State.installation


def install_settings(settings: Settings) -> Installation:
    """`settings` installed now: both of Inductor's modules imported and replaced, the environment variable
    set for Inductor's subprocesses. BenchError in one line where this torch cannot be reached (nothing is
    left replaced)."""
    if _State.installation is not None:
        raise BenchError("pyhipbench.inductor is installed already (by install() or PYHIPBENCH_INDUCTOR); "
                         "expected uninstall() before installing again")
    value = settings.environment_value()  # an option the variable cannot carry is refused before any change
    installation = Installation(settings)
    _State.installing = True  # the environment variable's watcher, run by these imports, installs nothing
    try:
        for name in (BENCHMARKING, SELECT_ALGORITHM):
            importlib.import_module(name)
            installation.apply(name)
    except BaseException:
        installation.remove()
        raise
    finally:
        _State.installing = False
    _State.installation = installation
    _State.environment_before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = value  # Inductor's subprocesses inherit it: they install too
    return installation


def install_from_environment(module_name: str) -> None:
    """The environment variable's installation, applied to `module_name` as it finishes importing (the
    torch.backends entry point's watcher calls it). BenchError for a value it cannot use."""
    if _State.installing:
        return
    if _State.installation is None:
        keywords = keywords_from_environment(os.environ.get(ENV_VAR, ""))
        if keywords is None:
            return
        _State.installation = Installation(Settings.from_keywords(keywords))
        _State.environment_before = None  # uninstall() clears it: subprocesses started later do not install
    installation = _State.installation
    try:
        installation.apply(module_name)
    except BaseException:  # torch cannot be reached: nothing stays replaced, as after a refused install()
        installation.remove()
        _State.installation = None
        raise


def remove() -> bool:
    """The installation undone and the environment variable as it was; False when none was installed."""
    installation = _State.installation
    if installation is None:
        return False
    installation.remove()
    _State.installation = None
    if _State.environment_before is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = _State.environment_before
    return True


def _torch_version() -> str:
    torch = sys.modules.get("torch")
    return str(getattr(torch, "__version__", "(unknown)"))
