"""RacingProvider: Helion 1.5.0's LocalBenchmarkProvider with its first-pass timing done by pyhipbench.

Helion's `BenchmarkProvider` is the seam its own docstring names for other
benchmarking strategies, but no public setting selects one: BaseSearch
keeps the class in `_benchmark_provider_cls` (autotuner.py sets it), and
the one per-candidate step to replace is the private `_benchmark_function`
(returns ms or inf). Everything else of the batch stays Helion's: compiling,
the fork/spawn precompile (a compile that fails or hangs costs only its
config), source deduplication, logging, the budget. Internals used, all
of Helion 1.5.0 (version.py refuses any other release):
`_subprocess_accuracy_check_enabled`, `_create_precompile_future`,
`_serialize_compiled_fn`, `AccuracyCheckJob` (with `_precompile_args_path`,
`_precompile_baseline_path`, `_effective_atol`, `_effective_rtol`,
`_scale_atol`), `CompiledFunctionLoadError`,
`_disable_unloadable_benchmark_worker`, `BenchmarkWorker` (checks.py),
`_validate_against_baseline`, `_record_accuracy_failure`,
`_record_compile_failure`, `_record_worker_failure`,
`_clear_jit_fast_path_caches`, `_clone_args`, `mutated_arg_indices`,
`_autotune_metrics`, `kernel.bench_compile_config`.

Each candidate: (1) run and checked against Helion's baseline, with Helion's
job in Helion's killable benchmark workers where Helion would use its one
worker (so a hang or a fault there costs only this candidate), else in this
process as Helion's own in-process path does; (2) run once here (loading
its code); (3) measured by FirstPass, racing the best of the search. The
checks of (1) run for the whole batch at once, in a CheckPool of several
workers, when the batch's first candidate is taken (Helion precompiles the
batch before it takes any): each job loads code and reads files, seconds
of a batch that one worker spends one job after another. A fault in (2) or
(3) of a candidate that passed (1) poisons this process's CUDA context: it
ends the search with Helion's TritonUnrecoverableRuntimeError, as Helion's
own in-process timing does.
"""
from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from typing import Any

from helion import exc
from helion.autotuner.benchmark_job import AccuracyCheckJob, AccuracyCheckResult, CompiledFunctionLoadError
from helion.autotuner.benchmark_provider import LocalBenchmarkProvider, _clone_args
from helion.autotuner.benchmark_worker import BenchmarkSubprocessError, BenchmarkTimeout, BenchmarkWorkerUnkillable
from helion.autotuner.benchmarking import synchronize_device
from helion.autotuner.logger import capture_output, match_unrecoverable_runtime_error
from helion.autotuner.precompile_future import PrecompileFuture, _serialize_compiled_fn

from .checks import CheckOutcome, CheckPool
from .first_pass import FirstPass

__all__ = ["RacingProvider"]


