"""pyhipbench.inductor's hook in the installed torch: installed, undone, refused in one line, and the shape of
the torch it reaches checked (a torch whose registration path changes fails here first). Needs torch; no GPU."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import types
from importlib.metadata import entry_points

import pytest

torch = pytest.importorskip("torch", reason="pyhipbench.inductor hooks into torch's Inductor; torch is not "
                                            "installed (.ci/run tests it in a venv with torch 2.11)")

from torch._inductor import select_algorithm  # noqa: E402
from torch._inductor.runtime import benchmarking  # noqa: E402

import pyhipbench.inductor as inductor  # noqa: E402
from pyhipbench.errors import BenchError  # noqa: E402
from pyhipbench.inductor._torch_paths import CHOICES_PARAMETERS, path_of  # noqa: E402

HAS_HOOK = hasattr(benchmarking, "register_benchmarker")


@pytest.fixture(autouse=True)
def uninstalled(monkeypatch):
    monkeypatch.delenv(inductor.ENV_VAR, raising=False)
    yield
    inductor.uninstall()


def test_install_replaces_the_benchmark_and_the_choice_list_and_uninstall_puts_both_back():
    choices_before = vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"]
    cuda_before = benchmarking._BENCHMARK_DISPATCH.get("cuda") if HAS_HOOK else None
    path = inductor.install()
    assert path == ("register_benchmarker" if HAS_HOOK else "benchmarker instance") == inductor.installed()
    if HAS_HOOK:
        assert benchmarking._BENCHMARK_DISPATCH["cuda"] is not cuda_before
    else:
        assert "benchmark_gpu" in vars(benchmarking.benchmarker)  # the instance's, not its class's
    assert vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"] is not choices_before
    assert os.environ[inductor.ENV_VAR] == "1"  # the autotune subprocesses install too
    assert inductor.uninstall() is True and inductor.installed() is None and inductor.uninstall() is False
    assert vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"] is choices_before
    if HAS_HOOK:
        assert benchmarking._BENCHMARK_DISPATCH.get("cuda") is cuda_before
    else:
        assert "benchmark_gpu" not in vars(benchmarking.benchmarker)
    assert inductor.ENV_VAR not in os.environ


def test_install_options_reach_the_subprocesses_in_the_environment_variable():
    inductor.install(precision=0.02, tie_hold_s=None)
    assert os.environ[inductor.ENV_VAR] == '{"precision": 0.02, "race": true, "tie_hold_s": null}'


def test_the_installed_torch_has_the_shape_pyhipbench_relies_on():
    """Fails when torch moves the benchmarker, its registration hook or the list of choices."""
    if HAS_HOOK:
        parameters = inspect.signature(benchmarking.register_benchmarker).parameters
        assert list(parameters) == ["device_type", "fn", "override"]
        assert parameters["override"].kind is inspect.Parameter.KEYWORD_ONLY
        assert isinstance(benchmarking._BENCHMARK_DISPATCH, dict)
        assert "_BENCHMARK_DISPATCH.get(" in inspect.getsource(benchmarking.Benchmarker.benchmark)
    else:
        assert tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 11)
        assert "self.benchmark_gpu(" in inspect.getsource(benchmarking.Benchmarker.benchmark)
        # The modules that import the name bind the one instance: setting benchmark_gpu on it reaches them all.
        from torch._inductor import autotune_process, ir, wrapper_benchmark
        from torch._inductor.codegen import multi_kernel, subgraph, triton
        from torch._inductor.runtime import triton_heuristics
        for module in (autotune_process, ir, wrapper_benchmark, multi_kernel, subgraph, triton, triton_heuristics):
            assert module.benchmarker is benchmarking.benchmarker, module.__name__
    assert path_of(benchmarking, torch.__version__) == ("register_benchmarker" if HAS_HOOK else
                                                         "benchmarker instance")
    original = vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"]
    assert isinstance(original, classmethod)
    assert list(inspect.signature(original.__func__).parameters) == CHOICES_PARAMETERS


@pytest.mark.parametrize("keywords, message", [
    ({"device_type": "xpu"}, r"^device_type='xpu': pyhipbench takes over Inductor's GPU benchmarking for torch's "
                             r"cuda devices .*; expected 'cuda'$"),
    ({"device": "cuda:0"}, r"^device='cuda:0': expected a pyhipbench.Device or None"),
    ({"cache": "dirty-cold"}, r"^pyhipbench.inductor.install cache='dirty-cold': its candidates' buffers are their own"),
    ({"slower_than_us": 3.0}, r"^pyhipbench.inductor.install option slower_than_us=3.0: racing sets it"),
    ({"race": "yes"}, r"^race='yes': expected True"),
    ({"precision": -1}, r"precision"),
])
def test_bad_input_is_refused_in_one_line_before_anything_is_replaced(keywords, message):
    with pytest.raises(BenchError, match=message) as caught:
        inductor.install(**keywords)
    assert "\n" not in str(caught.value) and inductor.installed() is None
    assert "benchmark_gpu" not in vars(benchmarking.benchmarker) and inductor.ENV_VAR not in os.environ


def test_a_second_install_is_refused_and_the_first_stays():
    path = inductor.install()
    with pytest.raises(BenchError, match=r"^pyhipbench.inductor is installed already .*expected uninstall\(\)"):
        inductor.install()
    assert inductor.installed() == path


def test_a_torch_without_the_hook_before_2_11_is_refused_in_one_line():
    old = types.ModuleType("benchmarking")
    old.benchmarker = benchmarking.benchmarker
    with pytest.raises(BenchError, match=r"^torch 2\.10\.0: pyhipbench reaches Inductor's benchmarker from torch "
                                         r"2\.11 on; expected torch >= 2\.11$"):
        path_of(old, "2.10.0")
    with pytest.raises(BenchError, match=r"^torch 2\.12\.0: torch\._inductor\.runtime\.benchmarking has neither "
                                         r"register_benchmarker nor a module-level benchmarker"):
        path_of(types.ModuleType("benchmarking"), "2.12.0")


def _subprocess(code: str, value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != inductor.ENV_VAR}
    if value is not None:
        env[inductor.ENV_VAR] = value
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


AUTOLOADED = [e for e in entry_points(group="torch.backends") if e.value == "pyhipbench_autoload:torch_backend"]
needs_entry_point = pytest.mark.skipif(not AUTOLOADED, reason="pyhipbench's torch.backends entry point is not "
                                       "installed here (an editable install made before it): pip install -e .")


@needs_entry_point
def test_the_environment_variable_installs_through_import_torch_and_costs_nothing_unset():
    code = ("import sys, torch; print('pyhipbench' in sys.modules)\n"
            "import pyhipbench.inductor as i; from torch._inductor import select_algorithm; print(i.installed())")
    assert _subprocess(code, None).stdout.split("\n")[:2] == ["False", "None"]
    assert _subprocess(code, "0").stdout.split("\n")[:2] == ["False", "None"]
    path = "register_benchmarker" if HAS_HOOK else "benchmarker instance"
    assert _subprocess(code, "1").stdout.split("\n")[:2] == ["False", path]  # loaded with Inductor, not torch


@needs_entry_point
def test_a_bad_environment_value_is_one_logged_line_and_import_torch_still_works():
    done = _subprocess("import torch; from torch._inductor import select_algorithm; print('imported')", "yes")
    assert done.returncode == 0 and done.stdout.strip() == "imported"
    assert "PYHIPBENCH_INDUCTOR='yes': pyhipbench did not take over torch._inductor.runtime.benchmarking: " \
           "BenchError: PYHIPBENCH_INDUCTOR='yes': expected 1" in done.stderr


def test_the_entry_point_installs_as_inductor_imports_and_loads_nothing_with_torch():
    """pyhipbench_autoload.torch_backend, as `import torch` calls it, with the variable set: pyhipbench is
    loaded only when Inductor's modules are."""
    code = ("import sys, torch, pyhipbench_autoload; pyhipbench_autoload.torch_backend()\n"
            "print('pyhipbench' in sys.modules)\n"
            "from torch._inductor import select_algorithm; import pyhipbench.inductor as i; print(i.installed())\n"
            "print('benchmark_choices' in vars(select_algorithm.AlgorithmSelectorCache))")
    path = "register_benchmarker" if HAS_HOOK else "benchmarker instance"
    ran = _subprocess(code, "1")
    assert ran.stdout.split("\n")[:3] == ["False", path, "True"], ran.stderr


