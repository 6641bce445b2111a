"""Fuzzing the CLI's text inputs: only the package's own errors (or argparse's) may escape.

Generated strings go through the `--arg` language and the option types of
`--size`, `--grid`/`--block`, `--rotate`, `--iterations`, `--target`. Each
either gives a value that holds the documented invariants or raises
BenchError (the library) / argparse.ArgumentTypeError (the options): never
ValueError, OverflowError, MemoryError or anything else. The example count
is bounded so CI stays fast.
"""
from __future__ import annotations

import argparse

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, settings, strategies as st  # noqa: E402

import pyhipbench as hb  # noqa: E402
from pyhipbench import cli
from pyhipbench._launch import arg_spec  # noqa: E402

FUZZ = settings(max_examples=200, deadline=None, derandomize=True)

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=0, max_value=2**70).map(hex),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "-", "0", "1e400", "-1e400", "inf", "nan", "0x", "1_000", "9" * 5000, "1.5", " 7 ",
                     "٣", "１２", "+4"]),
)
words = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
field = st.one_of(numbers, words, st.sampled_from(arg_spec.DTYPES + arg_spec.FILLS + ("array", "shared")))
arg_texts = st.one_of(
    words,
    st.lists(field, min_size=1, max_size=5).map(":".join),
    st.tuples(st.sampled_from(arg_spec.DTYPES), numbers).map(":".join),
    st.tuples(st.sampled_from(["array", "shared"]), st.sampled_from(arg_spec.DTYPES), numbers,
              st.sampled_from(arg_spec.FILLS + ("noise",))).map(":".join),
)


@FUZZ
@given(arg_texts)
@example("array:float32:" + "9" * 5000)  # beyond int()'s digit limit
@example("int64:" + "9" * 5000)
@example("float16:1e400")
@example("shared:float64:2305843009213693952")  # 2**64 bytes
def test_arg_language_raises_only_bench_error(text):
    try:
        spec = arg_spec.parse_arg(text)
    except hb.BenchError as e:
        assert type(e) is hb.BenchError and str(e).startswith("--arg ")
        return
    assert spec.dtype in arg_spec.DTYPES
    if isinstance(spec, arg_spec.ArraySpec):
        assert spec.count >= 1 and spec.nbytes <= arg_spec.MAX_ARRAY_BYTES and spec.fill in arg_spec.FILLS
    else:
        assert getattr(hb, spec.dtype)(spec.value).pack()  # in range: packs to its dtype


def _option_types_accept_or_explain(parse, text):
    try:
        return parse(text)
    except argparse.ArgumentTypeError as e:
        assert "expected" in str(e)
        return None


@FUZZ
@example("9" * 5000)
@example("8388608T")
@given(st.one_of(numbers, words, st.tuples(numbers, st.sampled_from(["", "K", "M", "G", "T", "KiB", "MB", "Q"]))
                 .map("".join)))
def test_size_option(text):
    size = _option_types_accept_or_explain(cli._size, text)
    assert size is None or 1 <= size <= cli.MAX_SIZE


@FUZZ
@example("9" * 5000)
@given(st.one_of(words, st.lists(numbers, min_size=0, max_size=5).map(",".join)))
def test_dims_option(text):
    dims = _option_types_accept_or_explain(cli._dims, text)
    assert dims is None or (1 <= len(dims) <= 3 and all(1 <= d <= cli.MAX_DIM for d in dims))


@FUZZ
@given(st.one_of(numbers, words, st.just("auto")))
def test_count_options(text):
    rotate = _option_types_accept_or_explain(cli._rotate, text)
    assert rotate is None or rotate == "auto" or 1 <= rotate <= cli.MAX_ITERATIONS
    iterations = _option_types_accept_or_explain(cli._iterations, text)
    assert iterations is None or 1 <= iterations <= cli.MAX_ITERATIONS
    warmup = _option_types_accept_or_explain(cli._warmup, text)
    assert warmup is None or 0 <= warmup <= cli.MAX_ITERATIONS


@FUZZ
@given(st.one_of(words, st.tuples(st.sampled_from(["gfx", "sm_", ""]), numbers, words).map("".join)))
def test_target_option(text):
    target = _option_types_accept_or_explain(cli._target, text)
    assert target is None or target == text
