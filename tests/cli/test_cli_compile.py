"""`pyhipbench compile`."""

from __future__ import annotations

import pytest

from pyhipbench import cli

from codegen_helpers import IR_DATA, require_toolchain


def run(*argv: str) -> int:
    return cli.main(["compile", *argv])


def test_amd_prints_target_kernels_and_verification(tmp_path, capsys):
    require_toolchain("gfx942")
    out = tmp_path / "k.hsaco"
    assert run(str(IR_DATA / "kernels_gfx942.ll"), "--target", "gfx942", "-o", str(out)) == 0
    assert out.read_bytes()[:4] == b"\x7fELF"
    printed = capsys.readouterr().out
    assert "target: gfx942 (hsaco" in printed and "kernels: copy, scale" in printed
    assert "first instruction must be s_icache_inv: PASSED" in printed
    assert "copy: entry 0x" in printed and "`s_icache_inv` [ok]" in printed


def test_no_icache_flush(tmp_path, capsys):
    require_toolchain("gfx90a")
    out = tmp_path / "k.hsaco"
    assert run(str(IR_DATA / "kernels_gfx90a.bc"), "--target", "gfx90a", "--no-icache-flush",
               "--code-object-version", "4", "-o", str(out)) == 0
    assert "verification: none (no prologue injected)" in capsys.readouterr().out
    assert out.read_bytes()[8] == 2  # code object v4


def test_nvidia_writes_ptx(tmp_path, capsys):
    out = tmp_path / "k.ptx"
    assert run(str(IR_DATA / "copy_sm_90.ll"), "--target", "sm_90", "--ptx-version", "80",
               "-o", str(out)) == 0
    assert ".version 8.0" in out.read_text()
    assert "icache flush: none (NVIDIA" in capsys.readouterr().out


def test_errors_go_to_stderr_with_status_1(tmp_path, capsys):
    bad = tmp_path / "bad.ll"
    bad.write_text("define void @f() {\n  nonsense\n}\n")
    assert run(str(bad), "--target", "gfx942", "-o", str(tmp_path / "o")) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"pyhipbench compile: invalid LLVM IR in {bad}:") and ":2:" in err
    assert not (tmp_path / "o").exists()


def test_missing_input_file(tmp_path, capsys):
    assert run(str(tmp_path / "absent.ll"), "--target", "sm_90", "-o", str(tmp_path / "o")) == 1
    assert capsys.readouterr().err == f"pyhipbench compile: {tmp_path / 'absent.ll'}: No such file or directory\n"


def test_bad_target(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        run(str(IR_DATA / "copy_sm_90.ll"), "--target", "volta", "-o", str(tmp_path / "o"))
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith("pyhipbench compile: --target volta: expected an AMD processor")
    assert not (tmp_path / "o").exists()


def test_ptx_version_for_an_amd_target(tmp_path, capsys):
    assert run(str(IR_DATA / "kernels_gfx942.ll"), "--target", "gfx942", "--ptx-version", "80",
               "-o", str(tmp_path / "o")) == 2
    assert capsys.readouterr().err == "pyhipbench compile: --ptx-version applies to NVIDIA targets (sm_*), not gfx942\n"


def test_code_object_version_choices(capsys):
    with pytest.raises(SystemExit) as exited:
        run(str(IR_DATA / "copy_sm_90.ll"), "--target", "gfx942", "--code-object-version", "3",
            "-o", "x")
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("pyhipbench compile: --code-object-version 3: expected one of 4, 5, 6 "
                                       "(pyhipbench compile -h for help)\n")
