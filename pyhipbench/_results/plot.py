"""Pictures of results: sample distributions and a ranking, a sweep by its tags, two runs side by side.

Each function takes checked results (report.py's form) and returns a
matplotlib Figure; `save` writes it as PNG or SVG by the file's suffix, and
`sweep_html` makes one self-contained HTML page of a sweep (its table, its
plots as inline SVG, its environment). matplotlib is optional (the `plot`
extra): `figure_module` says how to install it where it is missing.

- `distributions`: each result's samples as a violin, its median as a dot
  and its 95 % CI as a bar, the samples beyond Tukey's fences as crosses;
  results ranked fastest first, so several results are also a ranking.
- `sweep_map`: candidates by two tags (`x`, `y`), coloured by median (a
  scatter; a tag pair measured twice shows its fastest), failed candidates
  as red crosses with their reasons in the legend.
- `side_by_side`: for each kernel and launch in both, A's and B's samples
  next to each other, with compare's verdict.
"""
from __future__ import annotations

import html
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from .._values import file_format
from ..errors import BenchError
from .comparison import compare
from .report import match_key
from .tags import tags_text

FORMATS = (".png", ".svg")


def figure_module() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed); BenchError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise BenchError("plots need matplotlib, which is not installed: pip install 'pyhipbench[plot]' "
                         "(or pip install matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def check_output(path: Path) -> str:
    """`path`'s picture format (.png or .svg); BenchError for any other."""
    return file_format(path, FORMATS, "picture")


def _samples(result: dict[str, Any]) -> np.ndarray | None:
    times = result.get("times_us")
    return None if times is None else np.asarray(times, dtype=np.float64)


def distributions(results: list[dict[str, Any]]) -> Any:
    """Each result's samples (µs), fastest first; a result without samples (a sweep's) as its CI alone."""
    plt = figure_module()
    ranked = sorted(results, key=lambda r: r["stats_us"]["median"])
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.5 * len(ranked)), layout="constrained")
    positions = np.arange(len(ranked))[::-1]
    with_samples = [(p, s) for p, r in zip(positions, ranked) if (s := _samples(r)) is not None and len(s) > 1]
    if with_samples:
        parts = ax.violinplot([s for _, s in with_samples], positions=[p for p, _ in with_samples],
                              orientation="horizontal", showextrema=False, widths=0.8)
        for body in parts["bodies"]:
            body.set_alpha(0.35)
    for p, r in zip(positions, ranked):
        s = r["stats_us"]
        ax.errorbar(s["median"], p, xerr=[[s["median"] - s["ci_low"]], [s["ci_high"] - s["median"]]], fmt="o",
                    color="black", capsize=4, markersize=4, label="median and 95 % CI" if p == positions[0] else None)
        samples = _samples(r)
        if samples is not None and len(samples) > 3:
            q1, q3 = np.percentile(samples, [25, 75])
            fence = 1.5 * (q3 - q1)
            outliers = samples[(samples < q1 - fence) | (samples > q3 + fence)]
            ax.plot(outliers, np.full(len(outliers), p), "x", color="tab:red", markersize=5,
                    label="outliers (beyond Tukey's fences)" if p == positions[0] and len(outliers) else None)
    ax.set_yticks(positions, [_label(r) for r in ranked])
    ax.set_xlabel("µs per sample")
    ax.set_title(f"{len(ranked)} result(s), fastest first")
    ax.grid(axis="x", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside lower center", ncols=2, fontsize="small")
    return fig


def _label(result: dict[str, Any]) -> str:
    """The result's kernel and launch, or for a sweep's candidate its kernel and tags; at most 60 characters."""
    key = f"{result['kernel']}{tags_text(result['tags'])}" if result.get("tags") else match_key(result)
    return key if len(key) <= 60 else key[:57] + "..."


def tag_values(results: list[dict[str, Any]], failures: list[dict[str, Any]]) -> list[str]:
    """The tag names every candidate has (measured or failed), in the first candidate's order."""
    tagged = [r.get("tags") for r in results + failures]
    if not tagged or not all(isinstance(t, dict) for t in tagged):
        return []
    names = [name for name in tagged[0] if all(name in t for t in tagged)]
    return names


def sweep_map(results: list[dict[str, Any]], failures: list[dict[str, Any]], x: str, y: str) -> Any:
    """Measured candidates by tags `x` and `y`, coloured by median (µs); failed ones as red crosses, each
    reason counted in the legend. BenchError naming the tag a candidate lacks."""
    names = tag_values(results, failures)
    for name, option in ((x, "--x"), (y, "--y")):
        if name not in names:
            raise BenchError(f"{option} {name}: not a tag of every candidate; expected one of "
                             f"{', '.join(names) or '(the candidates have no common tags)'}")
    plt = figure_module()
    fig, ax = plt.subplots(figsize=(8, 6), layout="constrained")
    best: dict[tuple[Any, Any], float] = {}
    for r in results:
        point = (_tag(r, x), _tag(r, y))
        best[point] = min(best.get(point, np.inf), r["stats_us"]["median"])
    xs, ys = _axis([p[0] for p in best] + [_tag(f, x) for f in failures]), \
        _axis([p[1] for p in best] + [_tag(f, y) for f in failures])
    if best:
        medians = np.array(list(best.values()))
        scatter = ax.scatter([xs[p[0]] for p in best], [ys[p[1]] for p in best], c=medians, cmap="viridis_r",
                             s=80, norm="log" if medians.max() > 3 * medians.min() else None)
        bar = fig.colorbar(scatter, ax=ax, label="median µs (the fastest at each point)")
        ticks = np.geomspace(medians.min(), medians.max(), 5)  # labelled in µs, not 2 x 10^1 on a log scale
        bar.set_ticks(ticks, labels=[f"{t:.3g}" for t in ticks])
        bar.ax.minorticks_off()
        fastest = min(best, key=best.__getitem__)
        ax.annotate(f"fastest {best[fastest]:.3f} µs", (xs[fastest[0]], ys[fastest[1]]), xytext=(8, 8),
                    textcoords="offset points", fontsize="small")
    reasons = Counter(f.get("reason", "failed") for f in failures)
    for reason, count in reasons.items():
        marked = [f for f in failures if f.get("reason", "failed") == reason]
        ax.plot([xs[_tag(f, x)] for f in marked], [ys[_tag(f, y)] for f in marked], "x", color="tab:red",
                markersize=9, markeredgewidth=2, label=f"failed: {reason} ({count})")
    for axis, values, name in ((ax.xaxis, xs, x), (ax.yaxis, ys, y)):
        axis.set_ticks(list(values.values()), [str(v) for v in values])
        axis.set_label_text(name)
    ax.set_title(f"{len(results)} measured, {len(failures)} failed")
    ax.grid(alpha=0.3)
    if reasons:
        fig.legend(loc="outside lower center", ncols=3, fontsize="small")
    return fig


def _tag(candidate: dict[str, Any], name: str) -> Any:
    """A candidate's tag `name` as a point on an axis: a list or an object as its JSON text (one value)."""
    value = candidate["tags"][name]
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def _axis(values: list[Any]) -> dict[Any, int]:
    """Each distinct tag value's position on an axis, in sorted order (numbers numerically)."""
    distinct = sorted(set(values), key=lambda v: (not isinstance(v, (int, float)), v if isinstance(v, (int, float))
                                                  else str(v)))
    return {v: i for i, v in enumerate(distinct)}


def side_by_side(a: list[dict[str, Any]], b: list[dict[str, Any]], threshold: float) -> Any:
    """For each kernel and launch in both, A's and B's samples next to each other, titled by the verdict."""
    comparisons = compare(a, b, threshold)
    if not comparisons:
        raise BenchError("the two sides have no kernel and launch in common; `pyhipbench compare` says why")
    plt = figure_module()
    in_a, in_b = {match_key(r): r for r in a}, {match_key(r): r for r in b}
    fig, axes = plt.subplots(len(comparisons), 1, figsize=(8, 2.2 * len(comparisons)), layout="constrained",
                             squeeze=False)
    for ax, c in zip(axes[:, 0], comparisons):
        for position, side, result in ((1, "A", in_a[c.key]), (0, "B", in_b[c.key])):
            samples = _samples(result)
            if samples is not None and len(samples) > 1:
                ax.violinplot([samples], positions=[position], orientation="horizontal", showextrema=False)
            s = result["stats_us"]
            ax.errorbar(s["median"], position, xerr=[[s["median"] - s["ci_low"]], [s["ci_high"] - s["median"]]],
                        fmt="o", color="black", capsize=4, markersize=4)
        ax.set_yticks([1, 0], ["A", "B"])
        verdict = c.verdict if c.verdict == "can't tell" else f"B is {c.verdict}"
        ax.set_title(f"{_label(in_b[c.key])}: B/A {c.ratio:.3f} ({c.ratio_low:.3f}–{c.ratio_high:.3f}), "
                     f"{verdict}", fontsize="small")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("µs per sample")
    return fig


def save(fig: Any, path: Path) -> None:
    """Writes `fig` to `path` as PNG or SVG (by the suffix) and closes it."""
    check_output(path)
    try:
        fig.savefig(path, dpi=120)
    finally:
        figure_module().close(fig)


def _svg(fig: Any) -> str:
    out = io.StringIO()
    fig.savefig(out, format="svg")
    figure_module().close(fig)
    text = out.getvalue()
    return text[text.index("<svg"):]


def sweep_html(results: list[dict[str, Any]], failures: list[dict[str, Any]], environment: dict[str, Any] | None,
               name: str, best: int = 20) -> str:
    """One self-contained HTML page of a sweep: the `best` fastest, the failures, the plots (the fastest's
    distributions; the candidates by their first two common tags), the environment."""
    rows = "".join(f"<tr><td>{i + 1}</td><td><code>{html.escape(r.get('candidate_id', '')[:12])}</code></td>"
                   f"<td>{html.escape(r['kernel'])}</td><td>{html.escape(json.dumps(r.get('tags', {})))}</td>"
                   f"<td>{r['stats_us']['median']:.3f}</td><td>{r['stats_us']['ci_low']:.3f}–"
                   f"{r['stats_us']['ci_high']:.3f}</td><td>{html.escape(r['stop_reason'])}</td></tr>"
                   for i, r in enumerate(results[:best]))
    failed = "".join(f"<tr><td><code>{html.escape(f.get('candidate_id', '')[:12])}</code></td>"
                     f"<td>{html.escape(json.dumps(f.get('tags', {})))}</td><td>{html.escape(f.get('reason', ''))}"
                     f"</td><td>{html.escape(f.get('error', ''))}</td></tr>" for f in failures)
    plots = [_svg(distributions(results[:best]))] if results else []
    tags = tag_values(results, failures)
    if len(tags) >= 2:
        plots.append(_svg(sweep_map(results, failures, tags[0], tags[1])))
    env = html.escape(json.dumps(environment, indent=2)) if environment is not None else "not recorded"
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pyhipbench sweep: "
            f"{html.escape(name)}</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:"
            "collapse}}td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}</style></head><body>"
            f"<h1>{html.escape(name)}</h1><p>{len(results)} measured, {len(failures)} failed</p>"
            f"<h2>The {min(best, len(results))} fastest</h2><table><tr><th>#</th><th>candidate</th><th>kernel</th>"
            f"<th>tags</th><th>median µs</th><th>95 % CI µs</th><th>stopped</th></tr>{rows}</table>"
            + (f"<h2>Failed</h2><table><tr><th>candidate</th><th>tags</th><th>reason</th><th>error</th></tr>"
               f"{failed}</table>" if failures else "")
            + "<h2>Plots</h2>" + "".join(f"<figure>{p}</figure>" for p in plots)
            + f"<h2>Environment</h2><pre>{env}</pre></body></html>\n")

