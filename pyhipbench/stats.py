"""Statistics of a sample of kernel times: the median, its confidence interval, spread, outliers.

Kernel times are skewed (a floor set by the hardware, a tail from clocks,
interrupts and the launch path), so the centre is the median and its
confidence interval is the distribution-free one from order statistics: with
n samples the number below the true median is Binomial(n, 1/2), so the sorted
samples at ranks n/2 ± z·√n/2 bracket it with the stated confidence. No
normality is assumed, and it is cheap enough to re-evaluate after every chunk.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class Summary:
    """Statistics of one sample, all in µs except the counts and `rel_ci`."""
    count: int
    median: float
    ci_low: float        # the median's confidence interval, µs
    ci_high: float
    confidence: float    # e.g. 0.95
    mean: float
    stdev: float         # sample standard deviation (0 for one sample)
    min: float
    max: float
    p10: float
    p90: float
    outliers: int        # samples beyond Tukey's fences (1.5 IQR outside the quartiles)

    @property
    def rel_ci(self) -> float:
        """Half-width of the median's confidence interval over the median (0.01 = ±1 %)."""
        return (self.ci_high - self.ci_low) / (2 * self.median) if self.median > 0 else math.inf


def median_ci(sorted_times: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The median's distribution-free confidence interval from sorted samples (µs).

    With too few samples for the confidence asked, the interval is the whole
    sample range (the widest honest answer), never narrower than the data allow.
    """
    n = len(sorted_times)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * math.sqrt(n) / 2
    low = max(math.floor(n / 2 - half), 0)           # 0-based ranks
    high = min(math.ceil(n / 2 + half), n - 1)
    return float(sorted_times[low]), float(sorted_times[high])


def summarize(times_us: np.ndarray, confidence: float = 0.95) -> Summary:
    """All statistics of `times_us` (µs); `confidence` in (0, 1) for the median's interval."""
    times = np.sort(np.asarray(times_us, dtype=np.float64))
    if len(times) == 0:
        raise ValueError("no samples to summarize")
    q1, median, q3, p10, p90 = np.percentile(times, [25, 50, 75, 10, 90])
    fence = 1.5 * (q3 - q1)
    outliers = int(np.count_nonzero((times < q1 - fence) | (times > q3 + fence)))
    low, high = median_ci(times, confidence)
    stdev = float(np.std(times, ddof=1)) if len(times) > 1 else 0.0
    return Summary(len(times), float(median), low, high, confidence, float(np.mean(times)), stdev,
                   float(times[0]), float(times[-1]), float(p10), float(p90), outliers)
