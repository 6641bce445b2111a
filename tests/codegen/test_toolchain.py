"""Discovery of llvm-mc / ld.lld / llvm-objdump."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyhipbench.codegen import toolchain
from pyhipbench.codegen.toolchain import ENV_VAR, ToolchainError, find_toolchain

from codegen_helpers import require_toolchain


def fake_tools(directory: Path, suffix: str = "", *, knows: str = "gfx942",
               tools=toolchain.TOOLS) -> None:
    """Shell scripts standing in for the tools; llvm-mc knows one processor."""
    directory.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        script = directory / f"{tool}{suffix}"
        script.write_text(
            "#!/bin/sh\n"
            'case "$*" in *--version*) echo "LLVM version 42.1.0";; esac\n'
            f'case "$*" in *--mcpu={knows}*) ;; *--mcpu=*) '
            "echo \"'x' is not a recognized processor for this target\" >&2;; esac\n"
        )
        script.chmod(0o755)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No ROCm, no env override; returns a setter of PATH."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    monkeypatch.setattr(toolchain, "ROCM_DEFAULT", tmp_path / "no-default-rocm")
    toolchain._knows_processor.cache_clear()
    toolchain._version.cache_clear()

    def set_path(*dirs: Path) -> None:
        monkeypatch.setenv("PATH", os.pathsep.join(str(d) for d in dirs))

    return set_path


def test_finds_the_real_toolchain_for_every_target():
    for mcpu in ("gfx90a", "gfx942", "gfx950", "gfx1100"):
        tools = require_toolchain(mcpu)
        assert tools.assembler.name.startswith("llvm-mc")
        assert tools.linker.name.startswith("ld.lld")
        assert tools.disassembler.name.startswith("llvm-objdump")
        # one release: the same directory and version suffix
        suffixes = {p.name.split(n, 1)[1] for p, n in
                    zip((tools.assembler, tools.linker, tools.disassembler), toolchain.TOOLS)}
        assert len(suffixes) == 1 and tools.assembler.parent == tools.linker.parent


def test_env_var_wins_and_is_the_only_place(clean_env, tmp_path, monkeypatch):
    fake_tools(tmp_path / "env")
    fake_tools(tmp_path / "path", "-30")
    clean_env(tmp_path / "path")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    tools = find_toolchain("gfx942")
    assert tools.assembler == tmp_path / "env" / "llvm-mc"
    assert tools.version == (42, 1)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "empty"))
    with pytest.raises(ToolchainError, match=f"empty \\(\\${ENV_VAR}\\): none of the tools"):
        find_toolchain("gfx942")


def test_rocm_before_path(clean_env, tmp_path, monkeypatch):
    fake_tools(tmp_path / "rocm" / "llvm" / "bin")
    fake_tools(tmp_path / "path", "-30")
    clean_env(tmp_path / "path")
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    assert find_toolchain("gfx942").assembler == tmp_path / "rocm" / "llvm" / "bin" / "llvm-mc"


def test_newest_version_first_then_unversioned(clean_env, tmp_path):
    fake_tools(tmp_path / "bin", "-9")
    fake_tools(tmp_path / "bin", "-30")
    fake_tools(tmp_path / "bin", "")
    clean_env(tmp_path / "bin")
    assert find_toolchain("gfx942").assembler == tmp_path / "bin" / "llvm-mc-30"


def test_skips_a_release_that_does_not_know_the_processor(clean_env, tmp_path):
    fake_tools(tmp_path / "bin", "-30", knows="gfx90a")
    fake_tools(tmp_path / "bin", "-20", knows="gfx950")
    clean_env(tmp_path / "bin")
    assert find_toolchain("gfx950").assembler == tmp_path / "bin" / "llvm-mc-20"


def test_missing_tool_is_named_with_where_and_how(clean_env, tmp_path):
    fake_tools(tmp_path / "bin", "-30", tools=("llvm-mc", "llvm-objdump"))
    fake_tools(tmp_path / "bin", "-20", knows="gfx90a")
    clean_env(tmp_path / "bin")
    with pytest.raises(ToolchainError) as e:
        find_toolchain("gfx942")
    message = str(e.value)
    assert f"{tmp_path / 'bin'} (PATH): missing ld.lld-30" in message
    assert f"{tmp_path / 'bin' / 'llvm-mc-20'} (LLVM 42.1, PATH): does not know processor gfx942" in message
    assert "no-rocm/llvm/bin ($ROCM_PATH): none of the tools" in message
    assert "apt-get install llvm-22 lld-22" in message and ENV_VAR in message


def test_nothing_on_path_says_so(clean_env, tmp_path):
    clean_env(tmp_path / "nothing")
    with pytest.raises(ToolchainError, match="PATH .*none of the tools, plain or -NN"):
        find_toolchain("gfx942")


def test_real_assemblers_reject_an_unknown_processor():
    require_toolchain("gfx942")
    with pytest.raises(ToolchainError, match="does not know processor gfx9999"):
        find_toolchain("gfx9999")


def test_a_tool_that_cannot_run_is_named(clean_env, tmp_path):
    fake_tools(tmp_path / "bin", "-30")
    broken = tmp_path / "bin" / "llvm-mc-30"
    broken.write_text("#!/nonexistent/interpreter\n")
    clean_env(tmp_path / "bin")
    with pytest.raises(ToolchainError, match=rf"{broken} \(PATH\): cannot be run \(No such file or directory\)"):
        find_toolchain("gfx942")


def test_a_broken_or_foreign_assembler_is_named_not_read_as_llvm_0_0(clean_env, tmp_path, monkeypatch):
    fake_tools(tmp_path / "llvm")
    assembler = tmp_path / "llvm" / "llvm-mc"
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "llvm"))
    assembler.write_text("#!/bin/sh\necho 'error while loading shared libraries: libLLVM.so.22' >&2\nexit 127\n")
    with pytest.raises(ToolchainError, match=rf"{assembler} \(\${ENV_VAR}\): `llvm-mc --version` exited 127 "
                                             r"\(error while loading shared libraries: libLLVM.so.22\)"):
        find_toolchain("gfx942")
    toolchain._version.cache_clear()
    assembler.write_text("#!/bin/sh\necho 'GNU assembler 2.40'\n")
    with pytest.raises(ToolchainError, match=r"`llvm-mc --version` printed no LLVM version: not an llvm-mc"):
        find_toolchain("gfx942")


def test_a_tool_that_is_not_executable_is_named_so(clean_env, tmp_path, monkeypatch):
    fake_tools(tmp_path / "llvm")
    (tmp_path / "llvm" / "ld.lld").chmod(0o644)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "llvm"))
    with pytest.raises(ToolchainError, match=rf"{tmp_path / 'llvm'} \(\${ENV_VAR}\): not executable: ld.lld"):
        find_toolchain("gfx942")
