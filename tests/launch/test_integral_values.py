"""Every integral type is an integer (numpy's included);
bools, floats and strings are refused with the parameter and the value named."""
from __future__ import annotations

import struct
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._values import integer

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
INTEGRAL = [7, np.int8(7), np.int16(7), np.int32(7), np.int64(7), np.uint8(7), np.uint16(7), np.uint32(7),
            np.uint64(7), np.array(7)]


@pytest.mark.parametrize("value", INTEGRAL, ids=lambda v: type(v).__name__)
def test_every_integral_type_is_an_int(value):
    number = integer("n", value, 0, 10)
    assert number == 7 and type(number) is int


@pytest.mark.parametrize("value,message", [
    (True, r"n=True: expected an integer in \[0, 10\], got a bool"),
    (np.True_, r"n=np.True_: expected an integer in \[0, 10\], got a bool"),
    (4.0, r"n=4.0: expected an integer in \[0, 10\], got float"),
    (np.float64(4.0), r"n=np.float64\(4.0\): expected an integer in \[0, 10\], got float64"),
    (np.float32(4.0), r"n=np.float32\(4.0\): expected an integer in \[0, 10\], got float32"),
    ("4", r"n='4': expected an integer in \[0, 10\], got str"),
    (None, r"n=None: expected an integer in \[0, 10\], got NoneType"),
    (np.array([4]), r"n=array\(\[4\]\): expected an integer in \[0, 10\], got ndarray"),
    (np.int64(11), r"n=np.int64\(11\): out of range, expected an integer in \[0, 10\]"),
    (10**400, r"n=1000.*000: out of range, expected an integer in \[0, 10\]"),
])
def test_non_integers_are_named(value, message):
    with pytest.raises(hb.BenchError, match=message):
        integer("n", value, 0, 10)


@pytest.fixture
def copy(device):
    return device.load_module(COPY_PTX).kernel("copy")


def test_bench_takes_numpy_integers_everywhere(device, copy, fake_driver, backend_name):
    fake_driver.read_args(3)
    n = np.int64(1024)
    src = device.array(np.arange(n, dtype=np.float32))
    dst = device.empty(n, np.float32)
    res = hb.bench(copy, np.int64(4), np.int32(256), [src, dst, hb.int64(n)], iterations=np.int64(6),
                   warmup=np.uint8(3), rotate=np.int64(3), shared_bytes=np.int64(0))
    assert res.samples == 6 and res.warmup == 3 and res.rotation.sets == 3
    assert res.config.grid == (4, 1, 1) and res.config.block == (256, 1, 1)
    assert all(type(v) is int for v in res.config.grid + res.config.block + (res.config.shared_bytes,))
    launches = fake_driver.records(LAUNCH[backend_name])
    assert len(launches) == 9 and {r.arg_values[2] for r in launches} == {1024}


def test_grid_and_block_as_numpy_tuples_and_arrays(device, copy):
    src, dst = device.empty(64, np.float32), device.empty(64, np.float32)
    res = hb.bench(copy, (np.int64(2), np.uint16(3)), np.array([16, 2]), [src, dst, hb.int64(64)],
                   iterations=2, warmup=0, rotate=1)
    assert res.config.grid == (2, 3, 1) and res.config.block == (16, 2, 1)


BAD_BENCH = [
    (dict(grid=4.0), r"grid=4.0: expected an integer in \[1, 4294967295\], got float"),
    (dict(grid=(4, np.float64(2.0))), r"grid\[1\]=np.float64\(2.0\): expected an integer in \[1, 4294967295\], got float64"),
    (dict(block=True), r"block=True: expected an integer in \[1, 4294967295\], got a bool"),
    (dict(block="256"), r"block='256': expected an integer in \[1, 4294967295\], got str"),
    (dict(grid=(2, 0)), r"grid\[1\]=0: out of range, expected an integer in \[1, 4294967295\]"),
    (dict(grid=()), r"grid=\(\): expected 1 to 3 integers, got 0"),
    (dict(iterations=np.float64(100)), r"iterations=np.float64\(100.0\): expected an integer in \[1, 1000000\], got float64"),
    (dict(iterations=10**7), r"iterations=10000000: out of range, expected an integer in \[1, 1000000\]"),
    (dict(warmup=True), r"warmup=True: expected an integer in \[0, 1000000\], got a bool"),
    (dict(shared_bytes=0.0), r"shared_bytes=0.0: expected an integer in \[0, 232448\] \(bytes; the device's opt-in "
     r"maximum per block\), got float"),
    (dict(rotate=2.0), r"rotate=2.0: expected an integer >= 1 \(argument sets, or 'auto'\), got float"),
    (dict(rotate="fast"), r"rotate='fast': expected 'auto' or a set count >= 1"),
    (dict(stream=5), r"stream=5: expected a Device.stream\(\) or None"),
    (dict(args="src"), r"args='src': expected a list of kernel arguments"),
]


