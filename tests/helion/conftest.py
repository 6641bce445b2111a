"""The fixtures of tests/helion: a device on the fake CUDA driver, Helion-shaped candidates that run on it, and
Helion's provider as pyhipbench gives it (made without a GPU)."""
from __future__ import annotations

import itertools
import types

import pytest

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._measure.options import BenchOptions
from pyhipbench._tuning.engine import Policy

from fakes.host_backend import HostBackend


@pytest.fixture
def policy():
    """The engine's policy for a test's candidates: events on a warm cache, no warm-up, `options` added."""
    def make(race: bool = True, tie_hold_s: float | None = None, **options: object) -> Policy:
        keywords = {"timer": "events", "cache": "warm", "warmup": 0, **options}
        return Policy.checked(BenchOptions.from_keywords("test", keywords), race, tie_hold_s)
    return make


@pytest.fixture
def call(fake_driver_cuda, fake_cupti):
    """A candidate whose kernel takes `us` µs on the fake clock from its first call on (each call `step_us` more
    than the last: the fake adds the step at each launch). (fake_cupti: skipped in a process where the real
    driver is loaded, whose torch would capture the call.)"""
    def make(us: float, step_us: float = 0.0):
        calls = []

        def candidate() -> None:
            if not calls or step_us == 0:  # a candidate is measured in one piece: its first call sets the clock
                fake_driver_cuda.lib.fake_set_launch_ms(us / 1000)
                fake_driver_cuda.lib.fake_set_launch_ms_step(step_us / 1000)
            calls.append(1)
            fake_driver_cuda.runtime_launch(0xA1, 1, 64)
        return candidate
    return make


@pytest.fixture
def device(fake_libraries, fake_driver_cuda):
    return hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"),
                                  _core.load_driver("cuda", str(fake_libraries["cuda"])))


class Log:
    """Helion's AutotuningLogger as the provider calls it: each line kept."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def warning(self, message: str, *args: object, **kwargs: object) -> None:
        self.lines.append(message)

    debug = warning


@pytest.fixture
def racing_provider():
    """A RacingProvider as Helion's search holds one after its baseline ran, without a GPU: Helion's own checks
    (settings, tolerances, the baseline), in this process, and a kernel whose bench_compile_config gives
    `bench_calls[config]`. (Helion's __init__ runs the baseline kernel on a GPU.)"""
    import helion

    from pyhipbench.helion.kept_worker import KeptWorker
    from pyhipbench.helion.provider import RacingProvider

    def make(first_pass, baseline, bench_calls: dict) -> RacingProvider:
        provider = RacingProvider.__new__(RacingProvider)
        provider.first_pass, provider.holds_kept_worker, provider.worker_start = first_pass, False, None
        provider.kept_worker = KeptWorker()  # the test's own, not the process's
        provider.settings = helion.Settings(autotune_benchmark_subprocess=False, autotune_accuracy_check=True)
        provider.kernel = types.SimpleNamespace(
            bench_compile_config=lambda config, allow_print: bench_calls[config],
            format_kernel_decorator=lambda config, settings: f"@helion.kernel(config={config!r})",
            env=types.SimpleNamespace(process_group_name=None))
        provider.args, provider.mutated_arg_indices, provider.log = (), [], Log()
        provider._autotune_metrics = types.SimpleNamespace(num_configs_tested=0, num_accuracy_failures=0,
                                                           num_compile_failures=0, num_worker_failures=0)
        provider._baseline_output, provider._baseline_post_args = baseline, None
        provider._effective_atol, provider._effective_rtol, provider._scale_atol = 1e-5, 1e-5, False
        provider._accuracy_failure_config_ids, provider._compile_failure_config_ids = [], []
        provider._worker_failure_config_ids = []
        # What Helion's setup and cleanup read and reset (its __init__ sets them).
        provider._benchmark_worker, provider._precompile_tmpdir = None, None
        provider._precompile_args_path = provider._precompile_baseline_path = None
        provider._args_unpicklable = provider._subprocess_wrapper_unloadable = False
        provider._precompile_result_counter = itertools.count()
        provider._effective_source_hashes, provider._effective_source_results = set(), {}
        provider._invalid_effective_source_hashes, provider._pending_effective_source_failures = set(), {}
        provider._effective_source_repairs, provider._compiler_seed_source_hashes = {}, set()
        provider._compiler_seed_timeout_retry_claims = set()
        return provider
    return make
