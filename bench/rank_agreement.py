"""How far two readings of the same candidates order them alike: Spearman's and Kendall's rank correlations
(ties sharing their mean rank; Kendall's tau-b), numpy only."""
from __future__ import annotations

import numpy as np


def ranks(values: list[float]) -> np.ndarray:
    """Each value's rank from 0, ties sharing their mean rank."""
    array = np.asarray(values, dtype=float)
    ranked = np.empty(len(array))
    ranked[array.argsort(kind="stable")] = np.arange(len(array), dtype=float)
    for value in np.unique(array):
        ranked[array == value] = ranked[array == value].mean()
    return ranked


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation: Pearson's of the ranks; nan where either side is constant."""
    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def kendall(x: list[float], y: list[float]) -> float:
    """Kendall's tau-b: (concordant - discordant pairs) over the pairs not tied on either side, each side's
    ties taken out (scipy.stats.kendalltau's default); nan where either side is constant."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(len(a), k=1)
    sx, sy = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    untied_x, untied_y = np.count_nonzero(sx), np.count_nonzero(sy)
    if untied_x == 0 or untied_y == 0:
        return float("nan")
    return float(np.sum(sx * sy) / np.sqrt(float(untied_x) * float(untied_y)))
