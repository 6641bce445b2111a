"""`pyhipbench run --chain FILE`: a chain of the input's kernels timed as one sample, on the fake driver; its bad
input refused in one line naming the file, the launch and the value, before a device is opened."""
from __future__ import annotations

import ctypes
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import call

COPY_PTX = Path(str(resources.files("pyhipbench") / "kernels" / "copy.ptx"))
LAUNCH = {"cuda": "cuLaunchKernel", "hip": "hipExtModuleLaunchKernel"}
COPY_ARGS = ["array:float32:256:arange", "array:float32:256", "int64:256"]
# src -> work, then work -> dst: the second launch reads the array the first writes.
SPLIT = {"launches": [{"kernel": "copy", "grid": [1], "block": [256], "args": COPY_ARGS},
                      {"kernel": "copy", "grid": [2], "block": [128], "args": ["ref:0.1", "array:float32:256",
                                                                              "ref:0.2"]}]}
QUICK = ["--iterations", "3", "--warmup", "0", "--timer", "events"]


def write(folder: Path, name: str, data) -> Path:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _copy_on_launch(params) -> None:
    """What copy.ptx does (dst[i] = src[i] for float32), played on the fake driver's host memory."""
    src, dst, n = (ctypes.cast(params[i], ctypes.POINTER(ctypes.c_uint64)).contents.value for i in range(3))
    ctypes.memmove(dst, src, 4 * n)


@pytest.fixture
def copying(fake_driver):
    fake_driver.run_kernel(_copy_on_launch)
    yield fake_driver
    fake_driver.lib.fake_set_kernel_body(None)


def test_run_a_chain_end_to_end_the_second_launch_reading_the_firsts_output(fake_gpu, copying, backend_name,
                                                                           tmp_path, capsys):
    """Every rotated set: dst (the last launch's argument 1) holds src's arange only if the second launch read
    the very buffer the first wrote; without the reference it reads zeros, and --expect says so."""
    np.save(tmp_path / "arange.npy", np.arange(256, dtype=np.float32))
    chain, out = write(tmp_path, "split.json", SPLIT), tmp_path / "r.json"
    run = ["run", COPY_PTX, "--chain", chain, *QUICK, "--cache", "dirty-cold", "--rotate", "3",
           "--expect", f"1={tmp_path / 'arange.npy'}"]
    code, printed, err = call([*run, "--out", out], capsys)
    assert (code, err) == (0, "")
    assert "copy -> copy" in printed and "; outputs verified" in printed
    result, = json.loads(out.read_text())["results"]
    assert (result["ran"], result["kernel"], result["rotation"]["sets"], result["verified"]) == (
        "chain", "copy -> copy", 3, True)
    assert [(k["grid"], k["block"]) for k in result["kernels"]] == [([1, 1, 1], [256, 1, 1]), ([2, 1, 1], [128, 1, 1])]
    launches = copying.records(LAUNCH[backend_name])
    assert [r.block[0] for r in launches[:4]] == [256, 128, 256, 128]
    unshared = {"launches": [SPLIT["launches"][0], {**SPLIT["launches"][1], "args": ["array:float32:256",
                                                                                      "array:float32:256", "int64:256"]}]}
    run[3] = write(tmp_path, "unshared.json", unshared)
    code, _, err = call(run, capsys)
    assert code == 1 and err.startswith("pyhipbench run: kernel 'copy', argument 1, set 0: element [1] is 0.0, "
                                        "expected 1.0")


def test_run_a_module_chain_with_the_flags_as_its_launch(fake_gpu, fake_driver, backend_name, tmp_path, capsys):
    """{"launches": "module"}: every kernel of the input, in name order, each with --grid, --block and the --args
    (one argument list for all)."""
    text = COPY_PTX.read_text()
    entry = text[text.index(".visible .entry copy("):]
    ptx = write(tmp_path, "parts.ptx", text[:text.index(".visible")] + entry.replace("copy", "part_1") + "\n"
                + entry.replace("copy", "part_0"))
    chain = write(tmp_path, "module.yaml" if _has_yaml() else "module.json",
                  "launches: module\n" if _has_yaml() else '{"launches": "module"}')
    fake_driver.read_args(2)
    code, printed, err = call(["run", ptx, "--chain", chain, "--grid", "4", "--block", "64",
                               *[f"--arg={a}" for a in COPY_ARGS], *QUICK, "--cache", "warm"], capsys)
    assert (code, err) == (0, "") and "part_0 -> part_1" in printed
    made = fake_driver.records(LAUNCH[backend_name])
    assert len(made) == 6 and all(r.arg_values[:2] == made[0].arg_values[:2] for r in made)
    assert {(blocks(r, backend_name), r.block[0]) for r in made} == {(4, 64)}


def blocks(record, backend_name: str) -> int:
    """A launch's grid (x), in blocks: hipExtModuleLaunchKernel takes it in threads."""
    return record.grid[0] // record.block[0] if backend_name == "hip" else record.grid[0]


def _has_yaml() -> bool:
    try:
        import yaml  # noqa: F401
    except ImportError:
        return False
    return True


