"""The files the commands read and write: the input (source, IR or code object), output paths, reports, and
standard output beside them."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, TextIO

from .._codeobject import image as codeobject
from .._textfile import MAX_IR_DEPTH, ir_nesting, write_whole, written_at
from .._values import show
from ..codegen import ir
from ..codegen.source import SOURCE_LANGUAGES
from ..errors import BenchError, IRError

STDOUT = "-"  # an output path that means standard output (run --out -)
KERNEL_KINDS = "CUDA/HIP C++ (.cu, .hip), LLVM IR (text or bitcode) or a code object (PTX, cubin, fatbin, HSACO)"
# Suffixes of files that are no kernel, whatever they hold: what pyhipbench reads and writes beside kernels.
NOT_KERNEL_SUFFIXES = {".json": "JSON", ".yaml": "YAML", ".yml": "YAML", ".csv": "CSV", ".md": "markdown",
                       ".npy": "a numpy array", ".db": "a database", ".png": "an image", ".svg": "an image",
                       ".html": "a web page", ".py": "Python"}
# How each top-level entity of LLVM IR text starts (LLVM's parser refuses anything else first).
IR_STARTS = ("define", "declare", "target", "source_filename", "attributes", "module", "uselistorder", "deplibs",
             "@", "%", "!", "$")
_SIGNIFICANT_LINE = re.compile(r"^[ \t\r]*([^\s;].*)$", re.MULTILINE)  # not blank, not an IR comment


def read_input(path: Path) -> tuple[str, bytes | str]:
    """("source", C++ text) for a .cu or .hip file; else ("code object", bytes) or ("ir", bitcode
    bytes or IR text), decided by content.

    Code objects are recognised by their magic (codeobject.detect_format); an
    ELF or fatbin that is not a GPU code object is refused as such; anything
    else is LLVM IR, bitcode by its magic or else UTF-8 text. A file that is
    no kernel by its suffix (NOT_KERNEL_SUFFIXES) or by its text (whose first
    line starts no LLVM IR entity) is refused as such, before LLVM sees it.
    """
    data = path.read_bytes()  # a missing file or a directory: OSError naming it, reported by main()
    if path.suffix.lower() in NOT_KERNEL_SUFFIXES:
        raise BenchError(f"{path}: {NOT_KERNEL_SUFFIXES[path.suffix.lower()]} (by its suffix), not a kernel file; "
                         f"expected {KERNEL_KINDS}")
    if path.suffix in SOURCE_LANGUAGES:
        try:
            return "source", data.decode()
        except UnicodeDecodeError as e:
            raise BenchError(f"{path}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; expected "
                             f"{SOURCE_LANGUAGES[path.suffix].upper()} C++ source text") from None
    if data[:4] in ir.BITCODE_MAGIC:
        return "ir", data
    try:
        codeobject.detect_format(data)
        return "code object", data
    except BenchError:
        if data[:4] == b"\x7fELF" or data[:4] == codeobject.FATBIN_MAGIC.to_bytes(4, "little"):
            raise
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        raise IRError(f"{path}: byte {e.start} (0x{data[e.start]:02x}) is not UTF-8; expected LLVM IR text, "
                      "LLVM bitcode or a code object (PTX, cubin, fatbin, HSACO)") from None
    first = _SIGNIFICANT_LINE.search(text)
    if first is not None and not first[1].startswith(IR_STARTS):
        raise BenchError(f"{path}: not a kernel file: it starts {show(first[1])}, which no LLVM IR does, and is no "
                         f"code object; expected {KERNEL_KINDS}")
    depth = ir_nesting(text)
    if depth > MAX_IR_DEPTH:  # LLVM's parser would overflow the stack: a segfault, not an error
        raise IRError(f"{path}: brackets nest {depth} levels deep; expected LLVM IR text nested at most "
                      f"{MAX_IR_DEPTH} levels (LLVM's parser recurses per level)")
    return "ir", text


def check_output(option: str, path: Path, input_path: Path | None = None) -> None:
    """Refuses, before any work, an output path that cannot be written or would overwrite the input. A file is
    written whole (`write_whole`: a new file in its folder, renamed over it), so its folder must be writable
    too; what is not a file (/dev/null, a pipe) is written in place."""
    def refuse(why: str) -> BenchError:
        return BenchError(f"{option} {path}: {why}")

    if path.is_dir():
        raise refuse("is a directory; expected a file path")
    parent = path.parent
    if not parent.exists():
        raise refuse(f"directory {parent} does not exist")
    if not parent.is_dir():
        raise refuse(f"{parent} is not a directory")
    if path.exists():
        if input_path is not None and input_path.exists() and os.path.samefile(path, input_path):
            raise refuse("is the input file; writing it would overwrite the source")
        if not os.access(path, os.W_OK):
            raise refuse("is not writable")
        if not written_at(path).is_file():
            return
    folder = written_at(path).parent
    if not os.access(folder, os.W_OK | os.X_OK):
        shown = folder if path.is_symlink() else parent  # a link is written through: its target's folder
        why = " (a file is written whole: into a new file there, renamed over it)" if path.exists() else ""
        raise refuse(f"directory {shown} is not writable{why}")


class Stdout:
    """Standard output for a command that writes files too (`kept_stdout`): each write reaches the stream at
    once, and one that fails (a closed pipe, a full disk) is kept in `failure` rather than raised, so the
    command goes on to its files; what is written after a failure is dropped."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failure: str | None = None  # why a write failed (OSError's words), or None

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                self.stream.write(text)
                self.stream.flush()
            except OSError as e:
                self.failure = e.strerror or str(e)
                _discard(self.stream)
        return len(text)

    def flush(self) -> None:
        """Nothing waits: each write was flushed."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def status(self, command: str) -> int:
        """1 after saying on stderr, in one line, why standard output could not be written; else 0."""
        if self.failure is None:
            return 0
        print(f"pyhipbench {command}: could not write standard output: {self.failure}", file=sys.stderr)
        return 1


def _discard(stream: TextIO) -> None:
    """Points `stream`'s descriptor at /dev/null: the text still buffered, flushed by the interpreter as it
    exits, would fail again (a second message, and exit status 120)."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):  # a stream in memory (a test's capture) has no descriptor, nor an exit flush
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