class RacingProvider(LocalBenchmarkProvider):  # type: ignore[misc]  # Helion ships no type information
    """Helion's local provider; each candidate's timing by `first_pass` (which counts into its ledger), the
    checks in Helion's workers by a CheckPool of `check_workers`."""

    def __init__(self, *, first_pass: FirstPass, check_workers: int, **helion_keywords: Any) -> None:
        self.first_pass, self.check_workers = first_pass, check_workers
        self.checks: CheckPool | None = None
        self._precompiled: list[tuple[Any, PrecompileFuture]] = []  # this batch's, not yet checked
        self._check_outcomes: dict[int, tuple[Any, CheckOutcome | None]] = {}  # by id(fn), fn kept: no id reused
        super().__init__(**helion_keywords)

    def setup(self) -> None:
        """Helion's setup (the arguments and baseline written for its workers), then the check pool started,
        its workers' spawns overlapping the first batch's compile."""
        super().setup()
        if self._subprocess_accuracy_check_enabled():
            self.checks = CheckPool(self.check_workers)
            self.checks.start(float(self.settings.autotune_benchmark_timeout))

    def cleanup(self) -> None:
        """The check pool's workers stopped, then Helion's cleanup."""
        if self.checks is not None:
            self.checks.shutdown()
            self.checks = None
        super().cleanup()

    def _create_precompile_future(self, config: Any, fn: Any) -> PrecompileFuture:
        """Helion's precompile of `fn`, remembered: the batch's checks start once the batch precompiled."""
        future = super()._create_precompile_future(config, fn)
        self._precompiled.append((fn, future))
        return future

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
        """The candidate ran and matched the baseline: in Helion's killable workers where Helion uses its
        one, then once here (its code loaded for the measurement, its output checked here where no worker
        checked it)."""
        outcome = self._worker_check(fn)
        if outcome is not None and outcome.error is not None:
            error = outcome.error
            if isinstance(error, BenchmarkWorkerUnkillable):
                raise error  # Helion's own rule: a worker that cannot be reaped ends the search
            if isinstance(error, BenchmarkSubprocessError):
                self.log.warning(f"Accuracy check subprocess failed for {config!r}: {error}")
                self._record_worker_failure(config, "timeout" if isinstance(error, BenchmarkTimeout) else "error")
                return False
            self.log.debug(f"Accuracy check subprocess raised for {config!r}: {type(error).__name__}: {error}")
            self._record_compile_failure(config)
            return False
        if outcome is not None:
            assert isinstance(outcome.result, AccuracyCheckResult)
            if not outcome.result.ok:
                self.log.warning(f"Skipping config with accuracy mismatch: {config!r}\n{outcome.result.message}")
                self._record_accuracy_failure(config)
                return False
        try:
            with capture_output():
                synchronize_device()
                output = fn(*args)
                synchronize_device()
        except Exception as e:
            self._failed(config, e)
            return False
        if self.settings.autotune_accuracy_check and outcome is None:
            if not self._validate_against_baseline(config, output, args):
                self._record_accuracy_failure(config)
                return False
        return True

    def _worker_check(self, fn: Any) -> CheckOutcome | None:
        """`fn`'s check in a worker, or None where it is checked in this process (Helion's rules: no worker
        check asked for, or `fn` cannot be sent to one). Taking a candidate the pool has not checked runs
        the checks of the batch precompiled with it, together."""
        if self.checks is None or not self._subprocess_accuracy_check_enabled():
            return None
        if id(fn) not in self._check_outcomes:
            batch = [f for f, future in self._precompiled if future.ok]
            if all(f is not fn for f in batch):
                batch.append(fn)
            self._precompiled.clear()
            jobs = {id(f): job for f in batch if (job := self._check_job(f)) is not None}
            started = time.perf_counter()
            try:
                outcomes = self.checks.run(jobs, float(self.settings.autotune_benchmark_timeout))
            finally:
                self.first_pass.ledger.worker_check_s += time.perf_counter() - started
            self._check_outcomes = {id(f): (f, outcomes.get(id(f))) for f in batch}
        _, outcome = self._check_outcomes.pop(id(fn))
        if outcome is not None and isinstance(outcome.error, CompiledFunctionLoadError):
            self._disable_unloadable_benchmark_worker(outcome.error)  # Helion's rule: every later check in here
            return None
        return outcome

    def _check_job(self, fn: Any) -> AccuracyCheckJob | None:
        """Helion's check job for `fn`, as its `_run_subprocess_accuracy_check_job` builds it; None where
        Helion checks in this process instead (no files written for its worker, `fn` not serialisable)."""
        if self._precompile_args_path is None or self._precompile_baseline_path is None:
            return None
        try:
            fn_spec = _serialize_compiled_fn(fn)
        except RuntimeError:
            return None
        return AccuracyCheckJob(fn_spec=fn_spec, args_path=self._precompile_args_path,
                                baseline_path=self._precompile_baseline_path, atol=self._effective_atol,
                                rtol=self._effective_rtol, scale_atol=self._scale_atol)

    def _failed(self, config: Any, error: BaseException) -> None:
        """A candidate that raised here: recorded as Helion records a failed config; a fault that poisons
        the CUDA context raised as Helion raises it."""
        if isinstance(error, Exception) and match_unrecoverable_runtime_error(error):
            raise exc.TritonUnrecoverableRuntimeError(
                reason=str(error), decorator=self.kernel.format_kernel_decorator(config, self.settings),
                error=f"{type(error).__qualname__}: {error}") from error
        self.log.debug(f"Benchmarking failed for {config!r}: {type(error).__name__}: {error}")
        self._record_compile_failure(config)
