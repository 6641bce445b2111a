"""Pictures of results: sample distributions and a ranking, a sweep by its tags, two runs side by side.

Each function takes checked results (report.py's form) and returns a
matplotlib Figure; `save` writes it as PNG or SVG by the file's suffix, and
`sweep_html` makes one self-contained HTML page of a sweep (its table, its
plots as inline SVG, its environment). matplotlib is optional (the `plot`
extra): `figure_module` says how to install it where it is missing.

- `distributions`: each result's samples as a violin, its median as a dot
  and its 95 % CI as a bar, the samples beyond Tukey's fences as red
  crosses; results ranked fastest first, so several results are also a
  ranking.
- `sweep_map`: candidates by two tags (`x`, `y`), coloured by median (a
  scatter; a tag pair measured twice shows its fastest), failed candidates
  as red crosses with their reasons in the legend.
- `side_by_side`: for each kernel and launch in both, the two sides' samples
  next to each other, drawn as `distributions` draws them, with compare's
  verdict.

However many samples a result holds, at most `MAX_DRAWN` of them make its
violin and at most `MAX_DRAWN` its outliers' crosses (`_spread`), so the
time, memory and file size of a picture do not grow with the samples; the
median, the CI and Tukey's fences are those of all of them. Labels longer
than `LABEL_CHARS` keep their start and end around an ellipsis.
"""
from __future__ import annotations

import html
import io
import json
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from .._textfile import write_whole
from .._values import file_format
from ..errors import BenchError
from .comparison import Comparison
from .report import match_key
from .tags import tags_text

FORMATS = (".png", ".svg")
# Samples drawn of one result, for its violin and for its outliers' crosses alike: a violin of 1000 samples
# spread over the sorted order looks as one of 10**6 does (its density is estimated in milliseconds, not
# seconds), and more crosses than that overlap.
MAX_DRAWN = 1000
# A row's label at most: its start and end around an ellipsis keep the kernel's name and the launch in view
# in under 40 % of the picture's width (WIDTH_IN), so the samples keep the most of it.
LABEL_CHARS = 48
WIDTH_IN = 10  # the pictures of samples: the ranking and the two sides
OUTLIERS = "outliers (beyond Tukey's fences)"
MEDIAN_AND_CI = "median and 95 % CI"


def figure_module() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed); BenchError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise BenchError(f"plots need matplotlib, which is not installed: {_install_matplotlib()}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _install_matplotlib() -> str:
    """The command that installs matplotlib for this pyhipbench: the `plot` extra where pyhipbench came from a
    package index; matplotlib alone where it came from a checkout, a local wheel or a URL (its
    direct_url.json says so, PEP 610), where the extra would fetch the index's pyhipbench in place of it."""
    try:
        from_index = metadata.distribution("pyhipbench").read_text("direct_url.json") is None
    except metadata.PackageNotFoundError:  # imported from a source tree, not installed
        from_index = False
    return "pip install 'pyhipbench[plot]'" if from_index else "pip install matplotlib"


def check_output(path: Path) -> str:
    """`path`'s picture format (.png or .svg); BenchError for any other."""
    return file_format(path, FORMATS, "picture")


def _drawn(result: dict[str, Any]) -> tuple[np.ndarray | None, np.ndarray]:
    """What is drawn of a result's samples (µs): those for its violin (None where it has fewer than two: a
    sweep's results have none) and its outliers, the samples beyond Tukey's fences (1.5 interquartile ranges
    past the quartiles of all the samples), each at most MAX_DRAWN of them (`_spread`)."""
    times = result.get("times_us")
    if times is None or len(times) < 2:
        return None, np.empty(0)
    samples = np.array(times, dtype=np.float64)
    samples.sort()  # in place: one copy of the samples held, however many
    outliers = np.empty(0)
    if len(samples) > 3:
        q1, q3 = np.percentile(samples, [25, 75])
        fence = 1.5 * (q3 - q1)
        outliers = samples[(samples < q1 - fence) | (samples > q3 + fence)]
    return _spread(samples), _spread(outliers)


def _spread(ordered: np.ndarray) -> np.ndarray:
    """At most MAX_DRAWN of the sorted values `ordered`, evenly spaced in rank, the smallest and the largest
    kept: the same shape of a distribution whatever its size, and the same values every time."""
    if len(ordered) <= MAX_DRAWN:
        return ordered
    return ordered[np.linspace(0, len(ordered) - 1, MAX_DRAWN).round().astype(np.intp)]


def _draw(ax: Any, result: dict[str, Any], position: float, color: str) -> None:
    """`result` on `ax` at height `position`: its samples as a violin of `color`, its median and 95 % CI as a
    black dot and bar, its outliers as red crosses; each labelled for the legend (`_legend`)."""
    samples, outliers = _drawn(result)
    if samples is not None:
        parts = ax.violinplot([samples], positions=[position], orientation="horizontal", showextrema=False,
                              widths=0.8)
        for body in parts["bodies"]:
            body.set_facecolor(color)
            body.set_edgecolor(color)
            body.set_alpha(0.35)
    s = result["stats_us"]
    ax.errorbar(s["median"], position, xerr=[[s["median"] - s["ci_low"]], [s["ci_high"] - s["median"]]],
                fmt="o", color="black", capsize=4, markersize=4, label=MEDIAN_AND_CI)
    if len(outliers):
        ax.plot(outliers, np.full(len(outliers), position), "x", color="tab:red", markersize=5, label=OUTLIERS)


def _legend(fig: Any) -> None:
    """One legend below the plots, each kind of mark once (`_draw` labels every mark it makes)."""
    marks = {label: handle for ax in fig.axes for handle, label in zip(*ax.get_legend_handles_labels())}
    if marks:
        fig.legend(marks.values(), marks.keys(), loc="outside lower center", ncols=2)


def _count(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless `n` is 1: "1 result", "3 results"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def distributions(results: list[dict[str, Any]]) -> Any:
    """Each result's samples (µs), fastest first; a result without samples (a sweep's) as its CI alone."""
    plt = figure_module()
    ranked = sorted(results, key=lambda r: r["stats_us"]["median"])
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 1.6 + 0.5 * len(ranked)), layout="constrained")
    positions = np.arange(len(ranked))[::-1]
    for position, result in zip(positions, ranked):
        _draw(ax, result, position, "tab:blue")
    ax.set_yticks(positions, [_label(r) for r in ranked])
    ax.set_xlabel("µs per sample")
    ax.set_title(f"{_count(len(ranked), 'result')}, fastest first", fontsize="x-large")
    ax.grid(axis="x", alpha=0.3)
    _legend(fig)
    return fig


