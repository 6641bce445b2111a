"""Each measurement option declared once: the keywords, the API docs' table and the defaults derive from it."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import pyhipbench as hb
from pyhipbench import _core
from pyhipbench._measure.options import OPTIONS, markdown_table

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("fn, left_out", [(hb.bench, ()), (hb.bench_chain, ()), (hb.bench_callable, ("rotate",)),
                                          (hb.tune, ("slower_than_us",))])
def test_every_options_keyword_is_in_the_signature_with_its_declared_default(fn, left_out):
    params = inspect.signature(fn).parameters
    for o in OPTIONS:
        if o.name in left_out:
            assert o.name not in params
        else:
            assert params[o.name].default == o.default and params[o.name].kind is inspect.Parameter.KEYWORD_ONLY


def test_the_api_docs_table_is_the_one_made_from_the_declarations():
    assert markdown_table() in (DOCS / "api.md").read_text()
    assert all(f"`{o.name}`" in markdown_table() and f"`{o.flag}`" in markdown_table() for o in OPTIONS)


def test_the_stopping_defaults_are_the_cores():
    rule, options = _core.StopRule(), hb.BenchOptions()
    for name in ("precision", "max_time_s", "throttle_threshold", "hold_s"):
        assert getattr(options, name) == getattr(rule, name)


@pytest.mark.parametrize("call", [
    lambda: hb.bench(None, 1, 1, [], presision=0.1),
    lambda: hb.bench_chain([], presision=0.1),
    lambda: hb.bench_callable(print, presision=0.1),
])
def test_a_misspelt_option_is_refused_naming_it(call):
    with pytest.raises(hb.BenchError, match=r"option\(s\) 'presision' unknown; expected cache, energy"):
        call()


def test_a_callable_takes_no_rotate():
    with pytest.raises(hb.BenchError, match=r"^bench_callable option\(s\) 'rotate' unknown"):
        hb.bench_callable(print, rotate=2)


def test_every_option_has_its_flag_in_the_cli_help_and_docs(capsys):
    from pyhipbench import cli
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    cli_md = (DOCS / "cli.md").read_text()
    for o in OPTIONS:
        assert f"{o.flag} " in text and " ".join(o.doc.split()[:4]) in text, o.name
        assert f"`{o.flag}`" in cli_md, o.name


@pytest.mark.parametrize("fn", [hb.bench, hb.bench_chain, hb.bench_callable])
def test_the_api_docs_signature_is_the_functions(fn):
    """docs/api.md writes each measuring function's signature out: the same keywords, in order, with the same
    defaults as the function (whose option keywords come from the declarations)."""
    text = (DOCS / "api.md").read_text()
    start = text.index(f"```python\nhb.{fn.__name__}(") + len("```python\n")
    written = " ".join(text[start:text.index(") ->", start)].split())
    tree = ast.parse(f"def {written}): pass".replace(f"def hb.{fn.__name__}(", "def f("))
    arguments = tree.body[0].args
    documented = {a.arg: inspect.Parameter.empty for a in arguments.args}
    documented.update({a.arg: ast.literal_eval(d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults)})
    actual = {name: p.default for name, p in inspect.signature(fn).parameters.items()}
    assert list(documented) == list(actual) and documented == actual
