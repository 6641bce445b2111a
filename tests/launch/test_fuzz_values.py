"""Fuzzing the values a tuner hands the library: only the package's own errors may escape.

Hypothesis drives the scalar constructors, `Pointer`, code-object bytes
(random truncations and bit flips of real PTX, an HSACO made here, and
cubin/fatbin headers) and whole `pyhipbench run` command lines on the fake
device. Any exception that is not a `pyhipbench.Error` fails the test
(tests/cli/test_cli_fuzz.py covers the CLI's option strings one by one). The
example count is bounded (PYHIPBENCH_FUZZ_EXAMPLES, default 150 per target)
so CI stays fast.
"""
from __future__ import annotations

import os
import struct
from importlib import resources

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._codeobject import image as codeobject

from codegen_helpers import IR_DATA, require_toolchain

EXAMPLES = int(os.environ.get("PYHIPBENCH_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
COPY_PTX = resources.files("pyhipbench") / "kernels" / "copy.ptx"

SCALARS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64"]
# Pieces of the --arg language and of what goes wrong with it.
ARG_WORDS = st.sampled_from(SCALARS + ["array", "shared", "float", "bool", "object", "complex64",
                                       "zeros", "ones", "arange", "random", "noise", "0", "1", "-1",
                                       "16", "1024", "1e40", "nan", "inf", "-inf", "0x10", "1.5",
                                       "99999999999999999999999", "", " ", "é", "\x00"])
ARG_TEXT = st.one_of(st.lists(ARG_WORDS, min_size=1, max_size=5).map(":".join), st.text(max_size=30))


@pytest.fixture
def fake_gpu(monkeypatch, device):
    monkeypatch.setattr(cli, "_open_device", lambda backend, index=0: device)
    return device


def run_cli(argv: list[str], capsys) -> None:
    """Runs the CLI: any exit is fine, a traceback or a foreign exception is not."""
    try:
        code = cli.main(argv)
    except SystemExit as e:  # argparse refusing a value: its usage line and exit 2
        code = e.code
    err = capsys.readouterr().err
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code:
        assert err.strip(), f"{argv}: exit {code} without a message"


@FUZZ
@given(args=st.lists(ARG_TEXT, min_size=0, max_size=4))
def test_run_command_lines(fake_gpu, capsys, args):
    argv = ["run", str(COPY_PTX), "--kernel", "copy", "--grid", "1", "--block", "32",
            "--iterations", "2", "--rotate", "1"]
    for a in args:
        argv += ["--arg", a]
    run_cli(argv, capsys)


SCALAR_VALUES = st.one_of(
    st.integers(min_value=-(1 << 70), max_value=1 << 70), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), st.text(max_size=4), st.complex_numbers(max_magnitude=10),
    st.integers(min_value=-(1 << 62), max_value=1 << 62).map(np.int64),
    st.integers(min_value=0, max_value=255).map(np.uint8),
    st.floats(width=32).map(np.float32), st.integers(0, 1).map(np.bool_))


@FUZZ
@given(name=st.sampled_from(SCALARS), value=SCALAR_VALUES)
def test_scalar_constructors(name, value):
    try:
        scalar = getattr(hb, name)(value)
    except hb.Error:
        return
    assert len(scalar.pack()) == np.dtype(name).itemsize


@FUZZ
@given(address=SCALAR_VALUES)
def test_pointer(address):
    try:
        pointer = hb.Pointer(address)
    except hb.Error:
        return
    assert len(pointer.pack()) == 8


def _hsaco() -> bytes:
    require_toolchain("gfx942")
    from pyhipbench.codegen import compile_ir
    return compile_ir(IR_DATA / "kernels_gfx942.ll", "gfx942").data


def _elf_header(machine: int) -> bytes:
    """A 64-byte ELF64 header for `machine`, with no sections: what a cut-off cubin starts with."""
    header = bytearray(64)
    header[:4] = b"\x7fELF"
    header[4], header[5], header[6] = 2, 1, 1
    struct.pack_into("<HHI", header, 16, 2, machine, 1)
    return bytes(header)


@pytest.fixture(scope="module")
def code_objects() -> dict[str, bytes]:
    return {"ptx": COPY_PTX.read_bytes(), "hsaco": _hsaco(),
            "cubin": _elf_header(codeobject.EM_CUDA) + bytes(range(256)),
            "fatbin": struct.pack("<IHHQ", codeobject.FATBIN_MAGIC, 1, 16, 256) + bytes(range(256))}


@FUZZ
@given(kind=st.sampled_from(["ptx", "hsaco", "cubin", "fatbin"]), data=st.data())
def test_code_object_bytes(code_objects, fake_gpu, kind, data):
    image = bytearray(code_objects[kind])
    cut = data.draw(st.integers(0, len(image)), label="truncate at")
    image = image[:cut]
    for _ in range(data.draw(st.integers(0, 8), label="bit flips")):
        if image:
            i = data.draw(st.integers(0, len(image) - 1))
            image[i] ^= 1 << data.draw(st.integers(0, 7))
    try:
        codeobject.kernels(bytes(image))
    except hb.Error:
        pass
    try:
        fake_gpu.load_module(bytes(image))
    except hb.Error:
        pass
