"""The `--arg` language (pyhipbench._launch.arg_spec): parsed without a device, made on one."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._launch import arg_spec
from pyhipbench._launch.arg_spec import ArraySpec, ScalarSpec, materialize, parse_arg


@pytest.mark.parametrize("text, spec", [
    ("int64:1048576", ScalarSpec("int64", 1048576)),
    ("int64:0x10", ScalarSpec("int64", 16)),
    ("uint64:18446744073709551615", ScalarSpec("uint64", 2**64 - 1)),
    ("int8:-128", ScalarSpec("int8", -128)),
    ("float32:2.5", ScalarSpec("float32", 2.5)),
    ("float16:65504", ScalarSpec("float16", 65504.0)),
    ("float64:-inf", ScalarSpec("float64", -math.inf)),
    ("array:float32:16", ArraySpec("float32", 16, "zeros", shared=False)),
    ("array:int32:8:random", ArraySpec("int32", 8, "random", shared=False)),
    ("shared:uint8:4:ones", ArraySpec("uint8", 4, "ones", shared=True)),
    ("array:int8:128:arange", ArraySpec("int8", 128, "arange", shared=False)),
    ("array:float16:2049:arange", ArraySpec("float16", 2049, "arange", shared=False)),
])
def test_parses_each_form_into_plain_picklable_data(text, spec):
    parsed = parse_arg(text)
    assert parsed == spec
    assert pickle.loads(pickle.dumps(parsed)) == spec  # sweeps ship specs to worker processes
    with pytest.raises(AttributeError):
        parsed.dtype = "int8"  # frozen
    assert parse_arg(str(parsed)) == spec  # prints back as --arg text


@pytest.mark.parametrize("text, message", [
    ("vector:3", "expected TYPE:VALUE, array:DTYPE:COUNT[:FILL] or shared:DTYPE:COUNT[:FILL]"),
    ("", "expected TYPE:VALUE"),
    ("int64", "'int64': expected int64:VALUE"),
    ("int64:", "'int64:': expected int64:VALUE"),
    ("int64:1:2", "'int64:1:2': expected int64:VALUE"),
    ("int64:1.5", "'1.5' is not a valid int64"),
    ("int32:4294967296", "int32(4294967296): out of range, expected an integer in [-2147483648, 2147483647]"),
    ("uint8:-1", "uint8(-1): out of range, expected an integer in [0, 255]"),
    ("float16:1e5", "float16(100000.0): out of range, the largest float16 is 65504.0"),
    ("float32:1e40", "float32(1e+40): out of range"),
    ("float64:1e400", "1e400 is out of range for float64"),
    ("float32:abc", "'abc' is not a valid float32"),
    ("int64:" + "9" * 5000, "a value of 5000 characters is out of range for int64"),
    ("array:float32", "expected array:DTYPE:COUNT[:FILL]"),
    ("shared:float32:4:zeros:more", "expected shared:DTYPE:COUNT[:FILL]"),
    ("array:foo:4", "dtype 'foo' is not one of int8, int16"),
    ("array:bool:4", "dtype 'bool' is not one of"),
    ("array:float32:x", "element count 'x' is not a positive whole number"),
    ("array:float32:0", "element count 0 is not a positive whole number"),
    ("array:float32:-4", "element count '-4' is not a positive whole number"),
    ("array:float32:1e6", "element count '1e6' is not a positive whole number"),
    ("array:float32:3000000000000000000", "3000000000000000000 x float32 is 12000000000000000000 bytes, "
                                          "more than any device addresses"),
    ("array:float32:" + "9" * 5000, "an element count of 5000 digits is more than any device addresses"),
    ("array:float32:16:noise", "fill 'noise' is not one of zeros, ones, arange, random"),
    ("array:int8:129:arange", "arange reaches 128, but int8 holds whole numbers exactly only up to 127"),
    ("array:float16:2050:arange", "arange reaches 2049, but float16 holds whole numbers exactly only up to 2048"),
])
def test_bad_text_is_refused_naming_the_field(text, message):
    with pytest.raises(hb.BenchError) as raised:
        parse_arg(text)
    assert type(raised.value) is hb.BenchError
    assert message in str(raised.value)


def test_specs_built_in_code_are_checked_too():
    """A sweep may build specs directly; they hold the same invariants as parsed ones."""
    spec = ArraySpec("float32", np.int64(4))
    assert spec.count == 4 and type(spec.count) is int and spec.nbytes == 16
    assert ScalarSpec("uint8", np.uint8(7)).value == 7


@pytest.mark.parametrize("make, message", [
    (lambda: ArraySpec("float32", 0), "element count 0 is not a positive whole number"),
    (lambda: ArraySpec("float32", True), "element count True is not a positive whole number"),
    (lambda: ArraySpec("float32", 4.0), "element count 4.0 is not a positive whole number"),
    (lambda: ArraySpec("complex64", 4), "dtype 'complex64' is not one of int8"),
    (lambda: ArraySpec("float32", 4, "noise"), "fill 'noise' is not one of zeros, ones, arange, random"),
    (lambda: ArraySpec("float32", 4, shared="yes"), "shared='yes': expected True or False"),
    (lambda: ArraySpec("int64", 2**61), "2305843009213693952 x int64 is 18446744073709551616 bytes"),
    (lambda: ScalarSpec("int8", 300), "int8(300): out of range, expected an integer in [-128, 127]"),
    (lambda: ScalarSpec("float32", "2.5"), "float32('2.5'): expected a real number (int or float), got str"),
    (lambda: ScalarSpec(np.float32, 1), "dtype <class 'numpy.float32'> is not one of int8"),
])
def test_bad_specs_built_in_code_are_refused(make, message):
    with pytest.raises(hb.BenchError) as raised:
        make()
    assert type(raised.value) is hb.BenchError
    assert str(raised.value).startswith(message)


def test_scalars_materialise_as_typed_scalars(device):
    assert materialize(parse_arg("int64:0x10"), device) == hb.int64(16)
    assert materialize(parse_arg("float32:2.5"), device) == hb.float32(2.5)


@pytest.mark.parametrize("fill, expected", [
    ("zeros", np.zeros(16)), ("ones", np.ones(16)), ("arange", np.arange(16)),
])
def test_arrays_are_filled_as_asked(device, fill, expected):
    array = materialize(parse_arg(f"array:float32:16:{fill}"), device)
    assert isinstance(array, hb.DeviceArray)
    np.testing.assert_array_equal(array.to_numpy(), expected.astype(np.float32))


def test_shared_arrays_are_not_rotated(device):
    made = materialize(parse_arg("shared:int8:4:ones"), device)
    assert isinstance(made, hb._launch.args.Shared)
    np.testing.assert_array_equal(made.array.to_numpy(), np.ones(4, np.int8))


@pytest.mark.parametrize("dtype", [d for d in arg_spec.DTYPES if d[0] in "iu"])
def test_random_integers_are_random_and_in_the_documented_range(device, dtype):
    values = materialize(parse_arg(f"array:{dtype}:4096:random"), device).to_numpy()
    assert values.dtype == np.dtype(dtype)
    assert values.min() >= 0 and values.max() <= arg_spec.RANDOM_INT_MAX
    assert len(np.unique(values)) == arg_spec.RANDOM_INT_MAX + 1  # 4096 draws hit all 128 values
    again = materialize(parse_arg(f"array:{dtype}:4096:random"), device).to_numpy()
    np.testing.assert_array_equal(values, again)  # seeded: runs compare


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_random_floats_are_in_zero_to_one(device, dtype):
    values = materialize(parse_arg(f"array:{dtype}:4096:random"), device).to_numpy()
    assert values.dtype == np.dtype(dtype)
    assert values.min() >= 0 and values.max() < 1
    assert len(np.unique(values)) > 1000


def test_an_array_larger_than_free_device_memory_is_refused_before_allocating(device):
    device.backend.free_bytes = 1 << 20
    with pytest.raises(hb.BenchError) as raised:
        materialize(parse_arg("array:float32:1000000000000"), device)
    assert type(raised.value) is hb.BenchError
    assert str(raised.value) == ("--arg array:float32:1000000000000:zeros: 1000000000000 x float32 is "
                                 "4000000000000 bytes; the device has 1048576 bytes free")
    assert device.backend.live == {}


def test_an_array_larger_than_available_host_memory_is_refused(device, monkeypatch):
    monkeypatch.setattr(arg_spec, "host_available_bytes", lambda: 1000)
    with pytest.raises(hb.BenchError) as raised:
        materialize(parse_arg("shared:int32:1024:random"), device)
    assert type(raised.value) is hb.BenchError
    assert str(raised.value) == ("--arg shared:int32:1024:random: 1024 x int32 is 4096 bytes, filled on the "
                                 "host first; the host has 1000 bytes available")
    assert device.backend.live == {}


def test_host_available_bytes_is_a_positive_count():
    available = arg_spec.host_available_bytes()
    assert isinstance(available, int) and available > 0
