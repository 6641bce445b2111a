"""B against A, kernel by kernel: faster, slower, the same, or can't tell.

Results are paired by `report.match_key` (kernel name, grid, block, cache
state, timer). Each pair is judged from the relative difference of the
medians, d = B / A - 1, and its 95 % confidence interval, by the core's
`judge` (statistics.hpp: the rule racing uses too), against `threshold`, the
smallest difference that matters (default 2 %):

- both sides with their samples (JSON reports): a bootstrap of the median
  ratio, `RESAMPLES` resamples of each side, its 2.5th and 97.5th percentiles
  (each resample's median drawn from its law, not by drawing the resample: a
  side of 10**6 samples costs a sort);
- otherwise (a sweep database keeps no samples): from the medians' own CIs,
  their half-widths combined as independent errors on the log scale.

The generator is seeded, so the same two files always give the same verdicts.
`environment_differences` and `clock_differences` say where the two sides'
conditions differ (devices, drivers, clocks), for a warning beside them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .._values import real, show
from ..errors import BenchError
from .report import ACROSS, match_key

__all__ = ["Comparison", "compare", "why_unmatched", "environment_differences", "clock_differences",
           "DEFAULT_THRESHOLD", "RESAMPLES"]

DEFAULT_THRESHOLD = _core.DEFAULT_THRESHOLD  # 0.02: the core's, so racing and compare agree
RESAMPLES = 2000


@dataclass(frozen=True)
class Comparison:
    """How B's median compares with A's for one kernel and launch."""

    key: str              # kernel, launch, cache state and timer
    a_median_us: float
    b_median_us: float
    ratio_low: float      # the 95 % confidence interval of B's median over A's
    ratio_high: float
    method: str           # "bootstrap" (both sides' samples) or "intervals" (the medians' CIs)
    verdict: str          # "faster", "slower", "same" or "can't tell": B against A

    @property
    def ratio(self) -> float:
        """B's median over A's."""
        return self.b_median_us / self.a_median_us


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]], threshold: float = DEFAULT_THRESHOLD,
            across: tuple[str, ...] = ()) -> list[Comparison]:
    """B against A (checked results, `report.check_results`) for every kernel and launch in both, in B's
    order; `threshold`: the smallest relative difference that counts (0.02 = 2 %), in [0, 1); `across`:
    pair results whatever their cache state ("cache") or timer ("timer") too. BenchError where a side then
    holds two results for one pairing."""
    threshold = real("threshold", threshold, minimum=0, below=1)
    unknown = [name for name in across if name not in ACROSS]
    if unknown:
        raise BenchError(f"across={show(tuple(across))}: {', '.join(map(repr, unknown))} unknown; expected any of "
                         f"{', '.join(ACROSS)}")
    in_a = _by_key(a, across, "A")
    _by_key(b, across, "B")
    rng = np.random.default_rng(0)
    out = []
    for rb in b:
        key = match_key(rb, across)
        ra = in_a.get(key)
        if ra is None:
            continue
        sa, sb = ra["stats_us"], rb["stats_us"]
        ratio = sb["median"] / sa["median"]
        ta, tb = ra.get("times_us"), rb.get("times_us")
        if ta is not None and tb is not None:
            low, high = _bootstrap_ratio_ci(np.asarray(ta, np.float64), np.asarray(tb, np.float64), rng)
            method = "bootstrap"
        else:
            low, high = _interval_ratio_ci(sa, sb)
            method = "intervals"
        low, high = min(low, ratio), max(high, ratio)  # the estimate always within its interval
        verdict = _core.judge(ratio - 1, low - 1, high - 1, threshold)
        out.append(Comparison(key, sa["median"], sb["median"], low, high, method, verdict))
    return out


def _by_key(results: list[dict[str, Any]], across: tuple[str, ...], side: str) -> dict[str, dict[str, Any]]:
    keyed: dict[str, dict[str, Any]] = {}
    for r in results:
        key = match_key(r, across)
        if key in keyed:
            raise BenchError(f"{side} holds two results for {key} across {' and '.join(across)}: "
                             f"{match_key(keyed[key])} and {match_key(r)}; expected one each to compare")
        keyed[key] = r
    return keyed


def why_unmatched(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> str:
    """Why no result of B pairs with one of A: the nearest pair and what differs, with the option that
    would pair them where there is one."""
    for across in (("cache",), ("timer",), ("cache", "timer")):
        keys_a = {match_key(r, across): r for r in a}
        for rb in b:
            ra = keys_a.get(match_key(rb, across))
            if ra is not None:
                differ = " and ".join({"cache": "cache state", "timer": "timer"}[name] for name in across)
                return (f"the nearest pair differs in {differ}: A {match_key(ra)}, B {match_key(rb)}; pass "
                        f"{' '.join(f'--across {name}' for name in across)} to compare across {differ}")
    kernels_a, kernels_b = sorted({r["kernel"] for r in a}), sorted({r["kernel"] for r in b})
    common = sorted(set(kernels_a) & set(kernels_b))
    if common:
        return f"{common[0]} ran with other grids or blocks in A and B"
    return f"A times {', '.join(kernels_a[:3])}, B {', '.join(kernels_b[:3])}: no kernel in common"


# What makes two devices different for a comparison, as environment.py records them.
_DEVICE_FIELDS = ("name", "uuid", "pci_bus_id", "driver_version", "api_version", "default_sm_clock_mhz",
                  "max_sm_clock_mhz", "power_limit_w", "ecc_enabled")


def environment_differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """How the devices A and B ran on differ (environment.py's records), one line each; a side without
    an environment (a report of schema version 1) cannot be checked, and says so."""
    missing = [side for side, env in (("A", a), ("B", b)) if env is None]
    if missing:
        return [f"{' and '.join(missing)} recorded no environment (schema version 1): cannot check that both "
                "ran on the same device, driver and clocks"]
    assert a is not None and b is not None
    lines = []
    for i, (da, db) in enumerate(zip(a["devices"], b["devices"])):
        for name in _DEVICE_FIELDS:
            va, vb = da.get(name), db.get(name)
            if va != vb and va is not None and vb is not None:
                lines.append(f"device {i}: {name} differs: A {va}, B {vb}")
    if len(a["devices"]) != len(b["devices"]):
        lines.append(f"A ran on {len(a['devices'])} device(s), B on {len(b['devices'])}")
    return lines


def clock_differences(a: list[dict[str, Any]], b: list[dict[str, Any]], threshold: float,
                      across: tuple[str, ...] = ()) -> list[str]:
    """The matched results whose mean SM clocks (MHz) differ by more than `threshold`, one line each."""
    clocks = {match_key(r, across): (r.get("clock_mhz") or {}).get("mean") for r in a}
    lines = []
    for r in b:
        mhz_a, mhz_b = clocks.get(match_key(r, across)), (r.get("clock_mhz") or {}).get("mean")
        if mhz_a and mhz_b and abs(mhz_b / mhz_a - 1) > threshold:
            lines.append(f"{match_key(r, across)}: SM clock A {mhz_a:.0f} MHz, B {mhz_b:.0f} MHz")
    return lines


def _interval_ratio_ci(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """The 95 % interval of median(B) / median(A) from the two medians' 95 % CIs (`stats_us`), as
    independent errors on the log scale: each end's distance from the ratio is the root sum of squares
    of the two ends it draws on (A's high end and B's low for the low end), so skewed CIs stay skewed."""
    def log_span(far: float, median: float) -> float:
        return abs(math.log(far / median)) if far > 0 else math.inf

    ratio = b["median"] / a["median"]
    below = math.hypot(log_span(a["ci_high"], a["median"]), log_span(b["ci_low"], b["median"]))
    above = math.hypot(log_span(a["ci_low"], a["median"]), log_span(b["ci_high"], b["median"]))
    return ratio * math.exp(-below), ratio * math.exp(above) if above < 700 else math.inf


def _bootstrap_ratio_ci(a_us: np.ndarray, b_us: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The 95 % percentile-bootstrap interval of median(B) / median(A)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample of A with median 0: inf, or nan if B's is too
        ratios = _bootstrap_medians(b_us, rng) / _bootstrap_medians(a_us, rng)
    ratios[np.isnan(ratios)] = 1.0
    # The order statistics themselves, not interpolated between them (and so never inf - inf).
    return (float(np.percentile(ratios, 2.5, method="lower")), float(np.percentile(ratios, 97.5, method="higher")))


def _bootstrap_medians(times_us: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The medians of RESAMPLES resamples (with replacement) of `times_us`, drawn without drawing the resamples.

    A resample of n is n uniform draws u mapped to the sorted samples' [floor(u n)], a map that keeps order, so
    its median is the sorted samples at the middle order statistics of n uniforms, whose law is known: the k-th
    smallest is Beta(k, n - k + 1), and the next, given it, is it plus the rest of [0, 1] times Beta(1, n - k)
    (the least of the n - k above it). The same law as resampling, in O(n log n + RESAMPLES) time and O(n)
    memory, however many samples a side has (drawing the resamples of 10**6 samples draws 2 * 10**9 values).
    """
    n = len(times_us)
    ordered = np.sort(times_us)
    k = (n + 1) // 2  # the middle (n odd), or the lower of the two middles (n even), counting from 1
    lower = rng.beta(k, n - k + 1, RESAMPLES)
    upper = lower if n % 2 else lower + (1 - lower) * rng.beta(1, n - k, RESAMPLES)

    def sample_at(u: np.ndarray) -> np.ndarray:
        return ordered[np.minimum((u * n).astype(np.int64), n - 1)]
    return (sample_at(lower) + sample_at(upper)) / 2  # np.median's: the mean of the two middles
