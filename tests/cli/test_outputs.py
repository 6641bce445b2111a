"""Outputs are written whole or not at all, and every one is tried: one that fails is one line naming its path
(or standard output) and the cause, the others are written, and the exit status is 1.

A full disk is a link to /dev/full (written in place, as a device is), os.fsync
failing as a full disk's does (the file written whole: the new file beside it
is synced before the rename), or a file-size limit (RLIMIT_FSIZE) in a child
process; a closed pipe is a pipe whose reader closed before the child wrote.
"""
from __future__ import annotations

import errno
import json
import os
import resource
import stat
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import call

from pyhipbench._measure.stats import summarize
from pyhipbench._textfile import write_whole
from pyhipbench.cli import files
from pyhipbench.errors import BenchError

from codegen_helpers import require_toolchain
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)
from sweep_helpers import space, sweep_environment

TESTS = Path(__file__).resolve().parents[1]
COPY_PTX = Path(str(resources.files("pyhipbench") / "kernels" / "copy.ptx"))
RUN = ["--kernel", "copy", "--grid", "1", "--block", "256", "--arg", "array:float32:256", "--arg",
       "array:float32:256", "--arg", "int64:256", "--rotate", "1"]
# `pyhipbench ARGV` in a child process, on the fake CUDA driver named by argv[1].
CHILD = """
import sys
sys.path.insert(0, {tests!r})
import pyhipbench as hb
from pyhipbench import _core, cli
from fakes.host_backend import HostBackend
device = hb.Device.from_backend(HostBackend(backend="cuda", arch="sm_90"), _core.load_driver("cuda", sys.argv[1]))
cli._open_device = lambda backend, index=0: device
sys.exit(cli.main(sys.argv[2:]))
"""


def disk_full(descriptor: int) -> None:
    """os.fsync as on a full disk, where a file system says so only as the written file is synced."""
    raise OSError(errno.ENOSPC, "No space left on device")


def closed_pipe() -> int:
    """The writing end of a pipe whose reader has closed: a write to it fails (EPIPE)."""
    reader, writer = os.pipe()
    os.close(reader)
    return writer


