"""pyhipbench plot: every kind of picture rendered from result files the package wrote, and its bad input."""
from __future__ import annotations

import json
import shutil
import struct
import sys
from importlib import metadata, resources
from pathlib import Path

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._results import plot, report
from pyhipbench._results.comparison import compare
from pyhipbench._results.store import Row, Store, now
from pyhipbench.cli.plot import file_names

from codegen_helpers import require

try:
    from matplotlib.axes import Axes
    from matplotlib.text import Text
except ImportError:
    require("matplotlib", "pyhipbench plot needs it: pip install -r requirements/test.txt")

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
pytestmark = pytest.mark.parametrize("backend_name", ["cuda"])


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def run_report(tmp_path, name: str, launch_ms: float, fake_driver, capsys):
    """A JSON report `run --out` wrote on the fake GPU, the copy kernel taking `launch_ms`."""
    fake_driver.lib.fake_set_launch_ms(launch_ms)
    ptx, out = tmp_path / "k.ptx", tmp_path / name
    ptx.write_bytes(COPY_PTX)
    assert cli.main(["run", str(ptx), "--kernel", "copy", "--grid", "4", "--block", "256", "--arg",
                     "array:float32:256", "--arg", "array:float32:256", "--arg", "int64:256", "--timer", "events",
                     "--cache", "warm", "--iterations", "40", "--out", str(out)]) == 0
    capsys.readouterr()
    return out


def rewrite(path, **fields):
    """The JSON report `path` with its one result's `fields` replaced; `times_us` brings its sample count and a
    median and CI that agree with it."""
    data = json.loads(path.read_text())
    [result] = data["results"]
    result.update(fields)
    if "times_us" in fields:
        median = float(np.median(fields["times_us"]))
        result["samples"] = len(fields["times_us"])
        result["stats_us"].update(median=median, ci_low=0.99 * median, ci_high=1.01 * median)
    path.write_text(json.dumps(data))
    return path


def with_outliers(base_us: float) -> list[float]:
    """200 samples around `base_us` and two far beyond Tukey's upper fence, at 3 and 3.1 times it."""
    return [base_us * (1 + 0.001 * (i % 7)) for i in range(200)] + [3 * base_us, 3.1 * base_us]


def figure_texts(fig) -> list[str]:
    """Every text a figure shows: titles, tick labels, legend entries."""
    fig.canvas.draw()
    return [t.get_text() for t in fig.findobj(lambda artist: hasattr(artist, "get_text")) if t.get_text()]


def outlier_marks(ax) -> list[np.ndarray]:
    """The x values of each set of outlier crosses on `ax`."""
    return [np.asarray(line.get_xdata()) for line in ax.get_lines() if line.get_label() == plot.OUTLIERS]


def sweep_database(tmp_path, device, fake_driver):
    """A sweep database the Store wrote: copies measured on the fake GPU at several block sizes and launch
    times (tags), and two failures."""
    db = tmp_path / "r.db"
    store = Store(db)
    kernel = device.load_module(COPY_PTX).kernel("copy")
    n = 256
    args = [device.empty(n), device.empty(n), hb.int64(n)]
    for block in (64, 128, 256):
        for ms in (0.002, 0.004, 0.008):
            fake_driver.lib.fake_set_launch_ms(ms * block / 64)
            result = hb.bench(kernel, 4, block, args, timer="events", cache="warm", iterations=10).to_dict()
            del result["times_us"]  # as a sweep keeps it
            store.record(Row(f"c{block}-{ms}", {"kernel": "copy", "tags": {"block": block, "ms": ms}}, "ok", 1,
                             now(), result=result, kernel="copy"))
    store.record(Row("f1", {"kernel": "copy", "tags": {"block": 512, "ms": 0.002}}, "failed", 1, now(),
                     reason="invalid", error="block 512 over the kernel's limit"))
    store.record(Row("f2", {"kernel": "copy", "tags": {"block": 512, "ms": 0.008}}, "failed", 2, now(),
                     reason="timeout", error="no result after 10 s"))
    store.close()
    return db


