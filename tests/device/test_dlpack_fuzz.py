"""Fuzzing what a DLPack producer's `__dlpack_device__` returns (or raises): only the package's errors escape.

Any value at all (tuples of any length and content, strings, numbers, None,
numpy scalars, huge or negative integers) and any exception the producer
raises goes through `DeviceArray.from_dlpack`, as `bench()` takes a tensor
argument. A (device_type, device_id) pair of integers naming the backend's own
device is taken (the tensor's memory is the host backend's device memory);
anything else is one BenchError naming the argument. Never TypeError,
ValueError, OverflowError or anything else; KeyboardInterrupt and SystemExit
pass through unwrapped. The example count is bounded so CI stays fast.
"""
from __future__ import annotations

import operator

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pyhipbench as hb
from pyhipbench._device import dlpack
from pyhipbench._device.memory import DeviceArray

from fakes.host_backend import HostBackend
from fakes.tensors import FakeTensor

FUZZ = settings(max_examples=300, deadline=None, derandomize=True)
BACKENDS = {name: HostBackend(backend=name, **({"arch": "gfx942"} if name == "hip" else {})) for name in ("cuda", "hip")}
OWN = {"cuda": dlpack.CUDA, "hip": dlpack.ROCM}  # the device type of each backend's own memory


class Producer:
    """A tensor in the backend's device memory (its capsule says so) whose `__dlpack_device__` returns
    `returned`, or raises it when it is an exception."""

    def __init__(self, backend: HostBackend, returned: object) -> None:
        self.tensor = FakeTensor(np.zeros(4, np.float32), (OWN[backend.name], 0), memory=backend)
        self.returned = returned

    def __dlpack_device__(self):
        if isinstance(self.returned, BaseException):
            raise self.returned
        return self.returned

    def __dlpack__(self, **keywords):
        return self.tensor.__dlpack__(**keywords)


integers = st.one_of(st.integers(min_value=-3, max_value=20), st.integers(min_value=-(2**80), max_value=2**80),
                     st.sampled_from([2**31 - 1, 2**31, -(2**31), 2**63, 2**64]),
                     st.integers(min_value=0, max_value=12).map(np.int64),
                     st.integers(min_value=0, max_value=12).map(np.uint8))
scalars = st.one_of(integers, st.booleans(), st.none(), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=8), st.binary(max_size=4), st.just(np.bool_(True)), st.just(np.float32(2.0)),
                    st.complex_numbers(max_magnitude=10), st.just(object()), st.just(Ellipsis))
values = st.recursive(scalars, lambda inner: st.one_of(st.tuples(inner, inner), st.lists(inner, max_size=3),
                                                      st.lists(inner, max_size=4).map(tuple),
                                                      st.dictionaries(st.text(max_size=3), inner, max_size=2)),
                      max_leaves=6)
exceptions = st.sampled_from([RuntimeError("broke"), TypeError("no"), ValueError("bad"), AttributeError("gone"),
                              OverflowError("big"), ZeroDivisionError("zero"), MemoryError(), BufferError("no"),
                              hb.BenchError("own"), StopIteration()])


def own_pair(backend_name: str, value: object) -> bool:
    """Whether `value` names the backend's own device 0, as its capsule does, in ints (bools are not ints here)."""
    if not isinstance(value, tuple) or len(value) != 2:
        return False
    if any(isinstance(v, (bool, np.bool_)) for v in value):
        return False
    try:
        kind, index = operator.index(value[0]), operator.index(value[1])
    except TypeError:
        return False
    return kind == OWN[backend_name] and index == 0


@FUZZ
@given(st.sampled_from(sorted(BACKENDS)), st.one_of(values, st.tuples(integers, integers), exceptions))
@example("cuda", "rocm:0")
@example("cuda", (2, 0, 0))
@example("cuda", (None, 0))
@example("cuda", (2.5, 0))
@example("cuda", (2, 2**70))
@example("cuda", (2, -1))
@example("hip", (10, np.int64(0)))
@example("cuda", (np.int64(2), np.uint8(0)))
@example("cuda", [2, 0])
def test_only_package_errors_escape_from_a_producers_device(backend_name, returned):
    backend = BACKENDS[backend_name]
    try:
        array = DeviceArray.from_dlpack(backend, Producer(backend, returned), "argument 0")
    except hb.BenchError as e:
        assert str(e).startswith("argument 0: a test_dlpack_fuzz.Producer")
        assert not own_pair(backend_name, returned), f"refused {returned!r}: {e}"
        assert "\n" not in str(e)
        if isinstance(returned, BaseException):
            assert e.__cause__ is returned
    else:
        assert own_pair(backend_name, returned), f"took {returned!r}"
        assert array.shape == (4,)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(3), GeneratorExit()])
def test_interrupts_from_a_producers_device_pass_through(interrupt):
    with pytest.raises(type(interrupt)):
        DeviceArray.from_dlpack(BACKENDS["cuda"], Producer(BACKENDS["cuda"], interrupt), "argument 0")
