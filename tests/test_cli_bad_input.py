"""Every bad input to the CLI gives one line naming it, the right exit status, and no traceback.

Malformed options are argparse's (exit 2, with usage); bad files, outputs and
arguments found by a command are main()'s (BenchError: exit 2, other package
errors and OSError: exit 1). Classes refer to issue 6.
"""
from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from codegen_helpers import IR_DATA
from pyhipbench import cli

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
    return tmp_path


@pytest.fixture
def fake_gpu(monkeypatch, device):
    # compile_for_device asks a CUDA driver which PTX it loads; the fake's is CUDA 12.4
    monkeypatch.setattr(device.backend, "driver_version", lambda: 12040, raising=False)
    monkeypatch.setattr(cli, "_open_device", lambda backend: device)
    return device


@pytest.fixture
def no_device_wanted(monkeypatch):
    """Fails the test if the command gets as far as opening a device."""
    def refuse(backend):
        raise AssertionError("the device was opened before the bad input was refused")
    monkeypatch.setattr(cli, "_open_device", refuse)


def call(argv: list[str], capsys) -> tuple[int, str, str]:
    """main(argv)'s exit status (argparse's SystemExit included), stdout and stderr."""
    try:
        code = cli.main(argv)
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def expand(argv: list[str], folder: Path) -> list[str]:
    return [a.format(d=folder) for a in argv]


# -- malformed options: argparse, exit 2, before anything is read ------------------------------------
OPTION_ERRORS = [
    # class 7: sizes
    (["info", "--size", "infM"], "argument --size: 'infM' is not a size; expected bytes such as 4096, 64M or 1G"),
    (["info", "--size", "nan"], "argument --size: 'nan' is not a size"),
    (["info", "--size", "-1"], "argument --size: '-1' is -1 bytes; expected 1 to 2**63 - 1 bytes"),
    (["info", "--size", "0"], "argument --size: '0' is 0 bytes; expected 1 to 2**63 - 1 bytes"),
    (["info", "--size", "0.1"], "argument --size: '0.1' is 0 bytes"),
    (["info", "--size", "9223372036854775808"], "argument --size: '9223372036854775808' is 9223372036854775808 bytes; expected 1"),
    (["info", "--size", "8388608T"], "argument --size: '8388608T' is 9223372036854775808 bytes"),
    (["info", "--size", "12Q"], "argument --size: '12Q' is not a size"),
    (["info", "--size", ""], "argument --size: '' is not a size"),
    (["info", "--size", "9" * 5000], "argument --size: '99999"),  # beyond int()'s digit limit
    # grid, block
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "0", "--block", "1"], "argument --grid: '0': expected 1 to 3 "
     "comma-separated integers from 1 to 4294967295"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1,2,3,4", "--block", "1"], "argument --grid: '1,2,3,4': expected 1 to 3"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1,x", "--block", "1"], "argument --grid: '1,x': expected 1 to 3"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1.5", "--block", "1"], "argument --grid: '1.5': expected"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "4294967296", "--block", "1"], "argument --grid: '4294967296'"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1", "--block", "-4"], "argument --block: '-4': expected 1 to 3"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "1", "--block", ","], "argument --block: ',': expected 1 to 3"),
    (["run", "{d}/k.ll", *RUN[:2], "--grid", "9" * 5000, "--block", "1"], "argument --grid: '99999"),
    # rotate, iterations, warmup, shared bytes
    (["run", "{d}/k.ll", *RUN, "--rotate", "0"], "argument --rotate: '0': expected 'auto' or a number of "
     "argument sets, a whole number from 1 to 1000000"),
    (["run", "{d}/k.ll", *RUN, "--rotate", "many"], "argument --rotate: 'many': expected 'auto' or"),
    (["run", "{d}/k.ll", *RUN, "--iterations", "0"], "argument --iterations: '0': expected a count of "
     "iterations, a whole number from 1 to 1000000"),
    (["run", "{d}/k.ll", *RUN, "--iterations", "1e3"], "argument --iterations: '1e3': expected a count"),
    (["run", "{d}/k.ll", *RUN, "--iterations", "10000001"], "argument --iterations: '10000001': expected"),
    (["run", "{d}/k.ll", *RUN, "--iterations", "9" * 5000], "argument --iterations: '99999"),
    (["run", "{d}/k.ll", *RUN, "--warmup", "-1"], "argument --warmup: '-1': expected a count of warm-up "
     "launches, a whole number from 0 to 1000000"),
    (["run", "{d}/k.ll", *RUN, "--shared-bytes", "-1"], "argument --shared-bytes: '-1': expected bytes of "
     "dynamic shared memory"),
    (["run", "k.ptx", *RUN, "--precision", "2"], "argument --precision: '2': expected a relative precision"),
    (["run", "k.ptx", *RUN, "--precision", "0"], "argument --precision: '0': expected a relative precision"),
    (["run", "k.ptx", *RUN, "--max-time", "-1"], "argument --max-time: '-1': expected a time in seconds"),
    (["run", "k.ptx", *RUN, "--slower-than", "0"], "argument --slower-than: '0': expected a time in µs above 0"),
    (["run", "k.ptx", *RUN, "--slower-than", "nan"], "argument --slower-than: 'nan': expected a time in µs"),
    (["run", "k.ptx", *RUN, "--slower-than", "5us"], "argument --slower-than: '5us': expected a time in µs"),
    (["run", "k.ptx", *RUN, "--timer", "clock"], "argument --timer: invalid choice: 'clock'"),
    (["run", "k.ptx", *RUN, "--cache", "cold"], "argument --cache: invalid choice: 'cold'"),
    # the --arg language (class 6/7), refused while parsing the options
    (["run", "{d}/k.ll", *RUN, "--arg", "array:float32:16:noise"], "argument --arg: 'array:float32:16:noise': "
     "fill 'noise' is not one of zeros, ones, arange, random"),
    (["run", "{d}/k.ll", *RUN, "--arg", "vector:3"], "argument --arg: 'vector:3': expected TYPE:VALUE, "
     "array:DTYPE:COUNT[:FILL] or shared:DTYPE:COUNT[:FILL]"),
    (["run", "{d}/k.ll", *RUN, "--arg", "int32:4294967296"], "argument --arg: 'int32:4294967296': int32(4294967296): out of range, expected an integer in [-2147483648, 2147483647]"),
    (["run", "{d}/k.ll", *RUN, "--arg", "float32:1e40"], "argument --arg: 'float32:1e40': float32(1e+40): out of range, the largest float32 is"),
    (["run", "{d}/k.ll", *RUN, "--arg", "array:object:4"], "argument --arg: 'array:object:4': dtype 'object' is not one of int8"),
    (["run", "{d}/k.ll", *RUN, "--arg", "array:float32:0"], "argument --arg: 'array:float32:0': element count 0 is not a positive whole number"),
    (["run", "{d}/k.ll", *RUN, "--arg", "array:float64:2305843009213693952"], "argument --arg: 'array:float64:2305843009213693952': "
     "2305843009213693952 x float64 is 18446744073709551616 bytes, more than any device addresses"),
    # --expect and its tolerances
    (["run", "k.ptx", *RUN, "--expect", "{d}/ref.npy"], "argument --expect: '{d}/ref.npy': expected N=FILE.npy, N "
     "the position of an --arg (0 for the first)"),
    (["run", "k.ptx", *RUN, "--expect", "dst={d}/ref.npy"], "argument --expect: 'dst={d}/ref.npy': expected "
     "N=FILE.npy"),
    (["run", "k.ptx", *RUN, "--expect", "²={d}/ref.npy"], "argument --expect: '²={d}/ref.npy': expected N=FILE.npy"),
    (["run", "k.ptx", *RUN, "--atol", "-1"], "argument --atol: '-1': expected a tolerance, a finite number >= 0"),
    (["run", "k.ptx", *RUN, "--rtol", "nan"], "argument --rtol: 'nan': expected a tolerance"),
    # compile's target and versions
    (["compile", "{d}/k.ll", "--target", "volta", "-o", "{d}/o"], "argument --target: unknown target 'volta'"),
    (["compile", "{d}/k.ll", "--target", "sm_90", "--ptx-version", "8", "-o", "{d}/o"],
     "argument --ptx-version: '8': expected a PTX ISA version times ten such as 80"),
    (["compile", "{d}/k.ll", "--target", "gfx942", "--code-object-version", "3", "-o", "{d}/o"],
     "argument --code-object-version: invalid choice: 3"),
]


