"""bench(expect=...): one launch on every argument set, its outputs checked, before timing.

The fake driver plays the kernel (fake_driver.run_kernel): host memory stands
for device memory, so a Python body does what copy.ptx would, or gets it wrong.
"""
from __future__ import annotations

import ctypes
from importlib import resources

import numpy as np
import pytest

import pyhipbench as hb
from pyhipbench._device import dlpack

from fakes.tensors import FakeTensor

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
N = 1 << 18  # 1 MiB of float32: a 2 MiB set against the fake's 4 MiB last-level cache, 4 sets


def _pointer(params, i: int) -> int:
    return ctypes.cast(params[i], ctypes.POINTER(ctypes.c_uint64)).contents.value


def _floats(address: int, n: int) -> np.ndarray:
    return np.frombuffer((ctypes.c_float * n).from_address(address), np.float32)


@pytest.fixture
def copy(device, fake_driver):
    kernel = device.load_module(COPY_PTX).kernel("copy")
    yield kernel
    fake_driver.lib.fake_set_kernel_body(None)  # the body dies with this test


def plays(fake_driver, kernel, wrong_on_launch: int | None = None):
    """The fake runs `kernel` as copy.ptx does (dst[i] = src[i]); launch `wrong_on_launch` (0-based) writes
    dst[5] = -1 instead of src[5]. Returns the list of sources, one per launch."""
    sources = []

    def body(params):
        n = ctypes.cast(params[2], ctypes.POINTER(ctypes.c_int64)).contents.value
        sources.append(_pointer(params, 0))
        _floats(_pointer(params, 1), n)[:] = _floats(_pointer(params, 0), n)
        if len(sources) - 1 == wrong_on_launch:
            _floats(_pointer(params, 1), n)[5] = -1.0
    fake_driver.run_kernel(body, kernel.handle)
    return sources


def copy_args(device, n=N):
    src = device.array(np.arange(n, dtype=np.float32))
    return src, device.array(np.zeros(n, np.float32)), hb.int64(n)


def test_every_set_is_launched_once_and_checked_before_timing(device, copy, fake_driver, backend_name):
    sources = plays(fake_driver, copy)
    src, dst, n = copy_args(device)
    res = hb.bench(copy, 4, 256, [src, dst, n], iterations=4, warmup=0, cache="dirty-cold", timer="events",
                   expect=[None, src.to_numpy(), None])
    assert res.rotation.sets == 4 and res.verified and res.to_dict()["verified"] is True
    assert res.summary().endswith("; outputs verified")
    assert len(sources) == 4 + 4 and sources[0] == src.address and len(set(sources[:4])) == 4  # sets 0..3, then timed
    res = hb.bench(copy, 4, 256, [src, dst, n], iterations=2, warmup=0, rotate=1, timer="events")
    assert not res.verified and res.to_dict()["verified"] is False


def test_a_wrong_output_names_argument_set_index_and_values(device, copy, fake_driver):
    plays(fake_driver, copy, wrong_on_launch=2)
    src, dst, n = copy_args(device)
    with pytest.raises(hb.OutputMismatch, match=r"kernel 'copy', argument 1, set 2: element \[5\] is -1.0, expected "
                                                r"5.0 \(rtol=1e-05, atol=1e-08\); 1 of 262144 elements differ") as caught:
        hb.bench(copy, 4, 256, [src, dst, n], iterations=3, warmup=0, cache="dirty-cold", timer="events",
                 expect={1: src.to_numpy()})
    e = caught.value
    assert (e.argument, e.set_index, e.index, e.got, e.expected) == (1, 2, (5,), -1.0, 5.0)
    assert len(device.backend.live) == 2  # the copies are freed on the way out


