"""Results as JSON, CSV and markdown, read back and checked.

A JSON report is an object: the environment the results were taken in
(environment.py: schema version, package version, time, host, devices) and
"results", a list of `Result.to_dict()`; docs/reports.md is its schema. CSV
and markdown hold a row per result. `render` picks the format from the
file's suffix (.json, .csv, .md); `read` also takes schema version 1, a
bare list of results. `match_key` is the
kernel and launch (kernel name, grid, block, cache state, timer) by which
comparison.py pairs the results of two reports.

`load` (and `check_results`, for a sweep database's results) refuses a
report before anything is compared: each entry must hold every field
compare and the CSV/markdown rows read, of the type and range a result has
(`grid` and `block` lists of 1 to 3 positive integers, a bare integer
refused; the median > 0 and finite, `ci_low <= median <= ci_high`), and no
kernel and launch twice; the BenchError names the file, the entry and the field.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._launch.launch_config import dims
from .._textfile import parse_json, read_text
from .._values import file_format, integer, real, show
from ..errors import BenchError
from .environment import SCHEMA_VERSION

FORMATS = (".json", ".csv", ".md")
COLUMNS = ("kernel", "grid", "block", "timer", "cache_state", "median_us", "ci_low_us", "ci_high_us",
           "rel_ci", "p10_us", "p90_us", "outliers", "samples", "stop_reason", "sets", "host_us_per_kernel",
           "wall_s", "device", "verified", "target", "clock_mhz", "throttled_samples", "energy_mj_per_sample",
           "mean_power_w", "candidate_id", "tags")


CALLABLE = ("call", "graph")  # a result's `ran` for a callable: no launch of its own, grid and block None


def _dims_text(value: list[int] | None) -> str:
    return "-" if value is None else "x".join(map(str, value))


def _row(result: dict[str, Any]) -> dict[str, Any]:
    s = result["stats_us"]
    return {"kernel": result["kernel"], "grid": _dims_text(result["grid"]),
            "block": _dims_text(result["block"]), "timer": result["timer"],
            "cache_state": result["cache_state"], "median_us": s["median"], "ci_low_us": s["ci_low"],
            "ci_high_us": s["ci_high"], "rel_ci": s["rel_ci"], "p10_us": s["p10"], "p90_us": s["p90"],
            "outliers": s["outliers"], "samples": result["samples"], "stop_reason": result["stop_reason"],
            "sets": result["rotation"]["sets"], "host_us_per_kernel": result["host_us_per_kernel"],
            "wall_s": result["wall_s"], "device": result["device"]["name"],
            "verified": result.get("verified", False),  # reports written before verification existed lack it
            "target": result.get("target"),  # reports written before the target was recorded have none
            # the SM clock's mean (MHz; none where not read, or in reports written before it was)
            "clock_mhz": (result.get("clock_mhz") or {}).get("mean"),
            "throttled_samples": result.get("throttled_samples", 0),
            # energy=True's figures (none without it, or in reports written before it existed)
            "energy_mj_per_sample": (result.get("energy") or {}).get("mj_per_sample"),
            "mean_power_w": (result.get("energy") or {}).get("mean_w"),
            # a sweep's export: the candidate's id and its tags, as JSON (none for a run's result)
            "candidate_id": result.get("candidate_id"),
            "tags": None if result.get("tags") is None else json.dumps(result["tags"], sort_keys=True)}


def to_csv(results: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_row(r) for r in results)
    return out.getvalue()


def to_markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| kernel | grid | block | timer | cache | median µs | 95 % CI µs | samples | stopped | SM clock MHz |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in map(_row, results):
        clock = "-" if r["clock_mhz"] is None else f"{r['clock_mhz']:.0f}"
        lines.append(f"| {r['kernel']} | {r['grid']} | {r['block']} | {r['timer']} | {r['cache_state']} | "
                     f"{r['median_us']:.3f} | {r['ci_low_us']:.3f}–{r['ci_high_us']:.3f} | {r['samples']} | "
                     f"{r['stop_reason']} | {clock} |")
    return "\n".join(lines) + "\n"


def check_format(path: Path) -> str:
    """`path`'s report format (its suffix: .json, .csv or .md); BenchError for any other."""
    return file_format(path, FORMATS, "report")


def render(path: Path, results: list[dict[str, Any]], environment: dict[str, Any]) -> str:
    """The report for `path`'s format (`render_as`)."""
    return render_as(check_format(path), results, environment)