def test_pyproject_declares_the_entry_point_and_ships_its_module():
    from pathlib import Path

    import tomllib
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["torch.backends"] == {"pyhipbench": "pyhipbench_autoload:torch_backend"}
    assert "pyhipbench_autoload" in project["tool"]["scikit-build"]["wheel"]["packages"]


def test_an_install_over_the_environment_variable_is_undone_whole():
    """With PYHIPBENCH_INDUCTOR set, install() imports Inductor (its watcher then installs nothing) and
    uninstall() leaves nothing of pyhipbench behind."""
    code = ("import os, torch, pyhipbench.inductor as i\n"
            "print(i.install(tie_hold_s=None))\n"
            "from torch._inductor import select_algorithm\n"
            "print(i.uninstall(), i.installed(), os.environ.get(i.ENV_VAR))\n"
            "print('benchmark_choices' in vars(select_algorithm.AlgorithmSelectorCache) and "
            "'race_choices' in select_algorithm.AlgorithmSelectorCache.benchmark_choices.__qualname__)")
    ran = _subprocess(code, "1")
    path = "register_benchmarker" if HAS_HOOK else "benchmarker instance"
    assert ran.stdout.split("\n")[:3] == [path, "True None 1", "False"], ran.stderr


def test_install_readies_the_measuring_on_the_cuda_device_torch_sees_and_not_without_one(monkeypatch):
    readied = []
    monkeypatch.setattr(inductor, "ready", lambda settings, call: readied.append((settings, call)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    inductor.install()
    assert readied == []  # no CUDA device: nothing to ready
    inductor.uninstall()
    made = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(torch, "empty", lambda size, device: made.append((size, device)) or torch.zeros(size))
    inductor.install(precision=0.02)
    assert made == [(1, torch.device("cuda", 3))]  # a one-element tensor on torch's current device
    [(settings, call)] = readied
    assert settings.policy.options.precision == 0.02 and call.__name__ == "zero_"
    with pytest.raises(BenchError, match="^pyhipbench.inductor is installed already"):
        inductor.install()
    assert len(readied) == 1  # a refused second install readies nothing


def test_the_ledger_is_the_installations_and_none_without_one():
    assert inductor.ledger() is None
    inductor.install()
    book = inductor.ledger()
    assert isinstance(book, inductor.Ledger) and book.to_dict()["measurements"] == 0 and book is inductor.ledger()
    inductor.uninstall()
    assert inductor.ledger() is None


def test_install_without_an_importable_torch_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(BenchError, match=r"^pyhipbench.inductor.install\(\): torch cannot be imported \(.*\); "
                                         r"expected torch 2.11 or later$"):
        inductor.install()
    assert inductor.installed() is None


def test_an_environment_installation_torch_refuses_leaves_nothing_replaced(monkeypatch):
    """The choice list replaced as select_algorithm imported, then the benchmarker unreachable: both undone."""
    from pyhipbench.inductor import _installation
    from pyhipbench.inductor._torch_paths import BENCHMARKING, SELECT_ALGORITHM
    choices_before = vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"]
    monkeypatch.setenv(inductor.ENV_VAR, "1")
    _installation.install_from_environment(SELECT_ALGORITHM)
    assert vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"] is not choices_before

    def unreachable(module, version):
        raise BenchError(f"torch {version}: its benchmarker cannot be reached")
    monkeypatch.setattr(_installation, "path_of", unreachable)
    with pytest.raises(BenchError, match=r"^torch .*: its benchmarker cannot be reached$"):
        _installation.install_from_environment(BENCHMARKING)
    assert inductor.installed() is None and inductor.ledger() is None
    assert vars(select_algorithm.AlgorithmSelectorCache)["benchmark_choices"] is choices_before