def child(argv: list[object], library: Path, stdout: int, file_size_bytes: int | None = None
          ) -> subprocess.CompletedProcess:
    """`pyhipbench ARGV` on the fake CUDA device in a child process writing to `stdout` (a descriptor),
    limited to files of `file_size_bytes` (None: no limit)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_bytes, file_size_bytes))
    return subprocess.run([sys.executable, "-c", CHILD.format(tests=str(TESTS)), str(library), *map(str, argv)],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                          preexec_fn=None if file_size_bytes is None else limit)


@pytest.fixture
def ptx(tmp_path):
    path = tmp_path / "k.ptx"
    path.write_bytes(COPY_PTX.read_bytes())
    return path


def leftovers(folder: Path) -> list[str]:
    """The names of partly written files in `folder` (write_whole's, before their rename)."""
    return [p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


# -- write_whole ------------------------------------------------------------------------------------------
def test_a_file_is_written_whole_with_the_umasks_permissions_or_those_it_had(tmp_path):
    path = tmp_path / "r.json"
    umask = os.umask(0o022)
    os.umask(umask)
    write_whole(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    path.chmod(0o640)
    write_whole(path, b"\x00bytes")
    assert path.read_bytes() == b"\x00bytes" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_write_that_fails_part_way_leaves_what_the_file_held(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("the report before")
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError) as raised:
        write_whole(path, "x" * 100_000)
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(path))
    assert path.read_text() == "the report before" and leftovers(tmp_path) == []


def test_a_link_is_written_through_and_a_device_in_place(tmp_path):
    (tmp_path / "runs").mkdir()
    target, link = tmp_path / "runs" / "r.json", tmp_path / "latest.json"
    target.write_text("old")
    link.symlink_to(target)
    write_whole(link, "new")
    assert link.is_symlink() and target.read_text() == "new" and leftovers(target.parent) == []
    write_whole(Path("/dev/null"), "anything")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # written to, not replaced by a file
    full = tmp_path / "full.json"
    full.symlink_to("/dev/full")
    with pytest.raises(OSError) as raised:
        write_whole(full, "x")
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(full))


def test_an_output_in_a_folder_that_cannot_take_a_new_file_is_refused_before_any_work(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("writable, in a folder that is not")
    monkeypatch.setattr(os, "access", lambda where, mode: Path(where).resolve() != tmp_path.resolve())
    with pytest.raises(BenchError, match=rf"^--out {path}: directory {tmp_path} is not writable \(a file is "
                                               r"written whole: into a new file there, renamed over it\)$"):
        files.check_output("--out", path)


# -- run: every --out tried ---------------------------------------------------------------------------------
def test_run_writes_every_out_and_names_the_one_that_failed(ptx, fake_gpu, capsys):
    full, markdown, table = ptx.parent / "full.json", ptx.parent / "r.md", ptx.parent / "r.csv"
    full.symlink_to("/dev/full")
    code, out, err = call(["run", ptx, *RUN, "--iterations", "3", "--out", full, "--out", markdown, "--out", table],
                          capsys)
    assert code == 1
    assert err == (f"pyhipbench run: could not write {full}: No space left on device; the report is printed on "
                   "stdout instead\n")
    assert f"wrote {markdown}\nwrote {table}\n" in out and "| copy |" in markdown.read_text()
    assert table.read_text().startswith("kernel,grid,block")
    [result] = json.loads(out[out.index("{"):])["results"]
    assert result["samples"] == 3


def test_run_with_its_report_on_stdout_names_a_failed_file_without_printing_it_again(ptx, fake_gpu, capsys):
    full = ptx.parent / "full.json"
    full.symlink_to("/dev/full")
    code, out, err = call(["run", ptx, *RUN, "--iterations", "3", "--out", "-", "--format", "csv", "--out", full],
                          capsys)
    assert code == 1
    assert out.startswith("kernel,grid,block") and len(out.splitlines()) == 2  # the CSV alone
    assert err.splitlines()[-1] == f"pyhipbench run: could not write {full}: No space left on device"


def test_run_on_a_closed_pipe_still_writes_its_files(ptx, fake_libraries, no_real_cupti):
    report = ptx.parent / "r.json"
    stdout = closed_pipe()
    done = child(["run", ptx, *RUN, "--iterations", "3", "--out", "-", "--out", report], fake_libraries["cuda"],
                 stdout)
    os.close(stdout)
    summary, wrote, failed = done.stderr.splitlines()
    assert done.returncode == 1 and summary.startswith("copy on Fake GPU")
    assert (wrote, failed) == (f"wrote {report}", "pyhipbench run: could not write standard output: Broken pipe")
    assert json.loads(report.read_text())["results"][0]["samples"] == 3


def test_run_whose_summary_meets_a_closed_pipe_still_writes_its_files(ptx, fake_libraries, no_real_cupti):
    report = ptx.parent / "r.md"
    stdout = closed_pipe()
    done = child(["run", ptx, *RUN, "--iterations", "3", "--out", report], fake_libraries["cuda"], stdout)
    os.close(stdout)
    assert (done.returncode, done.stderr) == (1, "pyhipbench run: could not write standard output: Broken pipe\n")
    assert "| copy |" in report.read_text()


def test_run_on_a_full_standard_output_says_so_once(ptx, fake_libraries, no_real_cupti):
    table = ptx.parent / "r.csv"
    with open("/dev/full", "w") as full:
        done = child(["run", ptx, *RUN, "--iterations", "3", "--out", "-", "--out", table], fake_libraries["cuda"],
                     full.fileno())
    # Exit 1, not the interpreter's 120 for a failed flush as it exits: nothing is left to flush.
    assert done.returncode == 1
    assert done.stderr.splitlines()[1:] == [f"wrote {table}",
                                            "pyhipbench run: could not write standard output: No space left on device"]
    assert table.read_text().startswith("kernel,grid,block")


def test_run_beyond_a_file_size_limit_leaves_the_report_before_whole(ptx, fake_libraries, no_real_cupti):
    report, markdown = ptx.parent / "r.json", ptx.parent / "r.md"
    report.write_text('{"the report": "before"}\n')
    # 2000 samples make a JSON report of about 50 KB, beyond the limit; the markdown table is a few hundred bytes.
    done = child(["run", ptx, *RUN, "--iterations", "2000", "--out", report, "--out", markdown],
                 fake_libraries["cuda"], subprocess.PIPE, file_size_bytes=16384)
    assert done.returncode == 1
    assert done.stderr == (f"pyhipbench run: could not write {report}: File too large; the report is printed on "
                           "stdout instead\n")
    assert report.read_text() == '{"the report": "before"}\n' and leftovers(ptx.parent) == []
    assert "| copy |" in markdown.read_text()
    [result] = json.loads(done.stdout[done.stdout.index("{"):])["results"]
    assert result["samples"] == 2000


def test_sweep_writes_every_export_whatever_failed_before_it(tmp_path, fake_hip_library):  # noqa: F811
    require_hip_python()
    require_toolchain("gfx942")
    searched, full, best = tmp_path / "space.json", tmp_path / "full.json", tmp_path / "best.md"
    searched.write_text(json.dumps(space(2, bad=())))
    full.symlink_to("/dev/full")
    stdout = closed_pipe()  # the summary meets it first
    done = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "sweep", str(searched), "--out",
                           str(tmp_path / "r.db"), "--gpus", "0", "--export", str(full), "--export", str(best)],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=180,
                          env={**os.environ, **sweep_environment(fake_hip_library, devices=1)})
    os.close(stdout)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-2:] == [f"pyhipbench sweep: could not write {full}: No space left on device",
                                             "pyhipbench sweep: could not write standard output: Broken pipe"]
    assert best.read_text().count("\n| copy |") == 2