def _label(result: dict[str, Any]) -> str:
    """The result's kernel and launch, or for a sweep's candidate its kernel and tags (`_shortened`)."""
    key = f"{result['kernel']}{tags_text(result['tags'])}" if result.get("tags") else match_key(result)
    return _shortened(key)


def _shortened(text: str) -> str:
    """`text`, or where it is longer than LABEL_CHARS its start and end around an ellipsis, LABEL_CHARS in all."""
    if len(text) <= LABEL_CHARS:
        return text
    start = (LABEL_CHARS - 1) // 2
    return f"{text[:start]}…{text[len(text) - (LABEL_CHARS - 1 - start):]}"


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
    ax.set_title(f"{len(results)} measured, {len(failures)} failed", fontsize="x-large")
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


def side_by_side(a: list[dict[str, Any]], b: list[dict[str, Any]], comparisons: list[Comparison],
                 names: tuple[str, str] = ("A", "B"), across: tuple[str, ...] = ()) -> Any:
    """For each of `comparisons` (at least one: `comparison.compare` of `a` and `b`, pairing across `across`),
    the two sides' samples (µs) next to each other, A above B, titled by the verdict; `names`: the sides'
    names in the picture (`_shortened`)."""
    plt = figure_module()
    in_a, in_b = {match_key(r, across): r for r in a}, {match_key(r, across): r for r in b}
    name_a, name_b = map(_shortened, names)
    fig, axes = plt.subplots(len(comparisons), 1, figsize=(WIDTH_IN, 1.2 + 2.4 * len(comparisons)),
                             layout="constrained", squeeze=False)
    fig.suptitle(f"{name_b} against {name_a}", fontsize="x-large")
    for ax, c in zip(axes[:, 0], comparisons):
        _draw(ax, in_a[c.key], 1, "tab:blue")
        _draw(ax, in_b[c.key], 0, "tab:orange")
        ax.set_yticks([1, 0], [name_a, name_b])
        verdict = {"can't tell": "can't tell", "same": f"{name_b} is the same"}.get(c.verdict,
                                                                                f"{name_b} is {c.verdict}")
        ax.set_title(f"{_label(in_b[c.key])}\n{name_b} / {name_a} {c.ratio:.3f} (95 % CI {c.ratio_low:.3f}–"
                     f"{c.ratio_high:.3f}): {verdict}")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("µs per sample")
    _legend(fig)
    return fig


def save(fig: Any, path: Path) -> None:
    """Writes `fig` to `path` as PNG or SVG (by the suffix), whole or not at all (`write_whole`), and closes it."""
    picture = io.BytesIO()
    try:
        fig.savefig(picture, format=check_output(path)[1:], dpi=120)
    finally:
        figure_module().close(fig)
    write_whole(path, picture.getvalue())


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