def render_as(suffix: str, results: list[dict[str, Any]], environment: dict[str, Any]) -> str:
    """The report in the format `suffix` names (one of FORMATS): JSON, the environment (environment.py)
    with the results under "results"; CSV and markdown, a row per result."""
    if suffix == ".json":
        return json.dumps({**environment, "results": results}, indent=2) + "\n"
    return to_csv(results) if suffix == ".csv" else to_markdown(results)


REPORT = "the JSON `pyhipbench run --out FILE.json` writes"
FIELDS = ("kernel", "grid", "block", "timer", "cache_state", "stats_us", "samples", "stop_reason", "rotation",
          "host_us_per_kernel", "wall_s", "device")  # what compare and _row read; verified and target optional
STATS = ("median", "ci_low", "ci_high", "rel_ci", "p10", "p90", "outliers")


@dataclass(frozen=True)
class Report:
    """A JSON report read back: its results, checked, and the environment they were taken in (None for
    a report of schema version 1: a bare list of results, or one result)."""
    results: list[dict[str, Any]]
    environment: dict[str, Any] | None


def read(path: Path) -> Report:
    """A JSON report; BenchError naming the file and what in it is not a report (`check_results`)."""
    data = parse_json(read_text(path, REPORT), str(path), REPORT, what="a JSON report")
    if isinstance(data, dict) and ("schema_version" in data or "results" in data):
        version = data.get("schema_version")
        if type(version) is not int or not 2 <= version <= SCHEMA_VERSION:
            raise BenchError(f"{path}: schema_version={show(version)}: expected 2 to {SCHEMA_VERSION}, the "
                             "versions this pyhipbench reads (a newer one needs a newer pyhipbench)")
        for name, kind in (("results", list), ("devices", list), ("host", dict)):
            if not isinstance(data.get(name), kind):
                raise BenchError(f"{path}: {name}={show(data.get(name))}: expected "
                                 f"{'a list' if kind is list else 'an object'}, as `run --out` writes it")
        for i, device in enumerate(data["devices"]):
            if not isinstance(device, dict):
                raise BenchError(f"{path}: devices[{i}]={show(device)}: expected an object")
        environment = {k: v for k, v in data.items() if k != "results"}
        return Report(check_results(data["results"], str(path)), environment)
    return Report(check_results(data if isinstance(data, list) else [data], str(path)), None)


def load(path: Path) -> list[dict[str, Any]]:
    """The results of a JSON report (`read`)."""
    return read(path).results


def _real(label: str, value: object, **bounds: float) -> float:
    try:
        return real(label, value, **bounds)
    except OverflowError:  # an integer beyond a float's range
        raise BenchError(f"{label}={show(value)}: out of range, expected a finite number") from None