@pytest.mark.parametrize("change,message", BAD_BENCH)
def test_bench_refuses_non_integers_before_launching(device, copy, fake_driver, change, message):
    src, dst = device.empty(64, np.float32), device.empty(64, np.float32)
    call = dict(grid=1, block=64, args=[src, dst, hb.int64(64)], iterations=4, warmup=0) | change
    with pytest.raises(hb.BenchError, match=message):
        hb.bench(copy, call.pop("grid"), call.pop("block"), call.pop("args"), **call)
    assert fake_driver.records() == []


def test_bench_refuses_what_is_not_a_kernel_naming_the_launch_and_value(device):
    with pytest.raises(hb.BenchError, match=r"^kernel='copy': bench\(\) times a Kernel .*, got str"):
        hb.bench("copy", 1, 1, [])
    src = device.array(np.zeros(64, np.float32))
    copy = hb.Launch(device.load_module(COPY_PTX).kernel("copy"), 1, 64, [src, device.empty_like(src), hb.int64(64)])
    with pytest.raises(hb.BenchError, match=r"^launches\[1\].kernel='copy': bench\(\) times a Kernel"):
        hb.bench_chain([copy, hb.Launch("copy", 1, 1, [])])


def test_a_closed_stream_is_refused(device, copy, fake_driver):
    stream = device.stream()
    stream.close()
    with pytest.raises(hb.BenchError, match="stream: this stream has been closed"):
        hb.bench(copy, 1, 1, [hb.Pointer(0), hb.Pointer(0), hb.int64(0)], stream=stream)
    assert fake_driver.records() == []


@pytest.mark.parametrize("make", [hb.int8, hb.int16, hb.int32, hb.int64, hb.uint8, hb.uint16, hb.uint32, hb.uint64])
@pytest.mark.parametrize("value", [5, np.int32(5), np.uint8(5), np.int64(5), np.uint64(5)], ids=repr)
def test_int_scalars_take_numpy_integers(make, value):
    scalar = make(value)
    assert scalar.value == 5 and type(scalar.value) is int
    assert scalar.pack() == (5).to_bytes(scalar.nbytes, "little")


def test_float_scalars_take_numpy_numbers_and_ints():
    assert hb.float32(np.float64(0.5)).pack() == struct.pack("<f", 0.5)
    assert hb.float64(np.int64(3)).pack() == struct.pack("<d", 3.0)
    assert hb.float16(np.float16(2.0)).pack() == np.float16(2.0).tobytes()


def test_pointer_takes_numpy_uint64_and_packs_it(device, copy, fake_driver, backend_name):
    fake_driver.read_args(3)
    src, dst = device.empty(64, np.float32), device.empty(64, np.float32)
    pointer = hb.Pointer(np.uint64(dst.address))
    assert pointer.address == dst.address and type(pointer.address) is int
    hb.bench(copy, 1, 64, [hb.shared(src), pointer, hb.int64(np.int32(64))], cache="warm", iterations=2, warmup=0)
    assert {r.arg_values[1] for r in fake_driver.records(LAUNCH[backend_name]) if r.function == copy.handle} \
        == {dst.address}
    assert hb.Pointer(np.uint64(2**64 - 1)).pack() == b"\xff" * 8


def test_device_arrays_take_numpy_shapes(device):
    assert device.empty(np.int64(10), np.float32).shape == (10,)
    array = device.empty((np.int32(3), np.uint64(4)), "int16")
    assert array.shape == (3, 4) and array.nbytes == 24 and all(type(n) is int for n in array.shape)
    assert device.empty(np.array([2, 5]), np.uint8).nbytes == 10


@pytest.mark.parametrize("shape,message", [
    (10.0, r"shape=10.0: expected an integer >= 0, got float"),
    ((2, np.float32(2)), r"shape\[1\]=np.float32\(2.0\): expected an integer >= 0, got float32"),
    ((True,), r"shape\[0\]=True: expected an integer >= 0, got a bool"),
    ("10", r"shape='10': expected an integer >= 0, got str"),
])
def test_device_arrays_refuse_non_integer_shapes(device, shape, message):
    before = dict(device.backend.live)
    with pytest.raises(hb.BenchError, match=message):
        device.empty(shape, np.float32)
    assert device.backend.live == before


def test_device_index_and_backend_are_checked():
    with pytest.raises(hb.BenchError, match=r"index=1.5: expected an integer >= 0, got float"):
        hb.Device("cuda", 1.5)
    with pytest.raises(hb.BenchError, match=r"backend='rocm': expected one of hip, cuda, or None"):
        hb.Device("rocm")


def test_kernel_names_are_strings(device):
    with pytest.raises(hb.BenchError, match=r"kernel name b'copy': expected a string, got bytes"):
        device.load_module(COPY_PTX).kernel(b"copy")
