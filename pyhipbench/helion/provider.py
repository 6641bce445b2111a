"""RacingProvider: Helion 1.5.0's LocalBenchmarkProvider with its first-pass timing done by pyhipbench.

Helion's `BenchmarkProvider` is the seam its own docstring names for other
benchmarking strategies, but no public setting selects one: BaseSearch
keeps the class in `_benchmark_provider_cls` (autotuner.py sets it), and
the one per-candidate step to replace is the private `_benchmark_function`
(returns ms or inf). Everything else of the batch stays Helion's: compiling,
the fork/spawn precompile (a compile that fails or hangs costs only its
config), source deduplication, logging, the budget. Internals used, all
of Helion 1.5.0 (version.py refuses any other release):
`_subprocess_accuracy_check_enabled`, `_run_subprocess_accuracy_check_job`,
`_benchmark_worker` (held across searches: kept_worker.py, which also reaches
`BenchmarkWorker._fatal_error` and the caches of `load_trusted_kernel_args` and
`_load_trusted_baseline_output`; started at setup: worker_start.py, which calls
`BenchmarkWorker._start`), `_precompile_args_path`, `_precompile_baseline_path`,
`_validate_against_baseline`, `_record_accuracy_failure`,
`_record_compile_failure`, `_record_worker_failure`,
`_clear_jit_fast_path_caches`, `_clone_args`, `mutated_arg_indices`,
`_autotune_metrics`, `kernel.bench_compile_config`.

Each candidate: (1) run and checked against Helion's baseline, in Helion's
killable benchmark worker where Helion would use it (so a hang or a fault
there costs only this candidate), else in this process as Helion's own
in-process path does; (2) run once here (loading its code); (3) measured by
FirstPass, racing the best of the search. A fault in (2) or (3) of a
candidate that passed (1) poisons this process's CUDA context: it ends the
search with Helion's TritonUnrecoverableRuntimeError, as Helion's own
in-process timing does.
"""
from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import Any

from helion import exc
from helion.autotuner.benchmark_provider import LocalBenchmarkProvider, _clone_args
from helion.autotuner.benchmark_worker import (
    BenchmarkSubprocessError,
    BenchmarkTimeout,
    BenchmarkWorker,
    BenchmarkWorkerUnkillable,
)
from helion.autotuner.benchmarking import synchronize_device
from helion.autotuner.logger import capture_output, match_unrecoverable_runtime_error

from .first_pass import FirstPass
from .kept_worker import KEPT_WORKER, KeptWorker
from .worker_start import WorkerStart, cuda_device_index

__all__ = ["RacingProvider"]