def _string(label: str, value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise BenchError(f"{label}={show(value)}: expected {what} (a non-empty string)")
    return value


def _object(label: str, value: object, fields: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BenchError(f"{label}={show(value)}: expected an object with {', '.join(fields)}")
    missing = [f for f in fields if f not in value]
    if missing:
        raise BenchError(f"{label}: {_missing(missing, fields, 'an object with ' + ', '.join(fields))}")
    return value


def _missing(missing: list[str], fields: tuple[str, ...], expected: str) -> str:
    """'missing X, Y; expected `expected`', or where every one of `fields` is missing, the list said once."""
    listed = ", ".join(missing)
    return f"missing {listed} (every field)" if len(missing) == len(fields) else \
        f"missing {listed}; expected {expected}"


def _check_fields(r: dict[str, Any]) -> None:
    """BenchError naming the field of the result `r` (it has every field) that is not what a result holds."""
    _string("kernel", r["kernel"], "the kernel's name")
    for name in ("grid", "block"):
        if r[name] is None and r.get("ran") in CALLABLE:
            continue
        if not isinstance(r[name], list):  # as run writes it; a bare integer is refused
            raise BenchError(f"{name}={show(r[name])}: expected a list of 1 to 3 positive integers (as "
                             "`run --out` writes it, e.g. [1024, 1, 1])")
        dims(name, r[name])
    for name in ("timer", "cache_state", "stop_reason"):
        _string(name, r[name], f"the {name.replace('_', ' ')}")
    s = _object("stats_us", r["stats_us"], STATS)
    median = _real("stats_us.median", s["median"], above=0)
    ci_low = _real("stats_us.ci_low", s["ci_low"], minimum=0)
    ci_high = _real("stats_us.ci_high", s["ci_high"], minimum=0)
    if not ci_low <= median <= ci_high:
        raise BenchError(f"stats_us: ci_low={show(s['ci_low'])}, median={show(s['median'])}, "
                         f"ci_high={show(s['ci_high'])}: expected ci_low <= median <= ci_high (the median's 95 % "
                         "confidence interval, µs)")
    for name in ("rel_ci", "p10", "p90"):
        _real(f"stats_us.{name}", s[name], minimum=0)
    integer("stats_us.outliers", s["outliers"], 0)
    samples = integer("samples", r["samples"], 1)
    if r.get("times_us") is not None:  # a sweep database's results hold none
        _check_times(r["times_us"], samples)
        sampled = float(np.median(r["times_us"]))
        if not np.isclose(sampled, median, rtol=1e-9, atol=0):
            raise BenchError(f"stats_us.median={show(s['median'])}: not the median of times_us ({sampled:g}); "
                             "expected the statistics of the samples beside them")
    integer("rotation.sets", _object("rotation", r["rotation"], ("sets",))["sets"], 1)
    _real("host_us_per_kernel", r["host_us_per_kernel"], minimum=0)
    _real("wall_s", r["wall_s"], minimum=0)
    _string("device.name", _object("device", r["device"], ("name",))["name"], "the device's name")
    if "verified" in r and not isinstance(r["verified"], bool):
        raise BenchError(f"verified={show(r['verified'])}: expected true or false")
    if r.get("target") is not None:
        _string("target", r["target"], "the code object's target")


def _check_times(times: object, samples: int) -> None:
    expected = f"a list of {samples} sample times (µs, finite, >= 0), one per sample"
    if not isinstance(times, list) or len(times) != samples:
        raise BenchError(f"times_us={show(times)}: expected {expected}")
    # One pass, not a check per sample of 10000 (parse_json refused integers beyond a float's range).
    if all(type(t) in (int, float) for t in times):
        values = np.asarray(times, dtype=np.float64)
        if bool(np.all(np.isfinite(values) & (values >= 0))):
            return
    for i, t in enumerate(times):  # the first that is not, named
        _real(f"times_us[{i}]", t, minimum=0)


def check_results(results: list[Any], name: str, unique: bool = True) -> list[dict[str, Any]]:
    """`results` (a report's entries, or a sweep database's results) if each is a whole result and (with
    `unique`, as compare needs them) no kernel and launch comes twice; else BenchError naming `name`, the
    entry and its field."""
    if not results:
        raise BenchError(f"{name}: holds no results; expected {REPORT}, or a sweep database with measured "
                         "candidates")
    first: dict[str, int] = {}
    for i, r in enumerate(results):
        if not isinstance(r, dict):
            raise BenchError(f"{name}: entry {i} is not a pyhipbench result ({show(r)}); expected an object with "
                             f"{', '.join(FIELDS)}")
        missing = [f for f in FIELDS if f not in r]
        if missing:
            raise BenchError(f"{name}: entry {i} is not a pyhipbench result: "
                             f"{_missing(missing, FIELDS, ', '.join(FIELDS))}")
        try:
            _check_fields(r)
        except BenchError as e:
            raise BenchError(f"{name}: entry {i}: {e}") from None
        key = match_key(r)
        if unique and key in first:
            raise BenchError(f"{name}: entries {first[key]} and {i} are both {key}; expected each kernel and "
                             "launch once (compare matches results by kernel name, grid, block, cache state and "
                             "timer, so it cannot tell them apart)")
        first[key] = i
    return results


ACROSS = ("cache", "timer")  # what compare can be asked to pair results across (`match_key`'s `across`)


def match_key(result: dict[str, Any], across: tuple[str, ...] = ()) -> str:
    """The kernel and launch compare matches by: grid and block as three dimensions ([1024] is [1024, 1, 1]),
    the cache state and the timer, less those named in `across` (of ACROSS)."""
    kernel = _printable(result["kernel"])
    conditions = ", ".join(_printable(result[field]) for name, field in (("cache", "cache_state"), ("timer", "timer"))
                           if name not in across)
    under = f" ({conditions})" if conditions else ""
    if result.get("ran") in CALLABLE:
        return f"{kernel} (a callable){under}"
    grid, block = ("x".join(map(str, dims(name, result[name]))) for name in ("grid", "block"))
    return f"{kernel} grid {grid} block {block}{under}"


def _printable(text: str) -> str:
    """`text`, or its repr where it holds a line break or another unprintable character (one line a row)."""
    return text if text.isprintable() else repr(text)
