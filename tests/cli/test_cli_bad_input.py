"""Every bad input to the CLI gives one line naming it, the right exit status, and no traceback.

Malformed options (text that is not a value of the option's kind) are the
parser's (exit 2, one line: the flag, the text as typed, the form expected; no
usage); values out of range are the library's, with its message (BenchError:
exit 2), the same the Python API gives but naming each value by its flag and
the text typed (`--max-time -1`, not `max_time_s=-1`); bad files,
outputs and arguments found by a command are main()'s (BenchError: exit 2,
other package errors and OSError: exit 1). Classes are bench/bad_inputs.py's.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import call

import pyhipbench as hb
from pyhipbench._launch.launch_config import dims
from pyhipbench._measure.options import OPTIONS, BenchOptions
from pyhipbench._sources.chain import launch_fields
from pyhipbench.cli.command import FlagValue, in_flag_words

from codegen_helpers import IR_DATA

COPY_PTX = Path(str(resources.files("pyhipbench") / "kernels" / "copy.ptx"))
RUN = ["--kernel", "copy", "--grid", "1", "--block", "256"]
COPY_ARGS = ["--arg", "array:float32:256", "--arg", "array:float32:256", "--arg", "int64:256"]


@pytest.fixture
def files(tmp_path):
    """A folder with IR (k.ll), PTX (k.ptx), PTX named .ll, IR named .ptx, non-UTF-8 bytes, a directory."""
    shutil.copy(IR_DATA / "copy_sm_90.ll", tmp_path / "k.ll")
    shutil.copy(COPY_PTX, tmp_path / "k.ptx")
    shutil.copy(COPY_PTX, tmp_path / "ptx_named.ll")
    shutil.copy(IR_DATA / "copy_sm_90.ll", tmp_path / "ir_named.ptx")
    (tmp_path / "latin1.ll").write_bytes(b"; caf\xe9\ndefine void @f() { ret void }\n")
    (tmp_path / "elf.bin").write_bytes(b"\x7fELF" + bytes(14) + (62).to_bytes(2, "little") + bytes(44))  # a whole 64-byte ELF64 header, for x86-64
    (tmp_path / "dir").mkdir()
    (tmp_path / "a_file").write_text("not a folder")
    np.save(tmp_path / "ref.npy", np.zeros(256, np.float32))
    np.save(tmp_path / "objects.npy", np.array([{}], dtype=object))
    (tmp_path / "space.json").write_text(json.dumps([{"source": {"kind": "code-object", "path": "k.ptx"},
                                                      "kernel": "copy", "grid": [1], "block": [64],
                                                      "args": ["array:float32:64", "array:float32:64", "int64:64"]}]))
    return tmp_path


def expand(argv: list[str], folder: Path) -> list[str]:
    return [a.format(d=folder) for a in argv]


# -- malformed options: one line, the flag and the text as typed first, exit 2, before anything is read -----
OPTION_ERRORS = [
    # class 7: sizes
    (["info", "--size", "infM"], "--size infM: not a size; expected bytes such as 4096, 64M or 1G"),
    (["info", "--size", "nan"], "--size nan: not a size"),
    (["info", "--size", "0.1"], "--size 0.1: 0.1 bytes; expected a whole number of bytes such as 4096"),
    (["info", "--size", "12Q"], "--size 12Q: not a size"),
    (["info", "--size", ""], "--size '': not a size"),
    (["info", "--size", "9" * 5000], "--size 9999999999999999999999999999999999999999...: not a size"),  # beyond int()
    # grid, block: comma-separated whole numbers (how many, and their range, are the library's)
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1,x", "--block", "1"], "--grid 1,x: expected comma-separated whole "
     "numbers such as 1024 or 64,4"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1.5", "--block", "1"], "--grid 1.5: expected"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1", "--block", ","], "--block ,: expected comma-separated"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "9" * 5000, "--block", "1"], "--grid 99999"),
    # counts and numbers
    (["run", "{d}/k.ll", *RUN, "--iterations", "1e3"], "--iterations 1e3: expected a whole number such as 100"),
    (["run", "{d}/k.ll", *RUN, "--iterations", "9" * 5000], "--iterations 99999"),
    (["run", "{d}/k.ll", *RUN, "--warmup", "some"], "--warmup some: expected a whole number"),
    (["run", "{d}/k.ll", *RUN, "--shared-bytes", "1k"], "--shared-bytes 1k: expected a whole number"),
    (["run", "k.ptx", *RUN, "--precision", "tight"], "--precision tight: expected a number such as 0.01 or a "
     "percentage such as 1%"),
    (["run", "k.ptx", *RUN, "--precision", "%"], "--precision %: expected a number"),
    (["run", "k.ptx", *RUN, "--max-time", "1s"], "--max-time 1s: expected a number such as 2.5 or 1e-3"),
    (["run", "k.ptx", *RUN, "--slower-than", "5us"], "--slower-than 5us: expected a number"),
    (["run", "k.ptx", *RUN, "--throttle-threshold", "high"], "--throttle-threshold high: expected a number"),
    (["run", "k.ptx", *RUN, "--timer", "clock"], "--timer clock: expected one of auto, events, cupti, rocprofiler, "
     "batched, graph"),
    (["run", "k.ptx", *RUN, "--cache", "cold"], "--cache cold: expected one of auto, warm, dirty-cold, clean-cold"),
    # the --arg language (class 6/7), refused while parsing the options
    (["run", "{d}/k.ll", *RUN, "--arg", "array:float32:16:noise"], "--arg array:float32:16:noise: fill 'noise' is "
     "not one of zeros, ones, arange, random"),
    (["run", "{d}/k.ll", *RUN, "--arg", "vector:3"], "--arg vector:3: expected TYPE:VALUE, array:DTYPE:COUNT[:FILL] "
     "or shared:DTYPE:COUNT[:FILL]"),
    (["run", "{d}/k.ll", *RUN, "--arg", "int32:4294967296"], "--arg int32:4294967296: int32(4294967296): out of "
     "range, expected an integer in [-2147483648, 2147483647]"),
    (["run", "{d}/k.ll", *RUN, "--arg", "float32:1e40"], "--arg float32:1e40: float32(1e+40): out of range, the "
     "largest float32 is"),
    (["run", "{d}/k.ll", *RUN, "--arg", "array:object:4"], "--arg array:object:4: dtype 'object' is not one of int8"),
    (["run", "{d}/k.ll", *RUN, "--arg", "array:float32:0"], "--arg array:float32:0: element count 0 is not a "
     "positive whole number"),
    (["run", "{d}/k.ll", *RUN, "--arg", "array:float64:2305843009213693952"], "--arg "
     "array:float64:2305843009213693952: 2305843009213693952 x float64 is 18446744073709551616 bytes, more than any "
     "device addresses"),
    # --expect and its tolerances
    (["run", "k.ptx", *RUN, "--expect", "{d}/ref.npy"], "--expect {d}/ref.npy: expected N=FILE.npy, N the position "
     "of an --arg (0 for the first)"),
    (["run", "k.ptx", *RUN, "--expect", "dst={d}/ref.npy"], "--expect dst={d}/ref.npy: expected N=FILE.npy"),
    (["run", "k.ptx", *RUN, "--expect", "²={d}/ref.npy"], "--expect '²={d}/ref.npy': expected N=FILE.npy"),
    (["run", "k.ptx", *RUN, "--atol", "tiny"], "--atol tiny: expected a number"),
    # sweep's options
    (["sweep", "{d}/space.json", "--out", "{d}/r.db", "--gpus", "0,x"], "--gpus 0,x: expected comma-separated whole "
     "numbers such as 0,1"),
    (["sweep", "{d}/space.json", "--out", "{d}/r.db", "--timeout-floor", "long"], "--timeout-floor long: expected a "
     "number"),
    (["sweep", "{d}/space.json", "--out", "{d}/r.db", "--best", "all"], "--best all: expected a whole number"),
    # compile's target and versions
    (["compile", "{d}/k.ll", "--target", "volta", "-o", "{d}/o"], "--target volta: expected an AMD processor"),
    (["compile", "{d}/k.ll", "--target", "sm_90", "--ptx-version", "8.0", "-o", "{d}/o"],
     "--ptx-version 8.0: expected a whole number such as 100"),
    (["compile", "{d}/k.ll", "--target", "gfx942", "--code-object-version", "3", "-o", "{d}/o"],
     "--code-object-version 3: expected one of 4, 5, 6"),
]


@pytest.mark.parametrize("argv, message", OPTION_ERRORS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in OPTION_ERRORS])
def test_malformed_options_are_refused_in_one_line(files, no_device_wanted, capsys, argv, message):
    code, out, err = call(expand(argv, files), capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"pyhipbench {argv[0]}: {message.format(d=files)}")
    assert err.endswith(f" (pyhipbench {argv[0]} -h for help)\n") and err.count("\n") == 1  # no usage block
    assert not (files / "o").exists()


def refusal(call) -> str:
    """The BenchError message `call()` raises."""
    with pytest.raises(hb.BenchError) as refused:
        call()
    return str(refused.value)


# -- measurement options out of range: BenchOptions' message, before any file is read or device opened ---
OPTIONS_REFUSED = [  # (run's flags, the BenchOptions keywords they give, the start of run's message)
    (["--precision", "0"], {"precision": 0}, "--precision 0: out of range, expected a finite number > 0 and < 1"),
    (["--precision", "2"], {"precision": 2}, "--precision 2: out of range"),
    (["--precision", "200%"], {"precision": 2.0}, "--precision 200%: out of range"),
    (["--precision", "nan"], {"precision": float("nan")}, "--precision nan: out of range"),
    (["--max-time", "-1"], {"max_time_s": -1}, "--max-time -1: out of range, expected a finite number > 0"),
    (["--max-time", "inf"], {"max_time_s": float("inf")}, "--max-time inf: out of range"),
    (["--iterations", "0"], {"iterations": 0}, "--iterations 0: out of range, expected an integer in [1, 1000000]"),
    (["--iterations", "10000001"], {"iterations": 10000001}, "--iterations 10000001: out of range"),
    (["--warmup", "-1"], {"warmup": -1}, "--warmup -1: out of range, expected an integer in [0, 1000000]"),
    (["--rotate", "0"], {"rotate": 0}, "--rotate 0: out of range, expected an integer >= 1"),
    (["--rotate", "many"], {"rotate": "many"}, "--rotate many: expected 'auto' or a set count >= 1"),
    (["--slower-than", "0"], {"slower_than_us": 0}, "--slower-than 0: out of range"),
    (["--slower-than", "nan"], {"slower_than_us": float("nan")}, "--slower-than nan: out of range"),
    (["--iterations", "8", "--slower-than", "3.5"], {"iterations": 8, "slower_than_us": 3.5},
     "--slower-than 3.5 with --iterations 8: racing stops a run early"),
    (["--throttle-threshold", "1"], {"throttle_threshold": 1}, "--throttle-threshold 1: out of range, expected a "
     "finite number >= 0 and < 1"),
    (["--throttle-threshold", "-0.5"], {"throttle_threshold": -0.5}, "--throttle-threshold -0.5: out of range"),
    (["--hold", "-1"], {"hold_s": -1}, "--hold -1: out of range, expected a finite number >= 0"),
    (["--rotate", "3", "--cache", "warm"], {"rotate": 3, "cache": "warm"}, "--rotate 3 with --cache warm"),
    (["--cache", "clean-cold", "--timer", "graph"], {"cache": "clean-cold", "timer": "graph"},
     "--cache clean-cold with --timer graph"),
    (["--energy", "--cache", "clean-cold"], {"energy": True, "cache": "clean-cold"},
     "--energy with --cache clean-cold: each sample's clean step would count in its energy; expected --cache warm"),
]


@pytest.mark.parametrize("flags, keywords, start", OPTIONS_REFUSED, ids=[" ".join(f) for f, _, _ in OPTIONS_REFUSED])
def test_measurement_options_are_refused_as_bench_refuses_them(files, no_device_wanted, capsys, flags, keywords,
                                                                start):
    # --out names a missing folder and the input is absent: the options are refused before either is looked at
    code, out, err = call(["run", str(files / "absent.ptx"), *RUN, *flags, "--out", "/nonexistent/r.json"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"pyhipbench run: {start}") and err.count("\n") == 1
    # The library's message, with the options named as the command line names them.
    assert refusal(lambda: hb.bench(None, 1, 1, [], **keywords)) == refusal(lambda: BenchOptions(**keywords))
    assert err == f"pyhipbench run: {named_as_run(refusal(lambda: BenchOptions(**keywords)), flags, keywords)}\n"


def named_as_run(message: str, flags: list[str], keywords: dict) -> str:
    """BenchOptions' `message` with each option named as `run` names it: by its flag, with the text typed where
    the message shows the value `flags` gave (command.in_flag_words)."""
    typed = dict(zip(flags, flags[1:]))
    given = {o.name: FlagValue(o.flag, o.cli == "switch", keywords.get(o.name, o.default), typed.get(o.flag))
             for o in OPTIONS if keywords.get(o.name, o.default) is not None}
    return in_flag_words(message, given)


# -- a launch out of range: its check as a chain's launch (launch_fields), before any file is read or device opened
LAUNCH_FIELDS_REFUSED = [  # (run's flags, the launch_fields call that refuses the same, the flag as typed)
    (["--grid", "0", "--block", "256"], lambda: dims("grid", 0), "--grid 0"),
    (["--grid", "1,2,3,4", "--block", "256"], lambda: dims("grid", (1, 2, 3, 4)), "--grid 1,2,3,4"),
    (["--grid", "4294967296", "--block", "256"], lambda: dims("grid", 4294967296), "--grid 4294967296"),
    (["--grid", "1", "--block", "-4"], lambda: dims("block", -4), "--block -4"),
    (["--grid", "1", "--block", "1,0"], lambda: dims("block", (1, 0)), "--block 1,0"),
    (["--grid", "1", "--block", "256", "--shared-bytes", "-1"], lambda: launch_fields(1, 256, -1, []),
     "--shared-bytes -1"),
    (["--grid", "1", "--block", "256", "--shared-bytes", "1099511627776"], lambda: launch_fields(1, 256, 1 << 40, []),
     "--shared-bytes 1099511627776"),
]


@pytest.mark.parametrize("flags, check, typed", LAUNCH_FIELDS_REFUSED,
                         ids=[" ".join(f) for f, *_ in LAUNCH_FIELDS_REFUSED])
def test_launch_fields_are_refused_before_any_work(files, no_device_wanted, capsys, flags, check, typed):
    code, out, err = call(["run", str(files / "absent.ptx"), "--kernel", "copy", *flags], capsys)
    message = refusal(check)  # `grid=0: ...`, `block[1]=0: ...`: the library's, naming the keyword
    assert (code, out, err) == (2, "", f"pyhipbench run: {typed}{message[message.index(': '):]}\n")


# -- launch values beyond the device's limits: the library's message once the kernel is loaded, as bench() gives it
LAUNCH_REFUSED = [  # (run's flags, bench()'s grid, block and keywords)
    (["--grid", "1", "--block", "2048"], 1, 2048, {}),
    (["--grid", "1", "--block", "256", "--shared-bytes", "1048576"], 1, 256, {"shared_bytes": 1048576}),
]


@pytest.mark.parametrize("flags, grid, block, keywords", LAUNCH_REFUSED, ids=[" ".join(f) for f, *_ in LAUNCH_REFUSED])
def test_launch_values_are_refused_as_bench_refuses_them(files, fake_gpu, capsys, flags, grid, block, keywords):
    code, out, err = call(["run", str(files / "k.ptx"), "--kernel", "copy", *flags, *COPY_ARGS], capsys)
    assert (code, out) == (2, "")
    kernel = fake_gpu.load_module(files / "k.ptx").kernel("copy")
    src = fake_gpu.array(np.zeros(256, np.float32))
    args = [src, fake_gpu.empty_like(src), hb.int64(256)]
    message = refusal(lambda: hb.bench(kernel, grid, block, args, **keywords))
    assert err == f"pyhipbench run: {message.replace('shared_bytes=', '--shared-bytes ')}\n"


def test_expect_values_are_refused_as_bench_refuses_them(files, fake_gpu, capsys):
    kernel = fake_gpu.load_module(files / "k.ptx").kernel("copy")
    src = fake_gpu.array(np.zeros(256, np.float32))
    args = [src, fake_gpu.empty_like(src), hb.int64(256)]
    ref = np.zeros(256, np.float32)
    run = ["run", str(files / "k.ptx"), *RUN, *COPY_ARGS]
    for flags, keywords, named, start in (
            (["--expect", f"3={files / 'ref.npy'}"], {"expect": {3: ref}}, {"expect key=3": "--expect 3"},
             "--expect 3: out of range, expected an integer in [0, 2]"),
            (["--expect", f"1={files / 'ref.npy'}", "--atol", "-1"], {"expect": {1: ref}, "atol": -1},
             {"atol=-1": "--atol -1"}, "--atol -1: out of range, expected a finite number >= 0"),
            (["--expect", f"1={files / 'ref.npy'}", "--rtol", "nan"], {"expect": {1: ref}, "rtol": float("nan")},
             {"rtol=nan": "--rtol nan"}, "--rtol nan: out of range")):
        code, out, err = call([*run, *flags], capsys)
        assert (code, out) == (2, "")
        message = refusal(lambda: hb.bench(kernel, 1, 256, args, **keywords))
        for keyword, flag in named.items():  # the library names the keyword, run the flag and the text typed
            message = message.replace(keyword, flag)
        assert err == f"pyhipbench run: {message}\n"
        assert err.startswith(f"pyhipbench run: {start}")


@pytest.mark.parametrize("size", ["-1", "-1K", "0", "0.0", "99999999T"])
def test_info_size_out_of_range_is_refused_before_any_device(no_device_wanted, capsys, size):
    code, out, err = call(["info", f"--size={size}"], capsys)  # "-1K" after a space would read as an option
    assert (code, out, err) == (2, "", f"pyhipbench info: --size {size}: out of range, expected an integer in "
                                       "[1, 18446744073709551615] (bytes)\n")


SWEEP_REFUSED = [  # (sweep's flags, sweep()'s keywords, sweep()'s message, the command's)
    (["--gpus", "0,0"], {"gpus": [0, 0]}, "gpus=[0, 0]: a device is listed twice", "--gpus 0,0: a device is listed "
     "twice"),
    (["--gpus", "-1"], {"gpus": [-1]}, "gpus[0]=-1: out of range, expected an integer >= 0", "--gpus -1: out of range, "
     "expected an integer >= 0"),
    (["--timeout-floor", "0"], {"timeout_floor_s": 0}, "timeout_floor_s=0: out of range, expected a finite number > 0",
     "--timeout-floor 0: out of range, expected a finite number > 0"),
    (["--timeout-floor", "nan"], {"timeout_floor_s": float("nan")}, "timeout_floor_s=nan: out of range, expected a "
     "finite number > 0", "--timeout-floor nan: out of range, expected a finite number > 0"),
]


@pytest.mark.parametrize("flags, keywords, message, line", SWEEP_REFUSED, ids=[" ".join(f) for f, *_ in SWEEP_REFUSED])
def test_sweep_options_are_refused_as_sweep_refuses_them(files, capsys, flags, keywords, message, line):
    db = files / "r.db"
    code, out, err = call(["sweep", str(files / "space.json"), "--out", str(db), *flags], capsys)
    assert (code, out, err) == (2, "", f"pyhipbench sweep: {line}\n")
    assert refusal(lambda: hb.sweep(hb.load_space(files / "space.json"), db, **keywords)) == message
    assert not db.exists()  # refused before the database or a worker


def test_sweep_best_is_a_count_of_one_or_more(files, capsys):
    code, out, err = call(["sweep", str(files / "space.json"), "--out", str(files / "r.db"), "--best", "0"], capsys)
    assert (code, out, err) == (2, "", "pyhipbench sweep: --best=0: out of range, expected an integer >= 1\n")
    assert not (files / "r.db").exists()


# -- bad files and outputs, refused before any work: one line from main() ----------------------------
COMMAND_ERRORS = [
    # class 2: outputs, checked before compiling or running
    (["compile", "{d}/k.ll", "--target", "sm_90", "-o", "/nonexistent/dir/x"], 2,
     "pyhipbench compile: -o /nonexistent/dir/x: directory /nonexistent/dir does not exist"),
    (["compile", "{d}/k.ll", "--target", "sm_90", "-o", "{d}/dir"], 2,
     "pyhipbench compile: -o {d}/dir: is a directory; expected a file path"),
    (["compile", "{d}/k.ll", "--target", "sm_90", "-o", "{d}/k.ll"], 2,
     "pyhipbench compile: -o {d}/k.ll: is the input file; writing it would overwrite the source"),
    (["compile", "{d}/k.ll", "--target", "sm_90", "-o", "{d}/a_file/x"], 2,
     "pyhipbench compile: -o {d}/a_file/x: {d}/a_file is not a directory"),
    (["compile", "{d}/latin1.ll", "--target", "sm_90", "-o", "{d}/dir"], 2,  # the output first: no work
     "pyhipbench compile: -o {d}/dir: is a directory; expected a file path"),
    (["run", "{d}/k.ptx", *RUN, "--out", "/nonexistent/r.json"], 2,
     "pyhipbench run: --out /nonexistent/r.json: directory /nonexistent does not exist"),
    (["run", "{d}/k.ptx", *RUN, "--out", "{d}/dir"], 2,
     "pyhipbench run: --out {d}/dir: is a directory; expected a file path"),
    (["run", "{d}/k.ptx", *RUN, "--out", "{d}/k.ptx"], 2,
     "pyhipbench run: --out {d}/k.ptx: is the input file; writing it would overwrite the source"),
    (["run", "{d}/k.ptx", *RUN, "--out", "{d}/a_file/r.json"], 2,
     "pyhipbench run: --out {d}/a_file/r.json: {d}/a_file is not a directory"),
    # class 3: inputs, the same for run and compile
    (["run", "{d}/absent.ll", *RUN], 1, "pyhipbench run: {d}/absent.ll: No such file or directory"),
    (["compile", "{d}/absent.ll", "--target", "sm_90", "-o", "{d}/o"], 1,
     "pyhipbench compile: {d}/absent.ll: No such file or directory"),
    (["run", "{d}/dir", *RUN], 1, "pyhipbench run: {d}/dir: Is a directory"),
    (["compile", "{d}/dir", "--target", "sm_90", "-o", "{d}/o"], 1, "pyhipbench compile: {d}/dir: Is a directory"),
    (["run", "{d}/latin1.ll", *RUN], 1, "pyhipbench run: {d}/latin1.ll: byte 5 (0xe9) is not UTF-8; expected "
     "LLVM IR text, LLVM bitcode or a code object (PTX, cubin, fatbin, HSACO)"),
    (["compile", "{d}/latin1.ll", "--target", "sm_90", "-o", "{d}/o"], 1,
     "pyhipbench compile: {d}/latin1.ll: byte 5 (0xe9) is not UTF-8"),
    (["run", "{d}/elf.bin", *RUN], 2, "pyhipbench run: an ELF file for machine 62 is not a GPU code object"),
    (["compile", "{d}/k.ptx", "--target", "sm_90", "-o", "{d}/o"], 2,
     "pyhipbench compile: {d}/k.ptx is already a ptx code object; compile takes LLVM IR (text or bitcode)"),
    (["compile", "{d}/ptx_named.ll", "--target", "sm_90", "-o", "{d}/o"], 2,
     "pyhipbench compile: {d}/ptx_named.ll is already a ptx code object"),
    # --expect's files, read before anything runs
    (["run", "{d}/k.ptx", *RUN, *COPY_ARGS, "--expect", "1={d}/absent.npy"], 1,
     "pyhipbench run: {d}/absent.npy: No such file or directory"),
    (["run", "{d}/k.ptx", *RUN, *COPY_ARGS, "--expect", "1={d}/k.ptx"], 2, "pyhipbench run: --expect 1={d}/k.ptx: "
     "not a .npy file (it does not start with b'\\x93NUMPY'); expected one written by numpy.save"),
    (["run", "{d}/k.ptx", *RUN, *COPY_ARGS, "--expect", "1={d}/objects.npy"], 2, "pyhipbench run: --expect "
     "1={d}/objects.npy: Object arrays cannot be loaded when allow_pickle=False; expected a .npy file of numbers"),
    (["run", "{d}/k.ptx", *RUN, *COPY_ARGS, "--expect", "1={d}/ref.npy", "--expect", "1={d}/ref.npy"], 2,
     "pyhipbench run: --expect 1=...: argument 1 has two expected files; expected one"),
    # class 6: a flag that cannot apply is refused, not ignored
    (["run", "{d}/k.ptx", *RUN, *COPY_ARGS, "--atol", "0.1"], 2, "pyhipbench run: --atol and --rtol apply to "
     "--expect's files; expected --expect N=FILE.npy with them"),
    (["run", "{d}/k.ptx", *RUN, "--no-icache-flush"], 2, "pyhipbench run: --no-icache-flush applies to LLVM IR "
     "input only; {d}/k.ptx is already a ptx code object"),
    (["run", "{d}/ptx_named.ll", *RUN, "--no-icache-flush"], 2,
     "pyhipbench run: --no-icache-flush applies to LLVM IR input only; {d}/ptx_named.ll is already a ptx"),
    (["compile", "{d}/k.ll", "--target", "gfx942", "--ptx-version", "80", "-o", "{d}/o"], 2,
     "pyhipbench compile: --ptx-version applies to NVIDIA targets (sm_*), not gfx942"),
    # the PTX version itself is the code generator's to check (CodegenError: exit 1), as compile_ir does
    (["compile", "{d}/k.ll", "--target", "sm_90", "--ptx-version", "-1", "-o", "{d}/o"], 1,
     "pyhipbench compile: --ptx-version -1: expected the PTX ISA version times ten as a positive integer"),
    (["compile", "{d}/k.ll", "--target", "sm_90", "--ptx-version", "8", "-o", "{d}/o"], 1,
     "pyhipbench compile: --ptx-version 8: LLVM"),
]


@pytest.mark.parametrize("argv, status, line", COMMAND_ERRORS,
                         ids=[f"{a[0]} {a[-2]} {a[-1]}" if a[-1].startswith("{") or a[-2].startswith("-")
                              else f"{a[0]} {a[1]}" for a, _, _ in COMMAND_ERRORS])
def test_bad_files_and_outputs_give_one_line_before_any_work(files, no_device_wanted, capsys, argv, status,
                                                                 line):
    code, out, err = call(expand(argv, files), capsys)
    assert code == status and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(line.format(d=files))
    assert not (files / "o").exists()


def test_a_code_object_write_that_fails_names_the_file(files, no_device_wanted, capsys):
    # /dev/full passes the output check (it exists and is writable); the write itself fails
    code, out, err = call(["compile", str(files / "k.ll"), "--target", "sm_90", "-o", "/dev/full"], capsys)
    assert (code, out, err) == (1, "", "pyhipbench compile: /dev/full: No space left on device\n")


@pytest.mark.parametrize("command", [["compile", "--target", "sm_90", "-o", "{d}/o"], ["run", *RUN]])
def test_an_ir_file_without_kernels_is_named(files, fake_gpu, capsys, command):
    (files / "empty.ll").write_text("")
    argv = [command[0], str(files / "empty.ll"), *expand(command[1:], files)]
    code, out, err = call(argv, capsys)
    assert code == 1 and "Traceback" not in err
    assert err.splitlines()[-1].startswith(f"pyhipbench {command[0]}: no kernel in {files / 'empty.ll'}: "
                                           "expected a function with calling convention")


# -- content, not suffix, decides IR vs code object --------------------------------------------------
def test_ptx_named_ll_runs_as_a_code_object(files, fake_gpu, capsys):
    code, out, err = call(["run", str(files / "ptx_named.ll"), *RUN, *COPY_ARGS, "--iterations", "2", "--rotate", "1"],
                          capsys)
    assert (code, err) == (0, "")
    assert "target:" not in out and "copy on Fake GPU" in out  # loaded as is, not compiled


def test_ir_named_ptx_is_compiled(files, fake_gpu, capsys):
    if fake_gpu.backend.name != "cuda":
        pytest.skip("the file holds NVPTX IR: it compiles for the CUDA fake (sm_90), not the HIP one (gfx942)")
    code, out, err = call(["run", str(files / "ir_named.ptx"), *RUN, *COPY_ARGS, "--iterations", "2", "--rotate", "1"],
                          capsys)
    assert (code, err) == (0, "")
    assert out.startswith("target: sm_90 (ptx") and "copy on Fake GPU" in out


# -- class 7: an array too large for the device, refused before it is filled -------------------------
def test_an_array_beyond_free_device_memory_is_one_line(files, fake_gpu, capsys):
    fake_gpu.backend.free_bytes = 1 << 30
    code, out, err = call(["run", str(files / "k.ptx"), *RUN, "--arg", "array:float32:1000000000000",
                           "--arg", "array:float32:256", "--arg", "int64:256"], capsys)
    assert code == 2 and out == ""
    assert err == ("pyhipbench run: --arg array:float32:1000000000000:zeros: 1000000000000 x float32 is "
                   "4000000000000 bytes; the device has 1073741824 bytes free\n")


# -- class 2: a result that cannot be written after the run is printed, not lost ---------------------
def disk_full(descriptor: int) -> None:
    """os.fsync as on a full disk, where a file system says so only as the written file is synced."""
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_json_write_prints_the_result_and_says_where(files, fake_gpu, capsys, monkeypatch):
    target = files / "r.json"
    monkeypatch.setattr(os, "fsync", disk_full)
    code, out, err = call(["run", str(files / "k.ptx"), *RUN, *COPY_ARGS, "--iterations", "3", "--rotate", "1",
                           "--out", str(target)], capsys)
    assert code == 1
    assert err == (f"pyhipbench run: could not write {target}: No space left on device; the report is "
                   "printed on stdout instead\n")
    [result] = json.loads(out[out.index("{"):])["results"]
    assert result["kernel"] == "copy" and result["samples"] == 3
    assert not target.exists() and not list(files.glob(".r.json.*"))  # no part of it left behind


def test_a_failed_code_object_write_is_one_line_and_leaves_the_old_one(files, capsys, monkeypatch):
    (files / "o.ptx").write_bytes(b"the code object before")
    monkeypatch.setattr(os, "fsync", disk_full)
    code, out, err = call(["compile", str(files / "k.ll"), "--target", "sm_90", "-o", str(files / "o.ptx")],
                          capsys)
    assert code == 1
    assert err == f"pyhipbench compile: {files / 'o.ptx'}: No space left on device\n"
    assert (files / "o.ptx").read_bytes() == b"the code object before" and not list(files.glob(".o.ptx.*"))


def test_prologue_help_warns_about_the_kernel_argument_registers(capsys):
    code, out, _ = call(["compile", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "runs before the kernel-argument loads (LLVM hoists them to the entry; pyhipbench puts the " \
           "prologue first)" in text
    assert "the kernarg segment pointer (s[0:1] in most kernels)" in text


@pytest.mark.parametrize("argv, message", [
    (["run", "k.ptx", *RUN, "--format", "csv"], "pyhipbench run: --format csv: it sets the format of --out - (stdout), "
                                               "and none is given; expected --out - with it"),
    (["run", "k.ptx", *RUN, "--format", "md", "--out", "r.json"], "pyhipbench run: --format md: it sets the format"),
    (["run", "k.ptx", *RUN, "--hold", "1e9"], "pyhipbench run: --hold 1e9: out of range, expected a finite number "
                                             ">= 0 and <= 3600.0"),
    (["info", "-q", "-v"], "pyhipbench info: -q with -v: expected one of them"),
])
def test_what_would_be_silently_ignored_is_refused_in_one_line(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.ptx").write_bytes(b"")
    code, _, err = call(argv, capsys)
    assert code == 2 and err.startswith(message) and err.count("\n") == 1, err