def test_a_chain_files_own_defaults_and_a_plain_list_of_launches(fake_gpu, fake_driver, backend_name, tmp_path,
                                                               capsys):
    """The file's grid, block and args are what its launches leave out; a plain list is the launches."""
    both = write(tmp_path, "defaults.json", {"grid": [2], "block": [64], "args": COPY_ARGS,
                                             "launches": [{"kernel": "copy"}, {"kernel": "copy", "grid": [3]}]})
    assert call(["run", COPY_PTX, "--chain", both, *QUICK, "--cache", "warm"], capsys)[0] == 0
    made = fake_driver.records(LAUNCH[backend_name])
    assert [(blocks(r, backend_name), r.block[0]) for r in made[:2]] == [(2, 64), (3, 64)]
    plain = write(tmp_path, "plain.json", SPLIT["launches"])
    assert call(["run", COPY_PTX, "--chain", plain, *QUICK, "--cache", "warm"], capsys)[0] == 0


@pytest.mark.parametrize("chain, flags, message", [
    ({**SPLIT, "launches": [SPLIT["launches"][0], {**SPLIT["launches"][1], "args": ["ref:1.1"]}]}, [],
     "{chain}: launches[1].args[0]='ref:1.1': launch 1 is not before launch 1; expected LAUNCH one of 0 to 0 "
     "(the launches before it)"),
    ({**SPLIT, "launches": [SPLIT["launches"][0], {**SPLIT["launches"][1], "args": ["ref:0.7"]}]}, [],
     "{chain}: launches[1].args[0]='ref:0.7': launch 0 (copy) has 3 arguments; expected ARG one of 0 to 2"),
    ({"launches": [{**SPLIT["launches"][0], "args": ["ref:0.0"]}]}, [],
     "{chain}: launches[0].args[0]='ref:0.0': the first launch has no earlier launch to refer to"),
    ({"launches": [{**SPLIT["launches"][0], "args": ["ref:zero.1"]}]}, [],
     "{chain}: launches[0].args[0]='ref:zero.1': expected ref:LAUNCH.ARG, LAUNCH and ARG whole numbers from 0"),
    ({"launches": [{"kernel": "copy", "block": [64]}]}, [],
     "{chain}: launches[0]: missing grid; expected it in the launch or the candidate (its defaults)"),
    ({"launches": "module"}, ["--grid", "4"], "{chain}: launches='module': missing block; expected the chain's grid"),
    ({"launches": "all"}, [], "{chain}: launches='all': expected a non-empty list of launches"),
    ({**SPLIT, "gird": [1]}, [], "{chain}: unknown field(s) 'gird'; expected launches, grid, block, shared_bytes, "
                                 "args"),
    ({"grid": [1]}, [], "{chain}: expected an object with \"launches\""),
    ({**SPLIT, "grid": [1]}, ["--grid", "2"], "--grid and {chain}'s grid: both give the chain's grid; expected one"),
    (SPLIT, ["--kernel", "copy"], "--kernel copy with --chain: the chain file names each launch's kernel; expected "
                                  "one of --kernel and --chain"),
    ("{", [], "{chain}: not JSON"),
])
def test_bad_chains_are_one_line_naming_the_file_and_the_value(no_device_wanted, tmp_path, capsys, chain, flags,
                                                               message):
    path = write(tmp_path, "chain.json", chain)
    code, out, err = call(["run", COPY_PTX, "--chain", path, *flags], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"pyhipbench run: {message.format(chain=path)}") and err.count("\n") == 1, err


def test_run_without_a_kernel_or_a_chain_is_a_usage_error(no_device_wanted, capsys):
    code, _, err = call(["run", COPY_PTX, "--grid", "1"], capsys)
    assert (code, err) == (2, "pyhipbench run: the following arguments are required: --kernel, --block (or --chain "
                              "FILE, a chain of launches) (pyhipbench run -h for help)\n")


def test_a_missing_chain_file_is_named(no_device_wanted, tmp_path, capsys):
    code, _, err = call(["run", COPY_PTX, "--chain", tmp_path / "none.json"], capsys)
    assert code == 1 and err == f"pyhipbench run: {tmp_path / 'none.json'}: No such file or directory\n"


def test_a_chain_naming_a_kernel_the_input_lacks_is_refused(fake_gpu, tmp_path, capsys):
    chain = write(tmp_path, "chain.json", {"launches": [SPLIT["launches"][0], {**SPLIT["launches"][1],
                                                                              "kernel": "reduce"}]})
    code, _, err = call(["run", COPY_PTX, "--chain", chain, *QUICK], capsys)
    assert (code, err) == (2, "pyhipbench run: no kernel 'reduce' in this ptx module; its kernels: copy\n")


def test_out_may_not_overwrite_the_chain_file(no_device_wanted, tmp_path, capsys):
    chain = write(tmp_path, "chain.json", SPLIT)
    code, _, err = call(["run", COPY_PTX, "--chain", chain, "--out", chain], capsys)
    assert code == 2 and err.startswith(f"pyhipbench run: --out {chain}: is the input file")
