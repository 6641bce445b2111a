"""Values beyond a type's range and sizes
beyond the device are BenchErrors naming the value and the limit, never
numpy's or Python's overflow errors, and never an allocation."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pyhipbench as hb

MiB = 1 << 20


@pytest.mark.parametrize("make,value,message", [
    (hb.float32, 1e40, r"float32\(1e\+40\): out of range, the largest float32 is 3.4028234663852886e\+38"),
    (hb.float32, -1e40, r"float32\(-1e\+40\): out of range, the largest float32 is"),
    (hb.float32, 10**39, r"float32\(1000.*000\): out of range, the largest float32 is"),
    (hb.float16, 1e5, r"float16\(100000.0\): out of range, the largest float16 is 65504.0"),
    (hb.float16, 65520.0, r"float16\(65520.0\): out of range, the largest float16 is 65504.0"),
    (hb.float16, np.float32(7e4), r"float16\(np.float32\(70000.0\)\): out of range"),
    (hb.float64, 10**400, r"float64\(1000.*000\): out of range, the largest float64 is 1.7976931348623157e\+308"),
    (hb.float64, -(10**400), r"float64\(-1000.*000\): out of range"),
    (hb.float64, np.longdouble("1e400") if np.finfo(np.longdouble).max > 1e308 * 10 else 10**400,
     r"float64\(.*\): out of range"),
])
def test_finite_floats_beyond_the_range_are_refused(make, value, message):
    with pytest.raises(hb.BenchError, match=message):
        make(value)


@pytest.mark.parametrize("make", [hb.float16, hb.float32, hb.float64])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, np.float64("inf"), np.float32("nan")],
                         ids=repr)
def test_nan_and_inf_are_kernel_arguments(make, value):
    packed = np.frombuffer(make(value).pack(), np.dtype(make.__name__).newbyteorder("<"))[0]
    assert (np.isnan(packed) and np.isnan(value)) or packed == value


@pytest.mark.parametrize("make,value,packed", [
    (hb.float16, 65519.0, 65504.0),            # rounds down to the largest float16, not to inf
    (hb.float32, 3.4028235e38, float(np.finfo(np.float32).max)),
    (hb.float16, 1e-10, 0.0),                  # underflow is rounding, not an error
    (hb.float64, 10**300, 1e300),
])
def test_values_that_round_into_the_range_are_kept(make, value, packed):
    assert float(np.frombuffer(make(value).pack(), np.dtype(make.__name__))[0]) == packed


@pytest.mark.parametrize("make,value,message", [
    (hb.int64, 2**63, r"int64\(9223372036854775808\): out of range, expected an integer in "
                      r"\[-9223372036854775808, 9223372036854775807\]"),
    (hb.uint64, 2**64, r"uint64\(18446744073709551616\): out of range, expected an integer in \[0, 18446744073709551615\]"),
    (hb.uint64, -1, r"uint64\(-1\): out of range"),
    (hb.int8, 10**400, r"int8\(1000.*000\): out of range, expected an integer in \[-128, 127\]"),
    (hb.int16, np.int64(1 << 20), r"int16\(np.int64\(1048576\)\): out of range, expected an integer in \[-32768, 32767\]"),
    (hb.uint32, np.int8(-1), r"uint32\(np.int8\(-1\)\): out of range, expected an integer in \[0, 4294967295\]"),
])
def test_integers_beyond_the_range_are_refused(make, value, message):
    with pytest.raises(hb.BenchError, match=message):
        make(value)


@pytest.mark.parametrize("value,message", [
    (complex(1, 1), r"float32\(\(1\+1j\)\): expected a real number \(int or float\), got complex"),
    (True, r"float32\(True\): expected a real number \(int or float\), got a bool"),
    (None, r"float32\(None\): expected a real number \(int or float\), got NoneType"),
])
def test_float_scalars_refuse_non_reals(value, message):
    with pytest.raises(hb.BenchError, match=message):
        hb.float32(value)


def test_scalar_dtype_is_checked():
    assert hb.Scalar(np.int64(3), "int32").pack() == b"\x03\0\0\0"
    for dtype in ("complex64", None, "float33", ">i4"):
        with pytest.raises(hb.BenchError, match=r"Scalar dtype .* is not one of int8, int16, .*, float64"):
            hb.Scalar(1, dtype)


def test_overflowing_shapes_are_sized_exactly_and_refused(device):
    with pytest.raises(hb.BenchError, match=rf"an array of shape \(4294967296, 4294967296\) float32 needs "
                                            rf"{4 * 2**64} bytes; the device has {900 * MiB} bytes free"):
        device.empty((2**32, 2**32), np.float32)
    assert device.backend.live == {}


def test_arrays_beyond_free_memory_are_refused_before_allocating(device):
    device.backend.free_bytes = 64 * MiB
    with pytest.raises(hb.BenchError, match=rf"needs {64 * MiB + 4} bytes; the device has {64 * MiB} bytes free"):
        device.empty(16 * MiB + 1, np.float32)
    assert device.backend.live == {}
    assert device.empty(16 * MiB, np.float32).nbytes == 64 * MiB  # exactly what is free still fits


@pytest.mark.parametrize("shape,message", [
    (-1, r"shape=-1: out of range, expected an integer >= 0"),
    ((4, -2), r"shape\[1\]=-2: out of range, expected an integer >= 0"),
])
def test_negative_dimensions_are_refused(device, shape, message):
    with pytest.raises(hb.BenchError, match=message):
        device.empty(shape, np.float32)
    assert device.backend.live == {}


def test_empty_arrays_are_allowed(device):
    assert device.empty((0, 5), np.float64).nbytes == 0
    assert device.empty((), np.float64).nbytes == 8


@pytest.mark.parametrize("dtype,message", [
    ("float33", r"dtype 'float33' is not a numpy dtype; expected a bool, integer, float or complex dtype"),
    (None, r"dtype None is not a numpy dtype"),
    (object, r"unsupported array dtype object"),
])
def test_bad_dtypes_are_named(device, dtype, message):
    with pytest.raises(hb.BenchError, match=message):
        device.empty(4, dtype)


def test_copy_from_takes_a_numpy_array(device):
    with pytest.raises(hb.BenchError, match="copy_from takes a numpy array, got list"):
        device.empty(2, np.float32).copy_from([1.0, 2.0])


def _random_values(rng):
    """Values of every kind a tuner might pass by mistake, extremes included."""
    from decimal import Decimal
    from fractions import Fraction
    magnitude = rng.choice([0, 1, 2**7, 2**15, 2**31, 2**53, 2**63, 2**64, 2**128, 10**400])
    integer = rng.choice([-1, 1]) * (magnitude + rng.randrange(-2, 3))
    real = rng.choice([0.0, 1.5, 65504.0, 65520.0, 3.4e38, 3.5e38, 1.8e308, math.inf, -math.inf, math.nan,
                       5e-324, rng.uniform(-1e40, 1e40)])
    return rng.choice([
        integer, real, np.float16(real) if abs(real) < 6e4 or not math.isfinite(real) else np.float16(1),
        np.float32(real) if abs(real) < 3e38 or not math.isfinite(real) else np.float32(1), np.float64(real),
        np.int8(integer % 100), np.uint64(abs(integer) % 2**64), np.int64(integer % 2**62),
        True, np.True_, str(integer), None, complex(real, 1), Fraction(integer, 3), Decimal(1), [integer],
        np.array([integer % 7]), np.array(integer % 7), np.longdouble(real)])


@pytest.mark.parametrize("make", [hb.int8, hb.int16, hb.int32, hb.int64, hb.uint8, hb.uint16, hb.uint32,
                                  hb.uint64, hb.float16, hb.float32, hb.float64, hb.Pointer])
def test_constructors_raise_only_bench_errors(make):
    import random
    rng = random.Random(f"issue6-{make.__name__}")
    accepted = refused = 0
    for _ in range(2000):
        value = _random_values(rng)
        try:
            made = make(value)
        except hb.BenchError as error:
            assert make.__name__ in str(error)  # names the constructor, and so the type
            refused += 1
            continue
        assert len(made.pack()) == made.nbytes
        accepted += 1
    assert accepted and refused
