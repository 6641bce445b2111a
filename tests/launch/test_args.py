"""Typed scalars, pointers, and packing arguments at the code object's offsets."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._device.backends import KernelParam
from pyhipbench._launch.args import check_args, pack_args


@pytest.mark.parametrize("make,value,packed", [
    (hb.int8, -2, b"\xfe"), (hb.uint8, 255, b"\xff"), (hb.int16, -1, b"\xff\xff"),
    (hb.uint16, 513, b"\x01\x02"), (hb.int32, -5, struct.pack("<i", -5)),
    (hb.uint32, 2**32 - 1, b"\xff" * 4), (hb.int64, 1 << 40, struct.pack("<q", 1 << 40)),
    (hb.uint64, 2**64 - 1, b"\xff" * 8), (hb.float16, 1.5, np.float16(1.5).tobytes()),
    (hb.float32, 0.25, struct.pack("<f", 0.25)), (hb.float64, -2.5, struct.pack("<d", -2.5)),
])
def test_scalars_pack_to_their_size(make, value, packed):
    scalar = make(value)
    assert scalar.pack() == packed and scalar.nbytes == len(packed)


@pytest.mark.parametrize("make,value,message", [
    (hb.int32, 2**31, r"int32\(2147483648\): out of range, expected an integer in \[-2147483648, 2147483647\]"),
    (hb.uint8, -1, r"uint8\(-1\): out of range, expected an integer in \[0, 255\]"),
    (hb.int64, 1.5, r"int64\(1.5\): expected an integer in \[-9223372036854775808, 9223372036854775807\], got float"),
    (hb.int32, True, r"int32\(True\): expected an integer in \[-2147483648, 2147483647\], got a bool"),
    (hb.float32, "1", r"float32\('1'\): expected a real number \(int or float\), got str"),
])
def test_bad_scalars(make, value, message):
    with pytest.raises(hb.BenchError, match=message):
        make(value)


def test_pack_places_values_at_offsets_with_padding():
    params = [KernelParam("a", 0, 4), KernelParam("p", 8, 8), KernelParam("c", 16, 1)]
    buffer = pack_args(params, [hb.float32(1.0), hb.Pointer(0x1234), hb.uint8(7)], lambda a: 0)
    assert buffer == struct.pack("<f4xQB", 1.0, 0x1234, 7)


def test_check_args_names_the_parameter():
    params = [KernelParam("n", 0, 4)]
    with pytest.raises(hb.BenchError, match=r"argument 0 \(n\) of kernel 'k' is int64 \(8 B\), but the parameter is 4 bytes"):
        check_args("k", params, [hb.int64(1)])
    with pytest.raises(hb.BenchError, match=r"argument 0 \(n\) of kernel 'k' is a device pointer \(8 B\), "
                                            r"but the parameter is 4 bytes"):
        check_args("k", params, [hb.Pointer(0x1000)])
    with pytest.raises(hb.BenchError, match=r"kernel 'k' takes 1 arguments \(n \(4 B\)\), got 0"):
        check_args("k", params, [])
    with pytest.raises(hb.BenchError, match=r"shared\(\) takes a device array or a tensor with __dlpack__ "
                                            r"\(torch, CuPy, JAX\), got list"):
        hb.shared([0.0, 1.0])


@pytest.mark.parametrize("make,value,message", [
    (hb.float32, 1e40, r"float32\(1e\+40\): out of range, the largest float32 is 3.4028234663852886e\+38"),
    (hb.float16, 70000.0, r"float16\(70000.0\): out of range"),
])
def test_floats_out_of_range(make, value, message):
    with pytest.raises(hb.BenchError, match=message):
        make(value)
    assert np.isinf(np.frombuffer(hb.float32(float("inf")).pack(), np.float32)[0])  # inf is a value


@pytest.mark.parametrize("address,why", [(-1, "out of range, "), (1 << 64, "out of range, "), ("0x10", ""),
                                         (1.5, ""), (True, "")])
def test_bad_pointers(address, why):
    with pytest.raises(hb.BenchError, match=rf"Pointer\(.*\): {why}expected an integer in \[0, 18446744073709551615\] "
                                            r"\(a device address\)"):
        hb.Pointer(address)


def test_freed_arrays_are_refused(device):
    array = device.empty(4, np.float32)
    array.free()
    with pytest.raises(hb.BenchError, match=r"argument 0 \(p\) of kernel 'k' is a freed device array"):
        check_args("k", (KernelParam("p", 0, 8),), [hb.shared(array)])
