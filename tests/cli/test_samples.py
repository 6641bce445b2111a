"""The sample results shipped with the package (pyhipbench/samples, measured on a GPU by bench/make_samples.py):
found by --samples-dir, real reports of a real device, and what compare and plot take without a GPU."""
from __future__ import annotations

import json
import sqlite3

import pytest
from cli_helpers import call

from pyhipbench import cli
from pyhipbench._results import report

REPORTS = ("copy-clean-cold.json", "copy-clean-cold-rerun.json", "copy-warm.json")


@pytest.fixture(scope="module")
def samples():
    return cli.samples_dir()


def test_samples_dir_prints_the_folder_holding_the_samples_and_their_label(samples, capsys):
    assert call(["--samples-dir"], capsys) == (0, f"{samples}\n", "")
    assert sorted(p.name for p in samples.iterdir()) == sorted(("README.md", "copy-sweep.db", *REPORTS))
    label = (samples / "README.md").read_text()
    assert "Measured on an NVIDIA" in label and "bench/make_samples.py" in label


@pytest.mark.parametrize("name", REPORTS)
def test_each_report_is_a_real_devices_measurement(samples, name):
    results = report.load(samples / name)
    device = json.loads((samples / name).read_text())["devices"][0]
    assert device["backend"] == "cuda" and device["name"].startswith("NVIDIA") and "Fake" not in device["name"]
    assert [r["kernel"] for r in results] == ["copy", "copy", "copy", "empty"]
    assert all(r["timer"] == "cupti" and r["samples"] >= 16 for r in results)


def test_compare_takes_the_samples_without_a_gpu(samples, no_device_wanted, capsys):
    code, out, err = call(["compare", samples / REPORTS[0], samples / REPORTS[1]], capsys)
    assert (code, err) == (0, "") and len(out.splitlines()) == 2 + 4
    code, out, err = call(["compare", samples / REPORTS[0], samples / REPORTS[2], "--across", "cache"], capsys)
    assert (code, err) == (0, "") and len(out.splitlines()) == 2 + 4


def test_the_sample_sweep_needs_no_file_beside_it_to_be_read(samples):
    """A rollback journal: read-only readers need no -shm file, which an install's folder may not take."""
    with sqlite3.connect(f"{(samples / 'copy-sweep.db').as_uri()}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_plot_takes_the_sample_sweep_and_reports(samples, no_device_wanted, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plot draws with matplotlib (the plot extra)")
    assert call(["plot", samples / "copy-sweep.db", "--x", "block", "--y", "per_thread", "-o", tmp_path / "s.svg"],
                capsys)[0] == 0
    assert call(["plot", "--compare", samples / REPORTS[0], samples / REPORTS[2], "--across", "cache", "-o",
                 tmp_path / "c.svg"], capsys)[0] == 0
    assert (tmp_path / "s.svg").read_text().startswith("<?xml") and (tmp_path / "c.svg").stat().st_size > 0