# -- compare and plot ---------------------------------------------------------------------------------------
def report_file(path: Path) -> Path:
    times = np.linspace(3.9, 4.1, 21)
    s = summarize(times)
    entry = {"kernel": "copy", "grid": [1, 1, 1], "block": [256, 1, 1], "timer": "events", "cache_state": "warm",
             "stats_us": {"median": s.median, "ci_low": s.ci_low, "ci_high": s.ci_high, "rel_ci": s.rel_ci,
                          "p10": s.p10, "p90": s.p90, "outliers": s.outliers},
             "samples": s.count, "stop_reason": "precision", "rotation": {"sets": 1}, "host_us_per_kernel": 1.0,
             "wall_s": 0.01, "device": {"name": "Fake GPU"}, "times_us": times.tolist()}
    path.write_text(json.dumps([entry]))
    return path


def test_compare_on_a_closed_pipe_is_one_line(tmp_path):
    path = report_file(tmp_path / "a.json")
    stdout = closed_pipe()
    done = subprocess.run([sys.executable, "-m", "pyhipbench.cli", "compare", str(path), str(path)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(stdout)
    warning = "pyhipbench compare: warning: A and B recorded no environment"
    lines = [line for line in done.stderr.splitlines() if not line.startswith(warning)]
    assert (done.returncode, lines) == (1, ["pyhipbench compare: could not write standard output: Broken pipe"])


def test_plot_writes_its_picture_whole_and_names_it_when_it_cannot(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    path, picture = report_file(tmp_path / "a.json"), tmp_path / "a.png"
    picture.write_bytes(b"the picture before")
    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", disk_full)
        code, out, err = call(["plot", path, "-o", picture], capsys)
    assert (code, out, err) == (1, "", f"pyhipbench plot: {picture}: No space left on device\n")
    assert picture.read_bytes() == b"the picture before" and leftovers(tmp_path) == []
    code, out, err = call(["plot", path, "-o", picture], capsys)
    assert (code, out) == (0, f"wrote {picture}\n") and picture.read_bytes().startswith(b"\x89PNG")