def test_tolerances_decide(device, copy, fake_driver):
    plays(fake_driver, copy)
    src, dst, n = copy_args(device, 64)
    near = src.to_numpy() + np.float32(0.01)
    with pytest.raises(hb.OutputMismatch, match=r"element \[0\] is 0.0, expected 0.009999999776482582"):
        hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect={1: near})
    res = hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect={1: near}, atol=0.02)
    assert res.verified


def test_an_in_place_output_is_checked_after_one_launch_from_its_own_start(device, copy, fake_driver):
    # copy with src == dst plus one: x += 1 in place. Each set starts as the original, so each reads 1 more after
    # its one launch, however many launches the warm-up and timing make afterwards.
    def body(params):
        x = _floats(_pointer(params, 0), 16)
        x += 1
    fake_driver.run_kernel(body, copy.handle)
    x = device.array(np.zeros(16, np.float32))
    res = hb.bench(copy, 1, 64, [x, x, hb.int64(16)], iterations=5, warmup=0, rotate=3, timer="events",
                   expect={0: np.ones(16, np.float32)})
    assert res.verified and res.rotation.sets == 3


def test_an_in_place_shared_output_is_checked_after_one_launch_in_every_set(device, copy, fake_driver):
    # dst += 1 in place, dst shared (one buffer in every set) while src rotates: each set's launch must
    # start from dst's initial zeros, or set 1 would read 2 and a right kernel fail its check.
    def body(params):
        _floats(_pointer(params, 1), 16)[:] += 1
    fake_driver.run_kernel(body, copy.handle)
    src, x = device.array(np.zeros(16, np.float32)), device.array(np.zeros(16, np.float32))
    res = hb.bench(copy, 1, 64, [src, hb.shared(x), hb.int64(16)], iterations=5, warmup=0, rotate=3,
                   timer="events", expect={1: np.ones(16, np.float32)})
    assert res.verified and res.rotation.sets == 3


def test_integers_compare_exactly(device, copy, fake_driver):
    def body(params):
        ctypes.cast(_pointer(params, 1), ctypes.POINTER(ctypes.c_int64))[0] = 2**53 + 1
    fake_driver.run_kernel(body, copy.handle)
    out = device.array(np.zeros(1, np.int64))
    with pytest.raises(hb.OutputMismatch, match=r"element \[0\] is 9007199254740993, expected 9007199254740992"):
        hb.bench(copy, 1, 64, [out, out, hb.int64(1)], iterations=1, warmup=0, rotate=1, atol=1.0,
                 expect={1: np.array([2**53], np.int64)})


def test_a_check_callable_sees_each_sets_outputs(device, copy, fake_driver):
    plays(fake_driver, copy, wrong_on_launch=1)
    src, dst, n = copy_args(device)
    seen = []

    def check(outputs):
        seen.append(outputs)
        return bool(np.array_equal(outputs[1], outputs[0]))
    with pytest.raises(hb.OutputMismatch, match=r"kernel 'copy', set 1: the expect check returned False") as caught:
        hb.bench(copy, 4, 256, [src, dst, n], iterations=1, warmup=0, cache="dirty-cold", expect=check)
    assert caught.value.set_index == 1 and caught.value.argument is None
    assert len(seen) == 2 and seen[0][2] is None and seen[0][0].shape == (N,) and seen[0][1].dtype == np.float32


def test_a_check_callables_assertion_is_a_mismatch(device, copy, fake_driver):
    plays(fake_driver, copy)
    src, dst, n = copy_args(device, 64)

    def check(outputs):
        assert outputs[1][0] == 7, f"dst[0] is {outputs[1][0]}"
        return True
    with pytest.raises(hb.OutputMismatch, match=r"set 0: the expect check failed: dst\[0\] is 0.0"):
        hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect=check)
    with pytest.raises(hb.BenchError, match=r"the expect check returned None for set 0; expected True"):
        hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect=lambda outputs: None)


