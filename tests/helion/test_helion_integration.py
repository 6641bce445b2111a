"""pyhipbench.helion with the real Helion (the pinned release) and torch: the settings, the refusals, the search
Helion builds given pyhipbench's provider, and that provider's checks and measuring on the fake CUDA driver
(torch's tensors on the CPU stand in for the kernel's outputs; the kernel's launch is the fake's)."""
from __future__ import annotations

import math
import types

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: pyhipbench.helion's tests need torch and Helion")
helion = pytest.importorskip("helion", reason="Helion is not installed (pip install helion==1.5.0): "
                                              "pyhipbench.helion's tests need it")

import helion.language as hl
from helion.autotuner.base_search import BaseSearch
from helion.autotuner.local_cache import LocalAutotuneCache

import pyhipbench.helion as hbh
from pyhipbench.errors import BenchError
from pyhipbench.helion import version
from pyhipbench.helion.autotuner import Autotuner
from pyhipbench.helion.first_pass import FirstPass
from pyhipbench.helion.ledger import Ledger
from pyhipbench.helion.provider import RacingProvider


def test_the_pinned_release_is_installed_and_its_settings_take_the_integration():
    measuring = hbh.Measuring(timer="events")
    settings = helion.Settings(**measuring.settings())
    assert isinstance(settings.autotuner_fn, Autotuner) and settings.autotune_benchmark_fn is not None
    assert hbh.HELION_VERSION == "1.5.0"


@pytest.mark.parametrize(("keywords", "message"), [
    ({"race": "yes"}, r"^race='yes': expected True \(the default\) or False$"),
    ({"tie_hold_s": "long"}, r"^tie_hold_s='long': "),
    ({"device": 0}, r"^pyhipbench.helion device=0: expected a pyhipbench.Device or None$"),
    ({"slower_than_us": 3.0}, r"^pyhipbench.helion option slower_than_us=3.0: racing sets it"),
    ({"cache": "dirty-cold"}, r"^pyhipbench.helion cache='dirty-cold': its candidates' buffers are their own"),
    ({"repeat": 10}, r"^pyhipbench.helion option\(s\) 'repeat' unknown; expected "),
    ({"rotate": 4}, r"^pyhipbench.helion option\(s\) 'rotate' unknown; expected "),
])
def test_a_setting_of_the_wrong_type_is_refused_in_one_line(keywords, message):
    with pytest.raises(BenchError, match=message) as refused:
        hbh.Measuring(**keywords)
    assert "\n" not in str(refused.value)


def test_a_helion_release_it_does_not_know_is_refused_in_one_line(monkeypatch):
    monkeypatch.setattr(version, "version", lambda name: "1.5.1")
    with pytest.raises(BenchError, match=r"^Helion 1.5.1 is installed; pyhipbench.helion reaches Helion's benchmark "
                                         r"provider, whose internals change between releases, and knows 1.5.0 only; "
                                         r"expected `pip install helion==1.5.0`$"):
        hbh.Measuring()


@helion.kernel(autotune_effort="quick")
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile] + y[tile]
    return out


@pytest.fixture
def no_hardware_cache_key(monkeypatch):
    """Helion's cache keys a search by the GPU it runs on; there is none here."""
    monkeypatch.setattr(LocalAutotuneCache, "_generate_key", lambda self: "cpu-test-key")


def test_helions_own_search_is_built_with_pyhipbenchs_provider(no_hardware_cache_key):
    x, y = torch.randn(64), torch.randn(64)
    bound = add.bind((x, y))
    measuring = hbh.Measuring()
    tuner = measuring.settings()["autotuner_fn"](bound, (x, y))
    assert isinstance(tuner, LocalAutotuneCache) and isinstance(tuner.autotuner, BaseSearch)
    assert type(tuner.autotuner).__name__ == "LFBOTreeSearch"  # Helion's default search, as Helion builds it
    provider = tuner.autotuner._benchmark_provider_cls
    assert provider.func is RacingProvider and provider.keywords["first_pass"].ledger is measuring.ledger
    # Each search best-of-K builds gets a provider of its own: its race starts from no bound.
    again = tuner._autotuner_factory()._benchmark_provider_cls
    assert again.func is RacingProvider and again.keywords["first_pass"] is not provider.keywords["first_pass"]