class RacingProvider(LocalBenchmarkProvider):  # type: ignore[misc]  # Helion ships no type information
    """Helion's local provider; each candidate's timing by `first_pass` (which counts into its ledger), its
    check worker held from `kept_worker` (the process's) while the search runs."""

    kept_worker: KeptWorker = KEPT_WORKER

    def __init__(self, *, first_pass: FirstPass, **helion_keywords: Any) -> None:
        self.first_pass = first_pass
        self.holds_kept_worker = False
        self.worker_start: WorkerStart | None = None
        super().__init__(**helion_keywords)

    def setup(self) -> None:
        """Helion's setup; the kept check worker taken as Helion's own, where this search can hold it; where
        Helion will check in a worker and this search has none, one started now (worker_start.py)."""
        super().setup()
        self.holds_kept_worker, worker = self.kept_worker.hold()
        if self.holds_kept_worker:
            self._benchmark_worker = worker
        if self._will_check_in_worker() and self._benchmark_worker is None:
            self._benchmark_worker = BenchmarkWorker(device=None)  # as Helion makes it at its first check
            self.worker_start = WorkerStart(self._benchmark_worker, float(self.settings.autotune_benchmark_timeout),
                                            cuda_device_index(self.args))

    def _will_check_in_worker(self) -> bool:
        """Helion's checks go to its worker: on, with the arguments and the baseline saved for it."""
        return bool(self._subprocess_accuracy_check_enabled() and self._precompile_args_path is not None
                    and self._precompile_baseline_path is not None)

    def _worker_started(self) -> None:
        """The worker started at setup, once ready (or its readying failed); at once where none was."""
        if self.worker_start is not None:
            self.worker_start.wait()
            self.worker_start = None

    def cleanup(self) -> None:
        """The held check worker given back, still running, where it can be kept; then Helion's cleanup
        (which stops a worker not kept, as it would)."""
        self._worker_started()
        if self.holds_kept_worker:
            self.holds_kept_worker = False
            if self.kept_worker.give_back(self._benchmark_worker, float(self.settings.autotune_benchmark_timeout)):
                self._benchmark_worker = None
        super().cleanup()

    def benchmark(self, configs: list[Any], **keywords: Any) -> list[Any]:
        """Helion's batch (compile, precompile, then each candidate's `_benchmark_function`), timed."""
        ledger = self.first_pass.ledger
        ledger.configs_given += len(configs)
        started = time.perf_counter()
        try:
            return super().benchmark(configs, **keywords)  # type: ignore[no-any-return]
        finally:
            ledger.batch_s += time.perf_counter() - started

    def _benchmark_function(self, config: Any, fn: Any, *, effective_source_hash: str | None = None) -> float:
        """One compiled config: checked, then measured; ms, or inf where it failed (only it)."""
        del effective_source_hash  # a retry policy of Helion's own timer's timeouts
        self._autotune_metrics.num_configs_tested += 1
        args = self._working_args()
        ledger = self.first_pass.ledger
        started = time.perf_counter()
        try:
            passed = self._checked(config, fn, args)
        finally:
            ledger.check_s += time.perf_counter() - started
        if not passed:
            ledger.configs_failed += 1
            return math.inf
        try:
            call = functools.partial(self.kernel.bench_compile_config(config, allow_print=False), *args)
            perf_ms, error, candidate = self.first_pass.measure_ms(call, repr(config))
        finally:
            self._clear_jit_fast_path_caches(fn)
        if candidate.raised is not None:
            self._failed(config, candidate.raised)
        elif error is not None:
            self.log.warning(f"pyhipbench could not measure {config!r}: {error}")
        return perf_ms

    def _working_args(self) -> Sequence[object]:
        """The arguments, their mutated ones cloned (as Helion's own timing takes them)."""
        if len(self.mutated_arg_indices) > 0:
            return _clone_args(self.args, self.kernel.env.process_group_name,  # type: ignore[no-any-return]
                               idx_to_clone=self.mutated_arg_indices)
        return self.args  # type: ignore[no-any-return]

    def _checked(self, config: Any, fn: Any, args: Sequence[object]) -> bool:
        """The candidate ran and matched the baseline: in Helion's killable worker where Helion uses it,
        then once here (its code loaded for the measurement, its output checked here where the worker did
        not check it)."""
        checked_in_worker = False
        if self._subprocess_accuracy_check_enabled():
            try:
                outcome = self._worker_check(fn)
            except BenchmarkWorkerUnkillable:
                raise  # Helion's own rule: a worker that cannot be reaped ends the search
            except BenchmarkSubprocessError as e:
                self.log.warning(f"Accuracy check subprocess failed for {config!r}: {e}")
                self._record_worker_failure(config, "timeout" if isinstance(e, BenchmarkTimeout) else "error")
                return False
            except Exception as e:
                self.log.debug(f"Accuracy check subprocess raised for {config!r}: {type(e).__name__}: {e}")
                self._record_compile_failure(config)
                return False
            if outcome is not None:
                if not outcome.ok:
                    self.log.warning(f"Skipping config with accuracy mismatch: {config!r}\n{outcome.message}")
                    self._record_accuracy_failure(config)
                    return False
                checked_in_worker = True
        try:
            with capture_output():
                synchronize_device()
                output = fn(*args)
                synchronize_device()
        except Exception as e:
            self._failed(config, e)
            return False
        if self.settings.autotune_accuracy_check and not checked_in_worker:
            if not self._validate_against_baseline(config, output, args):
                self._record_accuracy_failure(config)
                return False
        return True

    def _worker_check(self, fn: Any) -> Any:
        """Helion's check of `fn` in its worker (the kept one, or one Helion starts now): its outcome, or None
        where Helion checks in this process; the wait counted."""
        started = time.perf_counter()
        try:
            self._worker_started()
            return self._run_subprocess_accuracy_check_job(fn)
        finally:
            self.first_pass.ledger.worker_check_s += time.perf_counter() - started

    def _failed(self, config: Any, error: BaseException) -> None:
        """A candidate that raised here: recorded as Helion records a failed config; a fault that poisons
        the CUDA context raised as Helion raises it."""
        if isinstance(error, Exception) and match_unrecoverable_runtime_error(error):
            raise exc.TritonUnrecoverableRuntimeError(
                reason=str(error), decorator=self.kernel.format_kernel_decorator(config, self.settings),
                error=f"{type(error).__qualname__}: {error}") from error
        self.log.debug(f"Benchmarking failed for {config!r}: {type(error).__name__}: {error}")
        self._record_compile_failure(config)
