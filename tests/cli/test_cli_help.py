"""The CLI explains itself: descriptions, examples, every option's help and default, --device, --out -, -v/-q."""
from __future__ import annotations

import argparse
import json
from importlib import resources

import pytest

from pyhipbench import cli
from pyhipbench._measure.timers import TIMERS
from pyhipbench.errors import NoDeviceError

COPY_PTX = (resources.files("pyhipbench") / "kernels" / "copy.ptx").read_bytes()
RUN = ["--kernel", "copy", "--grid", "4", "--block", "256", "--arg", "array:float32:256", "--arg",
       "array:float32:256", "--arg", "int64:256", "--timer", "events", "--iterations", "3"]


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_command_has_a_description_examples_and_help_for_every_option(name):
    parser = commands()[name]
    assert parser.description and len(parser.description) > 40
    text = parser.format_help()
    assert "\nexamples:\n  pyhipbench " + name in text
    for action in parser._actions:
        assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_the_top_level_help_describes_rather_than_lists_and_gives_examples():
    text = cli.build_parser().format_help()
    assert "Time GPU kernels as autotuners need them timed" in text
    assert "examples:\n  pyhipbench demo" in text and "pyhipbench COMMAND --help" in text


def test_defaults_are_shown_and_choices_come_in_order():
    text = commands()["run"].format_help()
    assert "{auto," + ",".join(TIMERS) + "}" in text  # auto first, then the timers in their declared order
    assert "{auto,warm,dirty-cold,clean-cold}" in " ".join(text.split())
    flat = " ".join(text.split())
    for default in ("--device N the GPU's index within its backend (default: 0)",
                    "warm-up included, s (default: 1.0)", "the format of --out - (default json;"):
        assert default in flat, default
    assert "(default: None)" not in flat and "(default: False)" not in flat and "(default: [])" not in flat


@pytest.mark.parametrize("argv", [["info", "--device", "1"], ["demo", "--device", "1"],
                                  ["run", "k.ptx", *RUN, "--device", "1"]])
def test_device_n_opens_that_device(argv, monkeypatch, tmp_path, capsys):
    opened = []

    def open_device(backend, index=0):
        opened.append((backend, index))
        raise NoDeviceError("no GPU here (test)")
    monkeypatch.setattr(cli, "_open_device", open_device)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.ptx").write_bytes(COPY_PTX)
    cli.main(argv)
    assert opened == [(None, 1)]


def test_a_bad_device_index_is_refused_in_one_line(capsys):
    assert cli.main(["info", "--device", "-1"]) == 2
    assert capsys.readouterr().err == "pyhipbench info: --device -1: out of range, expected an integer >= 0\n"
    with pytest.raises(SystemExit) as exited:
        cli.main(["info", "--device", "one"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("pyhipbench info: --device one: expected a whole number such as 100 "
                                       "(pyhipbench info -h for help)\n")


@pytest.mark.parametrize("backend_name", ["cuda"])
@pytest.mark.parametrize("fmt", ["json", "csv", "md"])
def test_run_out_dash_writes_the_report_alone_on_stdout(fake_gpu, tmp_path, capsys, fmt):
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(COPY_PTX)
    assert cli.main(["run", str(ptx), *RUN, "--cache", "warm", "--out", "-", "--format", fmt]) == 0
    captured = capsys.readouterr()
    assert "copy on Fake GPU" in captured.err  # the summary, for a person, off stdout
    if fmt == "json":
        assert json.loads(captured.out)["results"][0]["kernel"] == "copy"
    elif fmt == "csv":
        assert captured.out.startswith("kernel,grid,block,") and captured.out.count("\n") == 2
    else:
        assert captured.out.startswith("| kernel |") and captured.out.count("\n") == 3


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_verbose_says_what_ran_and_what_was_chosen_and_quiet_says_nothing(fake_gpu, tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(COPY_PTX)
    argv = ["run", str(ptx), *[a for a in RUN if a not in ("--timer", "events")], "--cache", "warm"]
    assert cli.main(["-v", *argv]) == 0
    err = capsys.readouterr().err
    assert "pyhipbench: timer auto on Fake GPU: events (cupti could not trace a probe launch:" in err
    assert "pyhipbench: copy: timer events (auto), cache warm, 1 set(s) (one argument set: warm does not rotate); " \
           "3 samples, stopped: max-samples" in err
    assert cli.main([*argv, "-q"]) == 0  # after the command too
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("backend_name", ["cuda"])
def test_a_warm_run_without_rotate_says_why_it_has_one_set(fake_gpu, tmp_path, capsys):
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(COPY_PTX)
    assert cli.main(["run", str(ptx), *RUN, "--cache", "warm"]) == 0
    out = capsys.readouterr().out
    assert "1 set(s): one argument set: warm does not rotate" in out and "rotate=1" not in out
    assert cli.main(["run", str(ptx), *RUN, "--rotate", "1"]) == 0
    assert "1 set(s): set by the caller (rotate=1)" in capsys.readouterr().out


def test_demo_without_a_gpu_opens_with_a_short_line(monkeypatch, capsys):
    def no_gpu(backend, index=0):
        raise NoDeviceError("no GPU found; hip: hip-python not installed; cuda: no CUDA driver: ...")
    monkeypatch.setattr(cli, "_open_device", no_gpu)
    assert cli.main(["demo"]) == 0
    first, why, sizes = capsys.readouterr().out.splitlines()[:3]
    assert first == "no GPU here: the plan for NVIDIA H200 (--profile h200), nothing is run"
    assert why == "  why no GPU: no GPU found; hip: hip-python not installed; cuda: no CUDA driver: ..."
    assert sizes.endswith(", memory 139.8 GiB")  # binary units, as info prints them