def test_a_backend_that_times_its_own_kernels_is_refused_in_one_line(no_hardware_cache_key):
    x, y = torch.randn(64), torch.randn(64)
    bound = add.bind((x, y))
    own_timer = types.SimpleNamespace(name="pallas", get_do_bench=lambda: (lambda fn: 1.0))
    fake = types.SimpleNamespace(config_spec=types.SimpleNamespace(backend=own_timer), settings=bound.settings)
    with pytest.raises(BenchError, match=r"^pyhipbench.helion: backend 'pallas' times its kernels its own way; "
                                         r"expected Helion's triton backend$"):
        hbh.Measuring().settings()["autotuner_fn"](fake, (x, y))


def test_each_candidate_is_checked_against_the_baseline_then_raced_and_a_failure_costs_only_itself(device, call,
                                                                                                   policy,
                                                                                                   racing_provider):
    baseline = torch.arange(8.0)
    ledger = Ledger()
    first_pass = FirstPass(policy(), device, ledger)
    bench_calls = {"fast": call(2.0), "slow": call(8.0, step_us=0.05), "wrong": call(1.0)}
    provider = racing_provider(first_pass, baseline, bench_calls)
    outputs = {"fast": baseline.clone(), "slow": baseline.clone(), "wrong": baseline + 1}

    def compiled(config):
        return lambda: outputs[config]

    def raises():
        raise RuntimeError("PassManager::run failed")

    assert provider._benchmark_function("fast", compiled("fast")) == pytest.approx(0.002)
    assert math.isinf(provider._benchmark_function("wrong", compiled("wrong")))  # never measured
    assert math.isinf(provider._benchmark_function("broken", raises))
    assert provider._benchmark_function("slow", compiled("slow")) > 0.002
    assert ledger.configs_measured == 2 and ledger.stopped_slower == 1 and ledger.configs_failed == 2
    assert provider._autotune_metrics.num_configs_tested == 4
    assert provider._accuracy_failure_config_ids == [id("wrong")]
    assert provider._compile_failure_config_ids == [id("broken")]
    assert any(line.startswith("Skipping config with accuracy mismatch: 'wrong'") for line in provider.log.lines)
    assert ledger.check_s > 0 and ledger.measure_s > 0


def test_a_fault_that_poisons_the_context_ends_the_search_as_helion_ends_it(device, call, policy, racing_provider):
    def faulting():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    provider = racing_provider(FirstPass(policy(), device, Ledger()), torch.zeros(1), {})
    with pytest.raises(helion.exc.TritonUnrecoverableRuntimeError, match="illegal memory access"):
        provider._benchmark_function("faulting", faulting)


def test_a_check_in_helions_worker_decides_and_its_wait_is_counted(device, call, policy, racing_provider):
    """Where Helion checks in its worker, the worker's verdict decides (an output off the baseline here is
    measured once the worker passed it; a timeout there costs only that candidate) and the ledger counts the
    wait apart."""
    from helion.autotuner.benchmark_job import AccuracyCheckResult
    from helion.autotuner.benchmark_worker import BenchmarkTimeout
    baseline = torch.arange(8.0)
    ledger = Ledger()
    provider = racing_provider(FirstPass(policy(), device, ledger), baseline, {"passes": call(2.0)})
    provider._subprocess_accuracy_check_enabled = lambda: True
    verdicts = {"passes": AccuracyCheckResult(ok=True), "hangs": BenchmarkTimeout("benchmark timeout after 30.0s")}

    def in_worker(fn):
        verdict = verdicts[fn.config]
        if isinstance(verdict, Exception):
            raise verdict
        return verdict
    provider._run_subprocess_accuracy_check_job = in_worker

    def compiled(config):
        fn = lambda: baseline + 1  # noqa: E731  # off the baseline: only the worker's verdict lets it pass
        fn.config = config
        return fn
    assert provider._benchmark_function("passes", compiled("passes")) == pytest.approx(0.002)
    assert math.isinf(provider._benchmark_function("hangs", compiled("hangs")))
    assert provider._worker_failure_config_ids == [id("hangs")] and provider._accuracy_failure_config_ids == []
    assert any(line.startswith("Accuracy check subprocess failed for 'hangs'") for line in provider.log.lines)
    assert 0 < ledger.worker_check_s <= ledger.check_s and ledger.configs_measured == 1