@contextmanager
def kept_stdout() -> Iterator[Stdout]:
    """sys.stdout as a `Stdout` for the block: a failure to write it is kept, not raised."""
    kept = Stdout(sys.stdout)
    with redirect_stdout(kept):
        yield kept


def write_reports(command: str, reports: list[tuple[Path, str]], said: TextIO, stdout: Stdout) -> int:
    """Writes each report (path, text): to its file whole or not at all (`write_whole`), saying "wrote PATH" on
    `said`, or to standard output for the path '-'. Every one is tried, whatever failed before it. Each that
    fails is one line on stderr naming its path, or standard output (`stdout.status`), and the cause; a file's
    report that failed is printed on standard output instead where standard output carries no report of its
    own and still works. The exit status: 0, or 1 when any failed."""
    on_stdout = any(str(path) == STDOUT for path, _ in reports)
    failed: list[tuple[Path, str, str]] = []
    for path, text in reports:
        if str(path) == STDOUT:
            stdout.write(text)
            continue
        try:
            write_whole(path, text)
        except OSError as e:
            failed.append((path, e.strerror or str(e), text))
        else:
            print(f"wrote {path}", file=said)
    for path, cause, text in failed:
        if not on_stdout and stdout.failure is None:
            stdout.write(text)
        instead = "" if on_stdout or stdout.failure is not None else "; the report is printed on stdout instead"
        print(f"pyhipbench {command}: could not write {path}: {cause}{instead}", file=sys.stderr)
    return max(1 if failed else 0, stdout.status(command))
