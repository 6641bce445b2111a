"""Statistics of a sample of kernel times: the median, its confidence interval, spread, outliers.

Kernel times are skewed (a floor set by the hardware, a tail from clocks,
interrupts and the launch path), so the centre is the median and its
confidence interval is the distribution-free one from order statistics: with
n samples the number below the true median is Binomial(n, 1/2), so the sorted
samples at ranks n/2 ± z·√n/2 bracket it with the stated confidence. No
normality is assumed, and it is cheap enough to re-evaluate after every chunk.

The C++ core owns the computation (csrc/include/pyhipbench/statistics.hpp),
since its stopping rule needs it after every chunk; this module binds it.
Percentiles interpolate linearly, as numpy.percentile does by default.
"""
from __future__ import annotations

import numpy as np

from .. import _core

Summary = _core.Summary  # count, median, ci_low, ci_high, confidence, mean, stdev, min, max, p10, p90,
#                          outliers, rel_ci; all µs except the counts, confidence and rel_ci


def median_ci(sorted_times: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The median's distribution-free confidence interval from sorted samples (µs).

    With too few samples for the confidence asked, the interval is the whole
    sample range (the widest honest answer), never narrower than the data allow.
    """
    return _core.median_ci(np.asarray(sorted_times, dtype=np.float64), confidence)


def summarize(times_us: np.ndarray, confidence: float = 0.95) -> Summary:
    """All statistics of `times_us` (µs); `confidence` in (0, 1) for the median's interval.

    No samples, a time that is not finite or a confidence outside (0, 1): BenchError.
    """
    return _core.summarize(np.asarray(times_us, dtype=np.float64), confidence)
