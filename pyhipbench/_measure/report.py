"""Results as JSON, CSV and markdown, and the comparison of two sets of results.

A report is a list of results, each `Result.to_dict()`. `write_report` picks
the format from the file's suffix (.json, .csv, .md). `compare` matches
results by kernel and launch (kernel name, grid, block, cache state, timer)
and calls each pair faster, slower or the same from their medians' 95 %
confidence intervals: the same when the intervals overlap.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BenchError

FORMATS = (".json", ".csv", ".md")
COLUMNS = ("kernel", "grid", "block", "timer", "cache_state", "median_us", "ci_low_us", "ci_high_us",
           "rel_ci", "p10_us", "p90_us", "outliers", "samples", "stop_reason", "sets", "host_us_per_kernel",
           "wall_s", "device", "verified", "target")


def _row(result: dict[str, Any]) -> dict[str, Any]:
    s = result["stats_us"]
    return {"kernel": result["kernel"], "grid": "x".join(map(str, result["grid"])),
            "block": "x".join(map(str, result["block"])), "timer": result["timer"],
            "cache_state": result["cache_state"], "median_us": s["median"], "ci_low_us": s["ci_low"],
            "ci_high_us": s["ci_high"], "rel_ci": s["rel_ci"], "p10_us": s["p10"], "p90_us": s["p90"],
            "outliers": s["outliers"], "samples": result["samples"], "stop_reason": result["stop_reason"],
            "sets": result["rotation"]["sets"], "host_us_per_kernel": result["host_us_per_kernel"],
            "wall_s": result["wall_s"], "device": result["device"]["name"],
            "verified": result.get("verified", False),  # reports written before verification existed lack it
            "target": result.get("target")}  # reports written before the target was recorded have none


def to_csv(results: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_row(r) for r in results)
    return out.getvalue()


def to_markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| kernel | grid | block | timer | cache | median µs | 95 % CI µs | samples | stopped |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in map(_row, results):
        lines.append(f"| {r['kernel']} | {r['grid']} | {r['block']} | {r['timer']} | {r['cache_state']} | "
                     f"{r['median_us']:.3f} | {r['ci_low_us']:.3f}–{r['ci_high_us']:.3f} | {r['samples']} | "
                     f"{r['stop_reason']} |")
    return "\n".join(lines) + "\n"


def render(path: Path, results: list[dict[str, Any]]) -> str:
    """The report for `path`'s format (its suffix: .json, .csv or .md)."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json.dumps(results, indent=2) + "\n"
    if suffix == ".csv":
        return to_csv(results)
    if suffix == ".md":
        return to_markdown(results)
    raise BenchError(f"{path}: unknown report format {suffix or '(no suffix)'!r}; expected one of "
                     f"{', '.join(FORMATS)}")


def load(path: Path) -> list[dict[str, Any]]:
    """Results from a JSON report (a list of results, or one result)."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BenchError(f"{path}: not a JSON report ({e.msg} at line {e.lineno}); expected the JSON "
                         "`pyhipbench run --out FILE.json` writes") from None
    results = data if isinstance(data, list) else [data]
    for i, r in enumerate(results):
        if not (isinstance(r, dict) and {"kernel", "grid", "block", "stats_us", "timer", "cache_state"} <= r.keys()
                and isinstance(r["stats_us"], dict) and {"median", "ci_low", "ci_high"} <= r["stats_us"].keys()):
            raise BenchError(f"{path}: entry {i} is not a pyhipbench result; expected kernel, grid, block, "
                             "timer, cache_state and stats_us with median, ci_low, ci_high")
    return results


@dataclass(frozen=True)
class Comparison:
    key: str              # kernel, launch, cache state and timer
    a_median_us: float
    b_median_us: float
    verdict: str          # "faster", "slower" or "same": how B compares with A

    @property
    def ratio(self) -> float:
        """B's median over A's."""
        return self.b_median_us / self.a_median_us


def _key(result: dict[str, Any]) -> str:
    r = _row(result)
    return f"{r['kernel']} grid {r['grid']} block {r['block']} ({r['cache_state']}, {r['timer']})"


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[Comparison]:
    """B against A for every kernel and launch in both; faster/slower only when the CIs do not overlap."""
    in_a = {_key(r): r["stats_us"] for r in a}
    out = []
    for r in b:
        key = _key(r)
        if key not in in_a:
            continue
        sa, sb = in_a[key], r["stats_us"]
        verdict = "faster" if sb["ci_high"] < sa["ci_low"] else "slower" if sb["ci_low"] > sa["ci_high"] else "same"
        out.append(Comparison(key, sa["median"], sb["median"], verdict))
    return out