def test_a_tensor_output_is_checked_in_every_set(device, copy, fake_driver, backend_name):
    plays(fake_driver, copy)
    own = {"cuda": (dlpack.CUDA, 0), "hip": (dlpack.ROCM, 0)}[backend_name]
    src = FakeTensor(np.arange(N, dtype=np.float32), own, memory=device.backend)
    dst = FakeTensor(np.zeros(N, np.float32), own, memory=device.backend)
    res = hb.bench(copy, 4, 256, [src, dst, hb.int64(N)], iterations=4, warmup=0, cache="dirty-cold",
                   expect={1: src.host})
    assert res.verified and res.rotation.sets == 4
    assert np.array_equal(dst.host, src.host)  # set 0 is the tensor itself


@pytest.mark.parametrize("expect,extra,message", [
    ([None, None], {}, r"expect has 2 entries for 3 arguments; expected one per argument"),
    ([None, None, None], {}, r"expect names no reference array \(every entry is None\)"),
    ({3: np.zeros(4)}, {}, r"expect key=3: out of range, expected an integer in \[0, 2\] \(an argument's position\)"),
    ({"dst": np.zeros(4)}, {}, r"expect key='dst': expected an integer in \[0, 2\] \(an argument's position\), got str"),
    ({2: np.zeros(4)}, {}, r"expect\[2\]: argument 2 is Scalar, which has no shape or dtype to check"),
    ({1: np.zeros(5, np.float32)}, {}, r"expect\[1\]: a reference of shape \(5,\) for argument 1 of shape \(4,\); "
                                       r"expected the same shape"),
    ({1: np.array(["a"] * 4)}, {}, r"expect\[1\]: a reference of dtype <U1; expected numbers"),
    (5, {}, r"expect=5: expected a list of reference arrays aligned with the arguments"),
    ({1: np.zeros(4)}, {"atol": -1}, r"atol=-1: out of range, expected a finite number >= 0"),
    ({1: np.zeros(4)}, {"rtol": float("nan")}, r"rtol=nan: out of range"),
    (None, {"atol": 0.1}, r"atol=0.1, rtol=None without expect: the tolerances apply to expect's reference arrays"),
])
def test_bad_expectations_are_refused_before_anything_runs(device, copy, fake_driver, expect, extra, message):
    src, dst, n = copy_args(device, 4)
    with pytest.raises(hb.BenchError, match=message):
        hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect=expect, **extra)
    assert fake_driver.records(LAUNCH[device.backend.name]) == []


def test_a_device_reference_is_refused(device, copy, fake_driver):
    src, dst, n = copy_args(device, 4)
    with pytest.raises(hb.BenchError, match=r"expect\[1\]: a DeviceArray reference; expected a host array "
                                            r"\(array.to_numpy\(\)\)"):
        hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect={1: src})

    class GpuTensor:  # as torch's CUDA tensors refuse numpy
        def __array__(self, *args, **kwargs):
            raise TypeError("can't convert cuda:0 device type tensor to numpy")
    with pytest.raises(hb.BenchError, match=r"expect\[1\]: a GpuTensor is not a host array \(can't convert cuda:0 "
                                            r"device type tensor to numpy\); expected one \(numpy; torch: "
                                            r"tensor.cpu\(\).numpy\(\)\)"):
        hb.bench(copy, 1, 64, [src, dst, n], iterations=1, warmup=0, rotate=1, expect={1: GpuTensor()})


def test_a_shared_output_is_read_from_its_one_buffer_after_each_sets_launch(device, copy, fake_driver):
    sources = plays(fake_driver, copy)
    src, dst, n = copy_args(device)
    seen = []

    def check(outputs):
        seen.append(outputs[1][:2].tolist())
        return bool(np.array_equal(outputs[1], outputs[0]))
    res = hb.bench(copy, 4, 256, [src, hb.shared(dst), n], iterations=4, warmup=0, rotate=3, timer="events",
                   expect=check)
    assert res.verified and len(set(sources[:3])) == 3  # three sets of sources, one destination
    assert seen == [[0.0, 1.0]] * 3
