"""pyhipbench plot: every kind of picture rendered from result files the package wrote, and its bad input."""
from __future__ import annotations

import json
import struct
import sys
from importlib import resources

import pytest

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._sweep.store import Row, Store, now

from codegen_helpers import require

try:
    import matplotlib  # noqa: F401 (only whether it is there)
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


def test_two_runs_side_by_side(fake_gpu, fake_driver, tmp_path, capsys):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    b = run_report(tmp_path, "b.json", 0.008, fake_driver, capsys)
    assert cli.main(["plot", "--compare", str(a), str(b), "-o", str(tmp_path / "ab.svg")]) == 0
    svg = (tmp_path / "ab.svg").read_text()
    assert "B is slower" in svg and "B/A 2.000" in svg


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
])
def test_bad_plot_input_is_refused_in_one_line(fake_gpu, device, fake_driver, tmp_path, capsys, argv, message):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    db = sweep_database(tmp_path, device, fake_driver)
    words = [str(a) if w == "A" else str(db) if w == "DB" else w.format(tmp=tmp_path) for w in argv]
    assert cli.main(["plot", *words]) == 2
    err = capsys.readouterr().err
    assert err == f"pyhipbench plot: {message.format(tmp=tmp_path)}\n"
    assert not any(p.name.startswith("x.") for p in tmp_path.iterdir())


def test_without_matplotlib_plot_says_how_to_get_it(fake_gpu, fake_driver, tmp_path, capsys, monkeypatch):
    a = run_report(tmp_path, "a.json", 0.004, fake_driver, capsys)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["plot", str(a), "-o", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err == ("pyhipbench plot: plots need matplotlib, which is not installed: pip install "
                                       "'pyhipbench[plot]' (or pip install matplotlib)\n")
    assert json.loads(a.read_text())["results"]  # the report read, nothing written
    assert not (tmp_path / "x.png").exists()