def test_distributions_and_ranking_of_reports(fake_gpu, fake_driver, tmp_path, capsys):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    b = run_report(tmp_path, "b.json", 0.006, fake_driver, capsys)
    assert cli.main(["plot", str(a), str(b), "-o", str(tmp_path / "rank.png")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'rank.png'}\n"
    width, height = png_size((tmp_path / "rank.png").read_bytes())
    assert width > 600 and height > 150
    assert cli.main(["plot", str(a), "-o", str(tmp_path / "one.svg")]) == 0
    svg = (tmp_path / "one.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg and "µs per sample" in svg and "copy grid 4x1x1" in svg


def test_two_runs_side_by_side_named_by_their_files(fake_gpu, fake_driver, tmp_path, capsys):
    a = run_report(tmp_path, "before.json", 0.004, fake_driver, capsys)
    b = run_report(tmp_path, "after.json", 0.008, fake_driver, capsys)
    assert cli.main(["plot", "--compare", str(a), str(b), "-o", str(tmp_path / "ab.svg")]) == 0
    svg = (tmp_path / "ab.svg").read_text()
    assert "after against before" in svg and "after / before 2.000" in svg and "after is slower" in svg
    assert "B/A" not in svg and "B is" not in svg


@pytest.mark.parametrize("paths, names", [
    (["before.json", "after.json"], ["before", "after"]),
    (["old/run.json", "new/run.json"], ["old/run", "new/run"]),
    (["x/old/run.json", "y/old/run.json", "z/run.json"], ["x/old/run", "y/old/run", "z/run"]),
    (["run.json", "run.db"], ["run.json", "run.db"]),
    (["run.json", "./run.json"], ["run", "run"]),
])
def test_files_are_named_by_their_stems_told_apart_where_equal(paths, names, backend_name):
    assert file_names([Path(p) for p in paths]) == names


def test_a_ranking_of_files_of_one_stem_tells_them_apart(fake_gpu, fake_driver, tmp_path, capsys):
    for folder in ("old", "new"):
        (tmp_path / folder).mkdir()
        run_report(tmp_path / folder, "run.json", 0.004, fake_driver, capsys)
    assert cli.main(["plot", str(tmp_path / "old" / "run.json"), str(tmp_path / "new" / "run.json"), "-o",
                     str(tmp_path / "rank.svg")]) == 0
    svg = (tmp_path / "rank.svg").read_text()
    assert "old/run: copy grid" in svg and "new/run: copy grid" in svg


def test_outliers_are_marked_alike_in_a_ranking_and_side_by_side(fake_gpu, fake_driver, tmp_path, capsys):
    a = rewrite(run_report(tmp_path, "before.json", 0.004, fake_driver, capsys), times_us=with_outliers(4.0))
    b = rewrite(run_report(tmp_path, "after.json", 0.004, fake_driver, capsys), times_us=with_outliers(8.0))
    for argv in ([str(a)], ["--compare", str(a), str(b)]):
        assert cli.main(["plot", *argv, "-o", str(tmp_path / "p.svg")]) == 0
        assert "outliers (beyond Tukey's fences)" in (tmp_path / "p.svg").read_text()
    ra, rb = report.load(a), report.load(b)
    [ranked] = plot.distributions(ra).axes
    assert [m.tolist() for m in outlier_marks(ranked)] == [[3 * 4.0, 3.1 * 4.0]]
    side = plot.side_by_side(ra, rb, compare(ra, rb), ("before", "after")).axes[0]
    assert [m.tolist() for m in outlier_marks(side)] == [[3 * 4.0, 3.1 * 4.0], [3 * 8.0, 3.1 * 8.0]]


def test_titles_count_results_in_a_larger_font(fake_gpu, fake_driver, tmp_path, capsys):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    b = run_report(tmp_path, "b.json", 0.008, fake_driver, capsys)
    for argv, title in (([a], "1 result, fastest first"), ([a, b], "2 results, fastest first")):
        assert cli.main(["plot", *map(str, argv), "-o", str(tmp_path / "p.svg")]) == 0
        svg = (tmp_path / "p.svg").read_text()
        assert title in svg and "result(s)" not in svg
    ra, rb = report.load(a), report.load(b)
    tick_size = plot.distributions(ra).axes[0].get_yticklabels()[0].get_fontsize()
    assert plot.distributions(ra).axes[0].title.get_fontsize() > 1.4 * tick_size
    side = plot.side_by_side(ra, rb, compare(ra, rb), ("a", "b"))
    [suptitle] = [t for t in side.findobj(Text) if t.get_text() == "b against a"]
    assert suptitle.get_fontsize() > 1.4 * tick_size and side.axes[0].title.get_fontsize() >= 1.2 * tick_size


def test_a_long_kernel_name_is_shortened_in_the_middle(fake_gpu, fake_driver, tmp_path, capsys):
    name = "gemm_" + "x" * 200 + "_end"
    a = rewrite(run_report(tmp_path, "a.json", 0.004, fake_driver, capsys), kernel=name)
    fig = plot.distributions(report.load(a))
    [label] = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(label) == plot.LABEL_CHARS and "…" in label
    assert label.startswith("gemm_xxx") and label.endswith("256x1x1 (warm, events)")
    assert name not in figure_texts(fig)
    assert fig.axes[0].get_position().width > 0.55  # the samples keep most of the width


def test_a_picture_over_a_report_it_draws_is_refused(fake_gpu, fake_driver, tmp_path, capsys):
    """A report named like a picture (r.svg), given again as the output, by another spelling of its path."""
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    shutil.copy(a, tmp_path / "r.svg")
    (tmp_path / "sub").mkdir()
    out = tmp_path / "sub" / ".." / "r.svg"
    assert cli.main(["plot", str(a), str(tmp_path / "r.svg"), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (f"pyhipbench plot: -o {out}: is the input file; writing it would overwrite "
                                       "the source\n")
    assert (tmp_path / "r.svg").read_text() == a.read_text()


def test_two_runs_with_nothing_in_common_say_which_kernels_each_has(fake_gpu, fake_driver, tmp_path, capsys):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    b = rewrite(run_report(tmp_path, "b.json", 0.004, fake_driver, capsys), kernel="scale")
    out = tmp_path / "ab.png"
    assert cli.main(["plot", "--compare", str(a), str(b), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"pyhipbench plot: {a} and {b} have no kernel and launch in common (matched by kernel name, grid, block, "
        "cache state and timer): A times copy, B scale: no kernel in common\n")
    assert not out.exists()


def test_two_runs_in_other_cache_states_pair_across_them(fake_gpu, fake_driver, tmp_path, capsys):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    b = rewrite(run_report(tmp_path, "b.json", 0.004, fake_driver, capsys), cache_state="clean-cold")
    out = tmp_path / "ab.svg"
    assert cli.main(["plot", "--compare", str(a), str(b), "-o", str(out)]) == 2
    assert capsys.readouterr().err.endswith(
        "the nearest pair differs in cache state: A copy grid 4x1x1 block 256x1x1 (warm, events), B copy grid "
        "4x1x1 block 256x1x1 (clean-cold, events); pass --across cache to compare across cache state\n")
    assert cli.main(["plot", "--compare", str(a), str(b), "--across", "cache", "-o", str(out)]) == 0
    assert "b / a 1.000" in out.read_text() and "b is the same" in out.read_text()


def test_a_large_report_is_drawn_from_a_bounded_number_of_samples(fake_gpu, fake_driver, tmp_path, capsys,
                                                                   monkeypatch):
    """100,000 samples, 5000 of them outliers: at most MAX_DRAWN of each drawn, the extremes among them."""
    times = np.random.default_rng(0).uniform(9.9, 10.1, 100_000)  # no sample below the lower fence
    times[::20] *= 3
    a = rewrite(run_report(tmp_path, "a.json", 0.004, fake_driver, capsys), times_us=times.tolist())
    drawn = []
    violinplot = Axes.violinplot

    def recorded(ax, dataset, **options):
        drawn.extend(np.asarray(samples) for samples in dataset)
        return violinplot(ax, dataset, **options)

    monkeypatch.setattr(Axes, "violinplot", recorded)
    results = report.load(a)
    outliers = np.sort(times[times > 20])
    for fig in (plot.distributions(results), plot.side_by_side(results, results, compare(results, results))):
        for ax in fig.axes:
            for marks in outlier_marks(ax):
                assert len(marks) == plot.MAX_DRAWN and (marks[0], marks[-1]) == (outliers[0], outliers[-1])
    assert len(drawn) == 3  # one violin in the ranking, two side by side
    for samples in drawn:
        assert len(samples) == plot.MAX_DRAWN and (samples[0], samples[-1]) == (times.min(), times.max())


def test_a_sweep_by_two_tags_its_best_and_its_page(fake_gpu, device, fake_driver, tmp_path, capsys):
    db = sweep_database(tmp_path, device, fake_driver)
    assert cli.main(["plot", str(db), "--x", "block", "--y", "ms", "-o", str(tmp_path / "map.svg")]) == 0
    svg = (tmp_path / "map.svg").read_text()
    assert "9 measured, 2 failed" in svg and "failed: invalid (1)" in svg and "failed: timeout (1)" in svg
    assert "fastest 2.000 µs" in svg
    assert cli.main(["plot", str(db), "--best", "3", "-o", str(tmp_path / "best.png")]) == 0
    png_size((tmp_path / "best.png").read_bytes())
    assert cli.main(["plot", str(db), "-o", str(tmp_path / "sweep.html")]) == 0
    page = (tmp_path / "sweep.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 2 and "9 measured, 2 failed" in page
    assert page.count("<tr>") == 1 + 9 + 1 + 2  # the table of the fastest, the failures' table
    assert "block 512 over the kernel&#x27;s limit" in page and "<h2>Environment</h2>" in page
    assert 'src="http' not in page and 'href="http' not in page  # self-contained: nothing fetched


def test_a_sweep_whose_tag_holds_lists_is_placed_by_their_text(fake_gpu, device, fake_driver, tmp_path, capsys):
    db = tmp_path / "lists.db"
    store = Store(db)
    kernel = device.load_module(COPY_PTX).kernel("copy")
    args = [device.empty(256), device.empty(256), hb.int64(256)]
    for i, grid in enumerate(([4, 1], [2, 2], [1, 4])):
        result = hb.bench(kernel, tuple(grid), 64, args, timer="events", cache="warm", iterations=5).to_dict()
        del result["times_us"]
        store.record(Row(f"c{i}", {"kernel": "copy", "tags": {"grid": grid, "warps": 2}}, "ok", 1, now(),
                         result=result, kernel="copy"))
    store.close()
    assert cli.main(["plot", str(db), "--x", "grid", "--y", "warps", "-o", str(tmp_path / "map.svg")]) == 0
    svg = (tmp_path / "map.svg").read_text()
    assert "3 measured, 0 failed" in svg and "[2, 2]" in svg


@pytest.mark.parametrize("argv, message", [
    (["A", "-o", "{tmp}/x.txt"], "{tmp}/x.txt: unknown picture format '.txt'; expected one of .png, .svg"),
    (["A", "--x", "block", "-o", "{tmp}/x.png"],
     "--x and --y go together: the two tags the sweep's candidates are placed by"),
    (["A", "--compare", "-o", "{tmp}/x.png"], "--compare takes two inputs, A and B; got 1"),
    (["A", "-o", "{tmp}/x.html"], "-o FILE.html plot one sweep database; got {tmp}/a.json"),
    (["DB", "--x", "block", "--y", "warps", "-o", "{tmp}/x.png"],
     "--y warps: not a tag of every candidate; expected one of block, ms"),
    (["A", "--best", "0", "-o", "{tmp}/x.png"], "--best=0: out of range, expected an integer >= 1"),
    (["A", "--across", "cache", "-o", "{tmp}/x.png"],
     "--across cache: pairs the two sides of --compare; expected --compare A B"),
])
def test_bad_plot_input_is_refused_in_one_line(fake_gpu, device, fake_driver, tmp_path, capsys, argv, message):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    db = sweep_database(tmp_path, device, fake_driver)
    words = [str(a) if w == "A" else str(db) if w == "DB" else w.format(tmp=tmp_path) for w in argv]
    assert cli.main(["plot", *words]) == 2
    err = capsys.readouterr().err
    assert err == f"pyhipbench plot: {message.format(tmp=tmp_path)}\n"
    assert not any(p.name.startswith("x.") for p in tmp_path.iterdir())


class Installed:
    """pyhipbench's distribution as importlib.metadata finds it: `direct_url` its direct_url.json (PEP 610: how
    it was installed, None from an index); an exception raised in place of it."""

    def __init__(self, direct_url: str | None | Exception):
        self.direct_url = direct_url

    def __call__(self, name: str) -> Installed:
        if isinstance(self.direct_url, Exception):
            raise self.direct_url
        return self

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == "direct_url.json" else None


@pytest.mark.parametrize("direct_url, command", [
    (None, "pip install 'pyhipbench[plot]'"),  # from an index: the extra
    ('{"dir_info": {"editable": true}, "url": "file:///src/pyhipbench"}', "pip install matplotlib"),  # a checkout
    ('{"archive_info": {}, "url": "file:///tmp/pyhipbench-0.1.0-cp311-cp311-linux_x86_64.whl"}',
     "pip install matplotlib"),
    (metadata.PackageNotFoundError("pyhipbench"), "pip install matplotlib"),  # a source tree on sys.path
])
def test_without_matplotlib_plot_says_how_to_get_it(fake_gpu, fake_driver, tmp_path, capsys, monkeypatch, direct_url,
                                                    command):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    monkeypatch.setattr(metadata, "distribution", Installed(direct_url))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["plot", str(a), "-o", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err == f"pyhipbench plot: plots need matplotlib, which is not installed: {command}\n"
    assert json.loads(a.read_text())["results"]  # the report read, nothing written
    assert not (tmp_path / "x.png").exists()
