"""The median's confidence interval and the summary statistics, on synthetic samples."""
from __future__ import annotations

import numpy as np
import pytest

from pyhipbench._measure.stats import median_ci, summarize


def test_median_ci_covers_the_true_median_at_the_stated_rate():
    # Skewed (log-normal) samples: the interval must hold the true median ~95 % of the time.
    rng = np.random.default_rng(1)
    true_median = np.exp(0.0)
    hits = 0
    for _ in range(2000):
        sample = np.sort(rng.lognormal(0.0, 0.5, 101))
        low, high = median_ci(sample, 0.95)
        hits += low <= true_median <= high
    assert 0.93 <= hits / 2000 <= 0.99


def test_median_ci_narrows_with_more_samples():
    rng = np.random.default_rng(2)
    widths = []
    for n in (20, 200, 2000):
        s = summarize(rng.normal(10.0, 0.5, n))
        widths.append(s.rel_ci)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < 0.01  # 2000 samples of ±5 % noise: well under ±1 %


def test_too_few_samples_give_the_whole_range():
    s = summarize(np.array([3.0, 1.0, 2.0]))
    assert (s.ci_low, s.ci_high) == (1.0, 3.0)
    assert s.median == 2.0 and s.count == 3


def test_summary_fields():
    times = np.array([1.0] * 9 + [2.0] * 10 + [100.0])
    s = summarize(times)
    assert s.median == 2.0 and s.min == 1.0 and s.max == 100.0
    assert s.outliers == 1                       # only the 100 µs sample is beyond the fences
    assert s.mean == pytest.approx(times.mean())
    assert s.stdev == pytest.approx(np.std(times, ddof=1))
    assert s.p10 == pytest.approx(np.percentile(times, 10))


def test_constant_samples_have_zero_width():
    s = summarize(np.full(50, 4.0))
    assert s.rel_ci == 0.0 and s.outliers == 0