@pytest.mark.parametrize("argv, message", OPTION_ERRORS, ids=[" ".join(a[:1] + a[-2:]) for a, _ in OPTION_ERRORS])
def test_malformed_options_are_refused_by_argparse(files, no_device_wanted, capsys, argv, message):
    code, out, err = call(expand(argv, files), capsys)
    assert code == 2 and out == ""
    assert err.startswith("usage: pyhipbench")
    assert err.splitlines()[-1].startswith(f"pyhipbench {argv[0]}: error: {message.format(d=files)}")
    assert not (files / "o").exists()


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
    (["run", "{d}/k.ptx", *RUN, *COPY_ARGS, "--expect", "3={d}/ref.npy"], 2, "pyhipbench run: --expect "
     "3={d}/ref.npy: there are 3 --arg options; expected a position from 0 to 2"),
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
def test_a_failed_json_write_prints_the_result_and_says_where(files, fake_gpu, capsys, monkeypatch):
    target = files / "r.json"

    def disk_full(self, text, *args, **kwargs):
        raise OSError(28, "No space left on device", str(self))
    monkeypatch.setattr(Path, "write_text", disk_full)
    code, out, err = call(["run", str(files / "k.ptx"), *RUN, *COPY_ARGS, "--iterations", "3", "--rotate", "1",
                           "--out", str(target)], capsys)
    assert code == 1
    assert err == (f"pyhipbench run: could not write {target}: No space left on device; the report is "
                   "printed on stdout instead\n")
    [result] = json.loads(out[out.index("["):])
    assert result["kernel"] == "copy" and result["samples"] == 3
    assert not target.exists()


def test_a_failed_code_object_write_is_one_line(files, capsys, monkeypatch):
    def disk_full(self, *args, **kwargs):
        raise OSError(28, "No space left on device", str(files / "o.ptx"))
    monkeypatch.setattr(Path, "write_bytes", disk_full)
    code, out, err = call(["compile", str(files / "k.ll"), "--target", "sm_90", "-o", str(files / "o.ptx")],
                          capsys)
    assert code == 1
    assert err == f"pyhipbench compile: {files / 'o.ptx'}: No space left on device\n"


def test_prologue_help_warns_about_the_kernel_argument_registers(capsys):
    code, out, _ = call(["compile", "--help"], capsys)
    assert code == 0
    text = " ".join(out.split())
    assert "runs before the kernel-argument loads (LLVM hoists them to the entry; pyhipbench puts the " \
           "prologue first)" in text
    assert "the kernarg segment pointer (s[0:1] in most kernels)" in text
