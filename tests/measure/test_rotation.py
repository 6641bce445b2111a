"""The rotation policy: R from the last-level cache and free memory."""
from __future__ import annotations

import warnings

import pytest

from pyhipbench import BenchError, BenchOptions, RotationCapped, plan_rotation
from pyhipbench._measure.rotation import MIN_HEADROOM_BYTES

MiB, GiB = 1 << 20, 1 << 30
ROOMY = dict(free_bytes=100 * GiB, total_bytes=140 * GiB)


@pytest.mark.parametrize("set_bytes,llc,sets", [
    (60 * MiB, 60 * MiB, 2),        # equal to the LLC: 2
    (1 * GiB, 60 * MiB, 2),         # larger: 2
    (16 * MiB, 60 * MiB, 8),        # 2 x ceil(60 / 16) = 8
    (15 * MiB, 60 * MiB, 8),        # 2 x 4 exactly
    (1 * MiB, 256 * MiB, 512),      # MI300X Infinity Cache
    (3, 10, 8),                     # tiny sets: 2 x ceil(10 / 3)
])
def test_rotation_from_llc(set_bytes, llc, sets):
    rotation = plan_rotation(set_bytes, llc, **ROOMY)
    assert rotation.sets == rotation.wanted == sets
    assert rotation.extra_bytes == (sets - 1) * set_bytes


def test_nothing_to_rotate_is_warm():
    rotation = plan_rotation(0, 60 * MiB, **ROOMY)
    assert rotation.sets == 1 and "nothing to rotate" in rotation.reason


def test_user_override_and_warm():
    assert plan_rotation(4 * MiB, 60 * MiB, rotate=3, **ROOMY).sets == 3
    warm = plan_rotation(4 * MiB, 60 * MiB, rotate=1, **ROOMY)
    assert warm.sets == 1 and "caller" in warm.reason


@pytest.mark.parametrize("rotate", [0, -2, 2.5, "many", True])
def test_bad_override_is_refused_as_bench_options_refuse_it(rotate):
    with pytest.raises(BenchError) as refused:
        plan_rotation(4 * MiB, 60 * MiB, rotate=rotate, **ROOMY)
    with pytest.raises(BenchError) as by_options:
        BenchOptions(rotate=rotate)
    assert str(refused.value).startswith(f"rotate={rotate!r}: ") and "expected" in str(refused.value)
    assert str(refused.value) == str(by_options.value)


def test_override_with_nothing_to_rotate():
    with pytest.raises(BenchError, match="nothing to rotate"):
        plan_rotation(0, 60 * MiB, rotate=4, **ROOMY)


def test_capped_by_free_memory_warns_by_how_much():
    free = MIN_HEADROOM_BYTES + 10 * MiB          # room for 10 extra 1 MiB sets
    with pytest.warns(RotationCapped, match="capped from 120 to 11 sets") as caught:
        rotation = plan_rotation(1 * MiB, 60 * MiB, free, 4 * GiB)
    assert rotation.sets == 11 and rotation.wanted == 120
    assert "109 sets short" in rotation.reason and "109 sets short" in str(caught[0].message)


def test_headroom_scales_with_total_memory():
    # 5% of 140 GiB = 7 GiB headroom: 7.5 GiB free leaves 0.5 GiB for copies.
    with pytest.warns(RotationCapped):
        rotation = plan_rotation(100 * MiB, 60 * GiB, int(7.5 * GiB), 140 * GiB)
    assert rotation.sets == 1 + (int(7.5 * GiB) - int(140 * GiB * 0.05)) // (100 * MiB)


def test_no_room_for_a_second_set_is_an_error():
    with pytest.raises(BenchError, match="rotated sets cannot fit in device memory"):
        plan_rotation(1 * GiB, 60 * MiB, MIN_HEADROOM_BYTES + 512 * MiB, 4 * GiB)
    with pytest.raises(BenchError, match="rotate=3 sets of 1073741824 bytes cannot fit"):
        plan_rotation(1 * GiB, 60 * MiB, MIN_HEADROOM_BYTES + GiB, 4 * GiB, rotate=3)


def test_uncapped_rotation_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan_rotation(4 * MiB, 60 * MiB, **ROOMY)


def test_auto_makes_no_more_sets_than_the_run_launches():
    rotation = plan_rotation(4096, 256 * MiB, rotate="auto", launches=110, **ROOMY)
    assert rotation.sets == rotation.wanted == 110 and "capped to 110: the run makes no more launches" in rotation.reason
    assert plan_rotation(4096, 256 * MiB, rotate=500, launches=110, **ROOMY).sets == 500  # the caller's R stands
