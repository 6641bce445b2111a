"""The command line answers in the words the user typed, in one line, before any device is opened.

A value the library refuses is named by its flag and the text as typed
(`--device -1`, `--threshold 200%`), where Python names the keyword
(`index=-1`); a usage error is one line naming the value and what was
expected, a near-miss flag or choice the one meant, the usage block only with
-h; without a GPU the line is about the vendor whose bindings are installed
(-v gives each backend's whole reason), `info` shows a profile as `demo`
plans for one, and a file that is no kernel, or an output named for other
content, is refused as such.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib import resources

import numpy as np
import pytest
from cli_helpers import call

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._device.backends.base import BindingsMissing
from pyhipbench._device.device import no_gpu_found
from pyhipbench.cli import command

from codegen_helpers import IR_DATA
from fakes.conftest_fixtures import fake_hip_library, require_hip_python  # noqa: F401 (fixture)

COPY_PTX = str(resources.files("pyhipbench") / "kernels" / "copy.ptx")
RUN = ["--kernel", "copy", "--grid", "1", "--block", "256"]
ENTRY = {"kernel": "k", "grid": [1, 1, 1], "block": [32, 1, 1], "timer": "cupti", "cache_state": "warm",
         "stats_us": {"median": 2.0, "ci_low": 1.99, "ci_high": 2.01, "rel_ci": 0.005, "p10": 1.99, "p90": 2.01,
                      "outliers": 0},
         "samples": 3, "stop_reason": "precision", "rotation": {"sets": 1}, "host_us_per_kernel": 1.0,
         "wall_s": 0.01, "device": {"name": "GPU"}, "times_us": [1.99, 2.0, 2.01]}
# What cuda-bindings says when libcuda.so.1 is absent: its own words, with nested quotes.
BINDINGS_WORDS = ('"cuda" is an NVIDIA driver library and can only be found via system search. Ensure the NVIDIA '
                  'display driver is installed.')


def no_cuda_driver() -> hb.NoDeviceError:
    """The CUDA backend's error where the driver is absent, cuda-bindings' own error its cause."""
    try:
        try:
            raise RuntimeError(BINDINGS_WORDS)
        except RuntimeError as e:
            raise hb.NoDeviceError("no CUDA driver: cuda-bindings could not load libcuda.so.1; install the NVIDIA "
                                   "driver") from e
    except hb.NoDeviceError as e:
        return e


HIP_MISSING = BindingsMissing("hip-python", 'hip-python is not installed: pip install "hip-python==RELEASE", ...')
CUDA_MISSING = BindingsMissing("cuda-bindings", "cuda-bindings is not installed (pip install 'pyhipbench[cuda]')")
NO_HIP_RUNTIME = hb.NoDeviceError("cannot load the HIP runtime 'libamdhip64.so'. Install ROCm (it provides "
                                  "libamdhip64.so), and put its lib folder on the loader path")


# -- a value the library refuses, named by its flag and the text typed ---------------------------------------
@pytest.mark.parametrize("argv, line", [
    (["info", "--device", "-1"], "pyhipbench info: --device -1: out of range, expected an integer >= 0"),
    (["demo", "--device", "-1"], "pyhipbench demo: --device -1: out of range, expected an integer >= 0"),
    (["run", COPY_PTX, *RUN, "--device", "-1"], "pyhipbench run: --device -1: out of range, expected an integer >= 0"),
    (["run", COPY_PTX, *RUN, "--hold", "-2"], "pyhipbench run: --hold -2: out of range, expected a finite number >= 0 "
                                              "and <= 3600.0"),
    (["run", COPY_PTX, *RUN, "--precision", "200%"], "pyhipbench run: --precision 200%: out of range, expected a "
                                                     "finite number > 0 and < 1"),
    (["run", COPY_PTX, *RUN, "--slower-than=-1"], "pyhipbench run: --slower-than -1: out of range, expected a finite "
                                                  "number > 0"),
])
def test_a_refused_value_is_named_by_its_flag_as_typed(argv, line, capsys):
    # The real device opener: the index is checked before any backend is tried, with or without a GPU.
    assert call(argv, capsys) == (2, "", line + "\n")


def test_python_names_the_keyword_where_the_command_line_names_the_flag():
    with pytest.raises(hb.BenchError, match=r"^index=-1: out of range, expected an integer >= 0$"):
        hb.Device(None, -1)


def test_compare_names_its_threshold_as_typed(tmp_path, capsys):
    report = tmp_path / "r.json"
    report.write_text(json.dumps([ENTRY]))
    assert call(["compare", report, report, "--threshold", "200%"], capsys) == (
        2, "", "pyhipbench compare: --threshold 200%: out of range, expected a finite number >= 0 and < 1\n")


def test_a_suggested_value_is_written_as_a_flag_takes_it(no_device_wanted, capsys):
    code, _, err = call(["run", COPY_PTX, *RUN, "--energy"], capsys)
    assert (code, err) == (2, "pyhipbench run: --energy with --cache clean-cold (the default): each sample's clean step "
                              "would count in its energy; expected --cache warm or 'dirty-cold' with --energy\n")


def test_a_value_a_file_gave_keeps_the_files_name_for_it(no_device_wanted, tmp_path, capsys):
    chain = tmp_path / "chain.json"
    chain.write_text(json.dumps({"launches": "module", "grid": 0, "block": 1}))
    assert call(["run", COPY_PTX, "--chain", chain], capsys) == (
        2, "", f"pyhipbench run: {chain}: grid=0: out of range, expected an integer in [1, 4294967295]\n")


def test_a_value_the_code_generator_refuses_is_named_by_its_flag(tmp_path, capsys):
    code, _, err = call(["compile", IR_DATA / "copy_sm_90.ll", "--target", "sm_90", "--ptx-version", "-1", "-o",
                         tmp_path / "k.ptx"], capsys)
    assert (code, err) == (1, "pyhipbench compile: --ptx-version -1: expected the PTX ISA version times ten as a "
                              "positive integer, e.g. 80 for PTX 8.0\n")


# -- checked before any device is opened: the bad value named, not the missing GPU ---------------------------
@pytest.mark.parametrize("argv, line", [
    (["run", COPY_PTX, *RUN, "--shared-bytes=-1"], "pyhipbench run: --shared-bytes -1: out of range, expected an "
                                                   "integer in [0, 4294967295] (bytes)"),
    (["info", "--size", "0"], "pyhipbench info: --size 0: out of range, expected an integer in "
                              "[1, 18446744073709551615] (bytes)"),
    (["info", "--size=-5"], "pyhipbench info: --size -5: out of range, expected an integer in "
                            "[1, 18446744073709551615] (bytes)"),
    (["run", COPY_PTX, *RUN, "--out", "{d}/r.json", "--out", "{d}/r.json"],
     "pyhipbench run: --out {d}/r.json twice: both name the same file; expected each --out once"),
    (["run", COPY_PTX, *RUN, "--out", "{d}/r.json", "--out", "{d}/sub/../r.json"],
     "pyhipbench run: --out {d}/r.json and --out {d}/sub/../r.json: both name the same file; expected each --out "
     "once"),
    (["run", COPY_PTX, *RUN, "--out", "-", "--out", "-"],
     "pyhipbench run: --out - twice: both name standard output; expected each --out once"),
    (["demo", "--backend", "hip", "--profile", "h200"], "pyhipbench demo: --profile h200 with --backend hip: h200 is "
     "a cuda device; expected one of mi250x, mi300x, mi355x, rx7900xtx with --backend hip"),
    (["info", "--backend", "cuda", "--profile", "mi300x"], "pyhipbench info: --profile mi300x with --backend cuda: "
     "mi300x is a hip device; expected one of h100, h200 with --backend cuda"),
])
def test_what_needs_no_device_is_refused_before_one_is_opened(no_device_wanted, tmp_path, capsys, argv, line):
    (tmp_path / "sub").mkdir()
    argv = [str(a).format(d=tmp_path) for a in argv]
    assert call(argv, capsys) == (2, "", line.format(d=tmp_path) + "\n")
    assert not (tmp_path / "r.json").exists()


def test_tolerances_are_refused_before_any_device(no_device_wanted, tmp_path, capsys):
    np.save(tmp_path / "ref.npy", np.zeros(256, np.float32))
    code, _, err = call(["run", COPY_PTX, *RUN, "--expect", f"1={tmp_path / 'ref.npy'}", "--atol=-1"], capsys)
    assert (code, err) == (2, "pyhipbench run: --atol -1: out of range, expected a finite number >= 0\n")


# -- no GPU: a line about the vendor installed; each backend's whole reason with -v ---------------------------
def test_no_gpu_names_only_the_vendor_whose_bindings_are_installed():
    error = no_gpu_found([("hip", HIP_MISSING), ("cuda", no_cuda_driver())])
    assert str(error) == "no NVIDIA GPU found: no CUDA driver"
    assert error.reasons["cuda"] == ("no CUDA driver: cuda-bindings could not load libcuda.so.1; install the NVIDIA "
                                     f"driver ({BINDINGS_WORDS})")  # cuda-bindings' own words: the detail
    assert error.reasons["hip"] == str(HIP_MISSING)


def test_no_gpu_names_each_vendor_installed_and_how_to_install_where_none_is():
    both = no_gpu_found([("hip", NO_HIP_RUNTIME), ("cuda", no_cuda_driver())])
    assert str(both) == "no GPU found: AMD: cannot load the HIP runtime 'libamdhip64.so'; NVIDIA: no CUDA driver"
    neither = no_gpu_found([("hip", HIP_MISSING), ("cuda", CUDA_MISSING)])
    assert str(neither) == ("no GPU bindings installed: pip install 'pyhipbench[cuda]' for NVIDIA GPUs, or hip-python "
                            "(the release for your ROCm) for AMD GPUs")
    asked = no_gpu_found([("cuda", CUDA_MISSING)])  # --backend cuda: the vendor asked for, whatever is installed
    assert str(asked) == "no NVIDIA GPU found: cuda-bindings is not installed"
    # A reason that says what was expected is the line whole: the range of a device index past the devices.
    past = no_gpu_found([("cuda", hb.NoDeviceError("CUDA device index 5 is out of range: expected 0..0 (1 device)"))])
    assert str(past) == "no NVIDIA GPU found: CUDA device index 5 is out of range: expected 0..0 (1 device)"


def test_the_no_gpu_line_gives_the_details_with_v_only(monkeypatch, capsys):
    def no_gpu(backend, index=0):
        raise no_gpu_found([("hip", HIP_MISSING), ("cuda", no_cuda_driver())])
    monkeypatch.setattr(cli, "_open_device", no_gpu)
    assert call(["run", COPY_PTX, *RUN], capsys) == (
        1, "", "pyhipbench run: no NVIDIA GPU found: no CUDA driver (-v says more)\n")
    code, _, err = call(["run", COPY_PTX, *RUN, "-v"], capsys)
    assert code == 1 and err.splitlines() == [
        f"pyhipbench: hip: {HIP_MISSING}",
        f"pyhipbench: cuda: no CUDA driver: cuda-bindings could not load libcuda.so.1; install the NVIDIA driver "
        f"({BINDINGS_WORDS})",
        "pyhipbench run: no NVIDIA GPU found: no CUDA driver"]


def test_no_gpu_through_the_real_backends_is_one_short_line(fake_hip_library, tmp_path):
    require_hip_python()
    # A process with hip-python over the fake runtime, which finds no device, and no cuda-bindings.
    script = "import sys\nsys.modules['cuda'] = None\nfrom pyhipbench import cli\nsys.exit(cli.main(sys.argv[1:]))"
    env = {**os.environ, "PYHIPBENCH_HIP_LIBRARY": str(fake_hip_library), "FAKE_HIP_DEVICE_COUNT": "0",
           "LD_LIBRARY_PATH": str(fake_hip_library.parent)}

    def pyhipbench(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True,
                              timeout=120)
    ran = pyhipbench("run", COPY_PTX, *RUN)
    assert (ran.returncode, ran.stderr) == (1, "pyhipbench run: no AMD GPU found: HIP found no GPU (-v says more)\n")
    shown = pyhipbench("info")  # the profile of the vendor installed
    assert shown.returncode == 0 and shown.stdout.splitlines()[:2] == [
        "no GPU here: what follows is the profile of an AMD Instinct MI300X (--profile mi300x), not a device of this "
        "machine", "  why no GPU: no AMD GPU found: HIP found no GPU (-v says more)"]


# -- without a GPU, info and demo show the profile of the vendor asked for, or installed -----------------------
@pytest.fixture
def no_gpu(monkeypatch):
    def refuse(backend, index=0):
        raise hb.NoDeviceError("no GPU found (test)")
    monkeypatch.setattr(cli, "_open_device", refuse)


@pytest.mark.parametrize("installed, backend, profile", [
    (["hip", "cuda"], "hip", "AMD Instinct MI300X (--profile mi300x)"),
    (["hip", "cuda"], "cuda", "NVIDIA H200 (--profile h200)"),
    (["hip"], None, "AMD Instinct MI300X (--profile mi300x)"),
    (["cuda"], None, "NVIDIA H200 (--profile h200)"),
    (["hip", "cuda"], None, "NVIDIA H200 (--profile h200)"),
    ([], None, "NVIDIA H200 (--profile h200)"),
])
def test_without_a_gpu_the_profile_is_the_vendors(no_gpu, monkeypatch, capsys, installed, backend, profile):
    monkeypatch.setattr(command, "installed_backends", lambda: installed)
    chosen = [] if backend is None else ["--backend", backend]
    code, out, _ = call(["demo", *chosen], capsys)
    assert code == 0 and out.splitlines()[0] == f"no GPU here: the plan for {profile}, nothing is run"
    code, out, _ = call(["info", *chosen], capsys)
    assert code == 0 and out.splitlines()[0] == (f"no GPU here: what follows is the profile of an {profile}, not a "
                                                 "device of this machine")


def test_the_plans_memory_is_labelled(no_gpu, capsys):
    code, out, _ = call(["demo", "--profile", "h200"], capsys)
    assert code == 0 and out.splitlines()[2] == "  L2 60 MiB, last-level cache 60 MiB, memory 139.8 GiB"


# -- files: an output named for other content, an input that is no kernel ------------------------------------
@pytest.mark.parametrize("target, output, line", [
    ("gfx942", "k.ptx", "-o {d}/k.ptx: a .ptx file holds PTX, but --target gfx942 makes an HSACO; expected a name "
                        "ending .hsaco or .co"),
    ("sm_90", "k.hsaco", "-o {d}/k.hsaco: a .hsaco file holds an HSACO, but --target sm_90 makes PTX; expected a "
                         "name ending .ptx"),
    ("sm_90", "k.cubin", "-o {d}/k.cubin: a .cubin file holds a cubin, but --target sm_90 makes PTX; expected a name "
                         "ending .ptx"),
    ("sm_90", "k.json", "-o {d}/k.json: a .json file holds JSON, but --target sm_90 makes PTX; expected a name ending "
                        ".ptx"),
])
def test_an_output_named_for_other_content_is_refused(tmp_path, capsys, target, output, line):
    code, out, err = call(["compile", IR_DATA / "copy_sm_90.ll", "--target", target, "-o", tmp_path / output], capsys)
    assert (code, out, err) == (2, "", f"pyhipbench compile: {line.format(d=tmp_path)}\n")
    assert not (tmp_path / output).exists()


@pytest.mark.parametrize("output", ["k.PTX", "k.bin", "k"])
def test_an_output_named_for_its_content_or_for_nothing_known_is_written(tmp_path, capsys, output):
    code, out, _ = call(["compile", IR_DATA / "copy_sm_90.ll", "--target", "sm_90", "-o", tmp_path / output], capsys)
    assert code == 0 and (tmp_path / output).read_bytes().startswith(b"//")  # PTX


KINDS = "CUDA/HIP C++ (.cu, .hip), LLVM IR (text or bitcode) or a code object (PTX, cubin, fatbin, HSACO)"


@pytest.mark.parametrize("name, content, why", [
    ("README.md", "# pyhipbench\n", "markdown (by its suffix), not a kernel file"),
    ("space.json", '{"launches": []}', "JSON (by its suffix), not a kernel file"),
    ("notes.txt", "\n; a comment\n# pyhipbench\n", "not a kernel file: it starts '# pyhipbench', which no LLVM IR does, "
                                                   "and is no code object"),
])
@pytest.mark.parametrize("command_line", [["run", *RUN], ["compile", "--target", "sm_90", "-o", "{d}/o.ptx"]])
def test_an_input_that_is_no_kernel_is_refused_as_such(no_device_wanted, tmp_path, capsys, name, content, why,
                                                       command_line):
    (tmp_path / name).write_text(content)
    argv = [command_line[0], tmp_path / name, *[a.format(d=tmp_path) for a in command_line[1:]]]
    assert call(argv, capsys) == (2, "", f"pyhipbench {command_line[0]}: {tmp_path / name}: {why}; expected "
                                         f"{KINDS}\n")


# -- usage errors: one line, the value and what was expected, a near miss named --------------------------------
@pytest.mark.parametrize("argv, line", [
    (["run", COPY_PTX, *RUN, "--cache", "cold"], "pyhipbench run: --cache cold: expected one of auto, warm, "
     "dirty-cold, clean-cold (pyhipbench run -h for help)"),
    (["run", COPY_PTX, *RUN, "--format", "xml"], "pyhipbench run: --format xml: expected one of json, csv, md "
     "(pyhipbench run -h for help)"),
    (["run", COPY_PTX, *RUN, "--max_time", "1"], "pyhipbench run: --max_time: no such option; did you mean "
     "--max-time? (pyhipbench run -h for help)"),
    (["run", COPY_PTX, *RUN, "--max_time=1"], "pyhipbench run: --max_time: no such option; did you mean --max-time? "
     "(pyhipbench run -h for help)"),
    (["run", COPY_PTX, COPY_PTX, *RUN], f"pyhipbench run: {COPY_PTX}: an argument too many (pyhipbench run -h for "
     "help)"),
    (["compare", "a.json", "b.json", "--across", "cach"], "pyhipbench compare: --across cach: expected one of cache, "
     "timer; did you mean cache? (pyhipbench compare -h for help)"),
    (["rnu", COPY_PTX], "pyhipbench: COMMAND rnu: expected one of info, demo, compile, run, sweep, compare, plot; did "
     "you mean run? (pyhipbench -h for help)"),
    (["--quite", "info"], "pyhipbench: --quite: no such option; did you mean --quiet? (pyhipbench -h for help)"),
    (["info", "--size", "lots"], "pyhipbench info: --size lots: not a size; expected bytes such as 4096, 64M or 1G "
     "(pyhipbench info -h for help)"),
    (["run", COPY_PTX, *RUN, "--grid", "1\n2"], "pyhipbench run: --grid '1\\n2': expected comma-separated whole "
     "numbers such as 1024 or 64,4 (pyhipbench run -h for help)"),
])
def test_a_usage_error_is_one_line_naming_the_value_and_what_was_expected(no_device_wanted, capsys, argv, line):
    assert call(argv, capsys) == (2, "", line + "\n")


def test_the_usage_comes_with_h(capsys):
    code, out, _ = call(["run", "-h"], capsys)
    assert code == 0 and out.startswith("usage: pyhipbench run [-h]")


def test_a_json_that_is_no_report_lists_the_fields_once(tmp_path, capsys):
    (tmp_path / "a.json").write_text("[{}]")
    code, _, err = call(["compare", tmp_path / "a.json", tmp_path / "a.json"], capsys)
    fields = "kernel, grid, block, timer, cache_state, stats_us, samples, stop_reason, rotation, host_us_per_kernel, " \
             "wall_s, device"
    assert (code, err) == (2, f"pyhipbench compare: {tmp_path / 'a.json'}: entry 0 is not a pyhipbench result: "
                              f"missing {fields} (every field)\n")
    assert err.count("stats_us") == 1


def test_the_text_typed_is_kept_per_flag_and_reset_per_parse():
    parser = cli.build_parser()
    parser.parse_args(["run", "k.ptx", "--kernel", "copy", "--grid", "64,4", "--block", "256", "--hold", "1e-1"])
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    run = commands.choices["run"]
    assert run.written == {"kernel": "copy", "grid": "64,4", "block": "256", "hold_s": "1e-1"}
    parser.parse_args(["run", "k.ptx", "--kernel", "copy", "--grid", "1", "--block", "1"])
    assert "hold_s" not in run.written
