"""Discovery of the LLVM tools that turn AMDGPU assembly into a code object.

llvmlite can emit AMDGPU assembly but not an object from IR holding inline
asm, so the AMD path needs an assembler (llvm-mc), a linker (ld.lld) and, to
prove where the flush landed, a disassembler (llvm-objdump). All three are
taken from one place (one directory and one version suffix), so they come
from one LLVM release and agree on which processors exist.

Search order, first usable place wins:

1. ``$PYHIPBENCH_LLVM_BIN`` when set (then nothing else is searched);
2. ``$ROCM_PATH/llvm/bin``, then ``/opt/rocm/llvm/bin``;
3. every directory on ``PATH``: versioned names newest first
   (``llvm-mc-22``, ``ld.lld-22``, ``llvm-objdump-22``, then ``-19`` ...),
   then the unversioned names.

A place is usable when it has all three tools and its llvm-mc knows the
processor asked for (Debian's llvm-14 does not know gfx942, LLVM 19 does not
know gfx950).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolchainError

__all__ = ["Toolchain", "ToolchainError", "find_toolchain", "ENV_VAR", "TOOLS"]

ENV_VAR = "PYHIPBENCH_LLVM_BIN"
TOOLS = ("llvm-mc", "ld.lld", "llvm-objdump")
AMDGPU_TRIPLE = "amdgcn-amd-amdhsa"
ROCM_DEFAULT = Path("/opt/rocm")

_HOW_TO_GET = (
    "Install ROCm (its llvm/bin is searched), or on Debian/Ubuntu "
    "`apt-get install llvm-22 lld-22` (LLVM >= 20 knows gfx950; >= 17 knows gfx942), "
    f"or set {ENV_VAR} to a directory holding {', '.join(TOOLS)}."
)


@dataclass(frozen=True)
class Toolchain:
    """The three tools of one LLVM release, and that release's version."""

    assembler: Path  # llvm-mc
    linker: Path  # ld.lld
    disassembler: Path  # llvm-objdump
    version: tuple[int, int]  # (major, minor) of the assembler's LLVM

    def __str__(self) -> str:
        return f"LLVM {self.version[0]}.{self.version[1]} ({self.assembler.parent})"


def _versioned_suffixes(directory: Path) -> list[str]:
    """``-NN`` suffixes of llvm-mc in ``directory``, newest first."""
    found = []
    for p in directory.glob("llvm-mc-*"):
        m = re.fullmatch(r"llvm-mc(-(\d+))", p.name)
        if m:
            found.append((int(m.group(2)), m.group(1)))
    return [suffix for _, suffix in sorted(found, reverse=True)]


def _places() -> list[tuple[Path, str, str]]:
    """(directory, name suffix, why it is searched), in search order."""
    env = os.environ.get(ENV_VAR)
    if env:
        d = Path(env)
        return [(d, s, f"${ENV_VAR}") for s in [*_versioned_suffixes(d), ""]]
    places = []
    rocm = os.environ.get("ROCM_PATH")
    if rocm:
        places.append((Path(rocm) / "llvm" / "bin", "", "$ROCM_PATH"))
    places.append((ROCM_DEFAULT / "llvm" / "bin", "", "ROCm default"))
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            d = Path(entry)
            places.extend((d, s, "PATH") for s in [*_versioned_suffixes(d), ""])
    return places


@functools.lru_cache(maxsize=None)
def _version(assembler: Path) -> tuple[int, int] | str:
    """(major, minor) from ``--version``; else why the tool cannot be used: it cannot be run, ``--version``
    fails, or it prints no LLVM version (not an llvm-mc)."""
    try:
        ran = subprocess.run(
            [assembler, "--version"], capture_output=True, text=True, errors="replace", check=False
        )
    except OSError as e:  # executable but not runnable (wrong architecture, broken #! line)
        return f"cannot be run ({e.strerror or e})"
    if ran.returncode != 0:
        said = (ran.stderr.strip() or ran.stdout.strip()).splitlines()
        return f"`{assembler.name} --version` exited {ran.returncode}" + (f" ({said[0]})" if said else "")
    m = re.search(r"version (\d+)\.(\d+)", ran.stdout)
    if m is None:
        return f"`{assembler.name} --version` printed no LLVM version: not an llvm-mc"
    return int(m.group(1)), int(m.group(2))


@functools.lru_cache(maxsize=None)
def _knows_processor(assembler: Path, mcpu: str) -> bool:
    # An unknown processor is a warning, not an error: llvm-mc then
    # assembles for "gfx000". The warning is the signal.
    r = subprocess.run(
        [assembler, f"--triple={AMDGPU_TRIPLE}", f"--mcpu={mcpu}"],
        input="",
        capture_output=True,
        text=True,
        check=False,
    )
    return r.returncode == 0 and "not a recognized processor" not in r.stderr


def _is_executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


def find_toolchain(mcpu: str) -> Toolchain:
    """The first usable place's tools for AMDGPU processor ``mcpu`` (e.g. "gfx942").

    Raises ToolchainError naming each place looked at, what it lacked, and
    how to get the tools.
    """
    looked: list[str] = []
    seen: set[tuple[Path, str]] = set()
    llvm_on_path = False
    for directory, suffix, why in _places():
        if (directory.resolve(), suffix) in seen:
            continue
        seen.add((directory.resolve(), suffix))
        paths = [directory / f"{tool}{suffix}" for tool in TOOLS]
        missing = [p.name for p in paths if not p.is_file()]
        if len(missing) == len(TOOLS):
            if why != "PATH":  # PATH directories without LLVM are noise
                looked.append(f"{directory} ({why}): none of the tools")
            continue
        llvm_on_path |= why == "PATH"
        unusable = [f"missing {', '.join(missing)}"] if missing else []
        not_executable = [p.name for p in paths if p.is_file() and not _is_executable(p)]
        if not_executable:
            unusable.append(f"not executable: {', '.join(not_executable)}")
        if unusable:
            looked.append(f"{directory} ({why}): {'; '.join(unusable)}")
            continue
        assembler, linker, disassembler = paths
        version = _version(assembler)
        if isinstance(version, str):
            looked.append(f"{assembler} ({why}): {version}")
            continue
        if not _knows_processor(assembler, mcpu):
            looked.append(
                f"{assembler} (LLVM {version[0]}.{version[1]}, {why}): "
                f"does not know processor {mcpu}"
            )
            continue
        return Toolchain(assembler, linker, disassembler, version)
    if not os.environ.get(ENV_VAR) and not llvm_on_path:
        looked.append(f"PATH ({os.environ.get('PATH', '')}): none of the tools, plain or -NN")
    searched = "\n  ".join(looked)
    raise ToolchainError(
        f"no LLVM toolchain ({', '.join(TOOLS)}) for {mcpu} found. Looked at:\n  "
        f"{searched}\n{_HOW_TO_GET}"
    )
