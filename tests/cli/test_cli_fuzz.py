"""Fuzzing the CLI's text inputs: only the package's own errors (or argparse's) may escape, and the CLI
accepts and refuses exactly the values bench() does.

Generated strings go through the `--arg` language, the option converters of
`--size`, `--grid`/`--block`, `--target`, and `pyhipbench run`'s measurement
options. A converter either gives a value or raises
argparse.ArgumentTypeError saying what it expected; a value it gives is then
judged by the library alone: `pyhipbench run` refuses it with the message
bench() raises for the same value (naming the flag and the text typed where
bench() names its keyword and the value), or accepts it as bench() does. Never
ValueError, OverflowError, MemoryError or anything else. The example count is
bounded so CI stays fast.
"""
from __future__ import annotations

import argparse
import contextlib
import io
from importlib import resources

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pyhipbench as hb
from pyhipbench import cli
from pyhipbench._launch import arg_spec
from pyhipbench._launch.launch_config import dims
from pyhipbench._measure.options import OPTIONS
from pyhipbench._measure.rotation import plan_rotation
from pyhipbench.cli import compile as compile_command
from pyhipbench.cli import values
from pyhipbench.cli.command import FlagValue, in_flag_words, typed
from pyhipbench.cli.options import READERS

FUZZ = settings(max_examples=200, deadline=None, derandomize=True)
COPY_PTX = str(resources.files("pyhipbench") / "kernels" / "copy.ptx")

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


def _converted(convert, text):
    """What the converter makes of `text`, or None where it explains what it expected."""
    try:
        return convert(text)
    except argparse.ArgumentTypeError as e:
        assert "expected" in str(e)
        return None


def _refusal(call) -> str | None:
    """The message of the BenchError `call()` raises; None if it raises none."""
    try:
        call()
    except hb.BenchError as e:
        return str(e)
    return None


@FUZZ
@example("9" * 5000)
@example("8388608T")
@example("-1K")
@given(st.one_of(numbers, words, st.tuples(numbers, st.sampled_from(["", "K", "M", "G", "T", "KiB", "MB", "Q"]))
                 .map("".join)))
def test_size_option(text):
    size = _converted(values.size, text)
    if size is not None:  # plan_rotation (which `info` asks) accepts it or says why not
        assert type(size) is int
        _refusal(lambda: plan_rotation(size, 256 << 20, 100 << 30, 141 << 30))


@FUZZ
@example("9" * 5000)
@example("0")
@example("1,2,3,4")
@given(st.one_of(words, st.lists(numbers, min_size=0, max_size=5).map(",".join)))
def test_dims_option(text):
    """--grid: what the converter gives is judged by launch_config.dims, bench()'s one check of dimensions."""
    value = _converted(values.dims, text)
    verdict = _run_verdict(["--grid=" + text, "--block=1"])
    if value is None:
        assert verdict == "argparse"
        return
    refused = _refusal(lambda: dims("grid", value))  # `grid=...: why`, or `grid[1]=...: why`
    assert verdict == (None if refused is None else f"--grid {typed(text)}{refused[refused.index(': '):]}")


@FUZZ
@given(st.one_of(words, st.tuples(st.sampled_from(["gfx", "sm_", ""]), numbers, words).map("".join)))
def test_target_option(text):
    target = _converted(compile_command.target, text)
    assert target is None or target == text


# -- `pyhipbench run`'s measurement options against bench()'s ---------------------------------------------
MEASUREMENT_OPTIONS = [(o.flag, o.name, READERS[o.cli]) for o in OPTIONS if o.cli in READERS]  # flag, keyword, reader


class _DeviceReached(Exception):
    """`run` accepted its options and went on to open the device."""


def _run_verdict(flags: list[str]) -> str | None:
    """None when `pyhipbench run` accepts `flags` (it gets as far as opening the device);
    "argparse" when a converter refuses the text; else the one line it refuses the value with."""
    def reach(backend, index=0):
        raise _DeviceReached
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        patch.setattr(cli, "_open_device", reach)
        try:
            code = cli.main(["run", COPY_PTX, "--kernel", "copy", "--grid", "1", "--block", "1", *flags])
        except _DeviceReached:
            return None
        except SystemExit as exited:
            assert exited.code == 2 and err.getvalue().endswith(" (pyhipbench run -h for help)\n")
            assert err.getvalue().count("\n") == 1
            return "argparse"
    assert code == 2 and err.getvalue().count("\n") == 1
    return err.getvalue().removeprefix("pyhipbench run: ").removesuffix("\n")


def _bench_verdict(keywords: dict) -> str | None:
    """None when bench() accepts the options (it goes on to refuse the missing kernel), else its message."""
    message = _refusal(lambda: hb.bench(None, 1, 1, [], **keywords))
    assert message is not None
    return None if message.startswith("kernel=None: bench() times a Kernel") else message


@FUZZ
@example(MEASUREMENT_OPTIONS[0], "0")
@example(MEASUREMENT_OPTIONS[0], "100%")
@example(MEASUREMENT_OPTIONS[2], "9" * 5000)
@example(MEASUREMENT_OPTIONS[4], "auto")
@example(MEASUREMENT_OPTIONS[4], "0")
@example(MEASUREMENT_OPTIONS[5], "nan")
@given(st.sampled_from(MEASUREMENT_OPTIONS),
       st.one_of(numbers, words, st.just("auto"), numbers.map(lambda n: n + "%")))
def test_run_accepts_and_refuses_the_values_bench_does(option, text):
    flag, keyword, convert = option
    value = _converted(convert, text)
    verdict = _run_verdict([f"{flag}={text}"])  # with "=": a text starting with "-" is the flag's value
    if value is None:  # not a value of the flag's kind: there is nothing to hand bench()
        assert verdict == "argparse"
        return
    refused = _bench_verdict({keyword: value})
    # bench()'s message, naming the flag and the text typed
    assert verdict == (None if refused is None else in_flag_words(refused, {keyword: FlagValue(flag, False, value, text)}))
