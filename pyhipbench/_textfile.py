"""A user's text and data files, read strictly: UTF-8 text, JSON or YAML as plain JSON values within bounds;
and the files the package writes for a user, written whole or not at all (`write_whole`).

Search spaces, reports, sweep databases' results and C++ sources come from
users' files. Everything that can go wrong in reading one is a BenchError
naming the file, what is wrong and what was expected, on one line:

- text that is not UTF-8: the offset, byte and line of the first bad byte
  (a leading UTF-8 byte-order mark is dropped);
- JSON or YAML that does not parse: the parser's problem and where;
- lists and objects nested more than MAX_DEPTH levels (the parsers recurse
  per level; nothing the package reads nests more than a few), holding
  themselves (a YAML alias inside its own anchor), or YAML aliases repeating
  more than MAX_ALIASED values in all (each use of an alias is a copy to
  everything downstream: a few lines can stand for 10**9 values);
- values that are not JSON data: a YAML timestamp, set or binary, a mapping
  key that is not a string, a string holding a lone surrogate (JSON's
  "\\ud800": not Unicode text), an integer beyond a float's range.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ._values import show
from .errors import BenchError

__all__ = ["MAX_DEPTH", "MAX_IR_DEPTH", "read_text", "decode", "parse_json", "parse_yaml", "check_data",
           "ir_nesting", "write_whole", "written_at"]

MAX_DEPTH = 100  # lists and objects inside one another
MAX_ALIASED = 1_000_000  # values YAML aliases may repeat in all (a "billion laughs" file repeats 10**9)
# Brackets inside one another in LLVM IR text: LLVM's parser recurses per level and overflows the C stack
# (a segfault, measured between 2000 and 10000 levels of constant expressions); real IR nests a few.
MAX_IR_DEPTH = 1000
_BOM = "\ufeff"


def decode(data: bytes, name: str, expected: str) -> str:
    """`data` as UTF-8 text (a leading byte-order mark dropped); BenchError naming `name`, the
    first byte that is not UTF-8 and `expected` otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise BenchError(f"{name}: byte {e.start} (0x{data[e.start]:02x}, line {line}) is not UTF-8; "
                         f"expected {expected} as UTF-8 text") from None
    return text[1:] if text.startswith(_BOM) else text


def read_text(path: Path, expected: str) -> str:
    """The UTF-8 text of the file at `path` (OSError naming it if it cannot be read)."""
    return decode(Path(path).read_bytes(), str(path), expected)


def written_at(path: Path) -> Path:
    """The file a write to `path` changes: `path` with its symbolic links followed (a link is written through,
    not replaced)."""
    return Path(os.path.realpath(path))


def write_whole(path: Path, data: str | bytes) -> None:
    """Writes `data` (text as UTF-8) to the file `path`, whole or not at all: into a new file beside it (its
    folder, links followed: `written_at`), flushed to the disk, then renamed over it, so that a write that fails
    part way (a full disk, a file-size limit) leaves what `path` held before and no partial file. A file that
    was there keeps its permissions; a new one gets the umask's. What is not a file (/dev/null, a pipe) is
    written in place, as a stream. OSError naming `path` when the write fails."""
    content = data.encode("utf-8") if isinstance(data, str) else data
    target = written_at(path)
    try:
        if target.exists() and not target.is_file():
            target.write_bytes(content)
            return
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(content)
                file.flush()
                os.fsync(file.fileno())  # a full disk can say so only here, on some file systems
            if target.exists():
                os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)  # a write that failed; after the rename there is none
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), os.fspath(path)) from None


def _too_deep(name: str, expected: str) -> BenchError:
    return BenchError(f"{name}: lists and objects nest more than {MAX_DEPTH} levels deep; expected {expected}, "
                      "nested a few levels")


def parse_json(text: str, name: str, expected: str, what: str = "JSON") -> Any:
    """The JSON value `text` holds, checked by `check_data`; BenchError "`name`: not `what` (...);
    expected `expected`" when it does not parse."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchError(f"{name}: not {what} ({e.msg} at line {e.lineno}); expected {expected}") from None
    except RecursionError:
        raise _too_deep(name, expected) from None
    except ValueError as e:  # an integer of more digits than int() converts
        raise BenchError(f"{name}: not {what} ({e}); expected {expected}") from None
    check_data(value, name, expected)
    return value


def _yaml_problem(error: Exception) -> str:
    """A YAML error on one line: the problem, its context and where (line and column, or offset)."""
    import yaml
    if isinstance(error, yaml.MarkedYAMLError):
        words = ", ".join(w for w in (error.context, error.problem) if w) or type(error).__name__
        mark = error.problem_mark or error.context_mark
        return f"{words} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else words
    if isinstance(error, yaml.reader.ReaderError):
        character = error.character if isinstance(error.character, int) else ord(error.character)
        return f"unacceptable character #x{character:04x} at offset {error.position}: {error.reason}"
    if isinstance(error, yaml.YAMLError):
        return " ".join(str(error).split())
    return f"{type(error).__name__}: {' '.join(str(error).split())}"


def parse_yaml(text: str, name: str, expected: str) -> Any:
    """The YAML document `text` holds, checked by `check_data` (BenchError as parse_json's; one
    saying how to install pyyaml without it)."""
    try:
        import yaml
    except ImportError:
        raise BenchError(f"{name}: reading YAML needs pyyaml (pip install pyyaml); or write {expected} "
                         "as JSON") from None
    try:
        value = yaml.load(text, Loader=yaml.SafeLoader)  # the pure-Python loader: deep input is a RecursionError
    except RecursionError:
        raise _too_deep(name, expected) from None
    except Exception as e:  # a YAMLError, or a constructor's own (int() of 5000 digits, a 31st of February)
        raise BenchError(f"{name}: not YAML ({_yaml_problem(e)}); expected {expected}") from None
    check_data(value, name, expected)
    return value


def _key(key: object) -> str:
    return f".{key}" if isinstance(key, str) and key.isidentifier() else f"[{show(key)}]"


def _check_string(text: str, where: str, name: str, expected: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise BenchError(f"{name}: {where}: the string {show(text)} holds a lone surrogate "
                             f"(\\u{ord(text[e.start]):04x} at index {e.start}), which is not text; expected "
                             f"{expected} whose strings are Unicode text") from None


_FLOAT_BITS = sys.float_info.max_exp  # an integer of more bits than this is beyond a float's range


def check_data(value: Any, name: str, expected: str, *, json_only: bool = True) -> None:
    """BenchError naming `name` and where in `value` unless it nests at most MAX_DEPTH levels, holds
    no container inside itself, no mapping key that is not a string and no string with a lone
    surrogate nor integer beyond a float's range, and (`json_only`) is JSON data: dicts, lists,
    strings, booleans, None, floats and integers. With `json_only=False` (a tuner's own Python data)
    any other value goes, and tuples are containers too.
    A container reached twice (a YAML alias) is checked once; its values count again towards MAX_ALIASED."""
    containers = (dict, list) if json_only else (dict, list, tuple)
    height: dict[int, int] = {}  # id -> levels at and below a container already checked
    size: dict[int, int] = {}    # id -> values in a container already checked, itself included, aliases expanded
    path: list[list[Any]] = []   # [container, where, iterator over (where, child), highest child, values]
    on_path: set[int] = set()
    aliased = 0

    def where_of(suffix: str) -> str:  # candidates[0].tags.tile: a key of the top level has no dot
        base = path[-1][1] if path else ""
        return suffix[1:] if not base and suffix[:1] in (".", " ") else base + suffix

    def visit(child: Any, where: str) -> None:
        if isinstance(child, containers):
            if id(child) in on_path:
                alias = " (a YAML alias inside its own anchor)" if json_only else ""
                raise BenchError(f"{name}: {where or 'the top level'} holds itself{alias}; expected {expected} "
                                 "without cycles")
            if id(child) in height:  # reached again through an alias: its depth and size below are known
                nonlocal aliased
                aliased += size[id(child)]
                if aliased > MAX_ALIASED:
                    shared = "YAML aliases" if json_only else "lists and objects used more than once"
                    raise BenchError(f"{name}: {where}: {shared} repeat more than {MAX_ALIASED} values in all; "
                                     f"expected {expected} that they do not multiply")
                if len(path) + height[id(child)] > MAX_DEPTH:
                    raise _too_deep(name, expected)
                path[-1][3] = max(path[-1][3], height[id(child)])
                path[-1][4] += size[id(child)]
                return
            if len(path) >= MAX_DEPTH:
                raise _too_deep(name, expected)
            if type(child) is list and all(type(value) is float for value in child):
                # A report's samples: nothing in them to check, so not walked one by one (10**6 in 0.05 s).
                height[id(child)], size[id(child)] = 1, len(child) + 1
                if path:
                    path[-1][3] = max(path[-1][3], 1)
                    path[-1][4] += len(child) + 1
                return
            items = child.items() if isinstance(child, dict) else enumerate(child)
            path.append([child, where, iter(items), 0, 1])
            on_path.add(id(child))
            return
        if path:
            path[-1][4] += 1
        if isinstance(child, str):
            _check_string(child, where or "the top level", name, expected)
        elif isinstance(child, int) and child.bit_length() > _FLOAT_BITS:
            raise BenchError(f"{name}: {where or 'the top level'}: an integer of {child.bit_length()} bits, beyond "
                             f"a float's range (about 1.8e308); expected {expected} with numbers in range")
        elif not json_only or child is None or isinstance(child, (int, float)):
            pass
        else:
            kind = "a YAML timestamp" if type(child).__name__ in ("date", "datetime") else \
                f"a {type(child).__name__}"
            raise BenchError(f"{name}: {where or 'the top level'}={show(child)}: {kind}, not JSON data; expected "
                             f"{expected} of strings, numbers, booleans, nulls, lists and mappings (in YAML, "
                             "quote a value to make it a string)")

    visit(value, "")
    while path:
        frame = path[-1]
        item = next(frame[2], None)
        if item is None:
            path.pop()
            on_path.discard(id(frame[0]))
            height[id(frame[0])], size[id(frame[0])] = frame[3] + 1, frame[4]
            if path:
                path[-1][3] = max(path[-1][3], frame[3] + 1)
                path[-1][4] += frame[4]
            continue
        key, child = item
        if isinstance(frame[0], dict):
            if isinstance(key, str):
                _check_string(key, where_of(f" key {show(key)}"), name, expected)
            else:
                raise BenchError(f"{name}: {where_of('') or 'the top level'}: key {show(key)} "
                                 f"({type(key).__name__}) is not a string; expected {expected} with string keys "
                                 "(in YAML, quote the key)")
            visit(child, where_of(_key(key)))
        else:
            visit(child, where_of(f"[{key}]"))


_IR_NOT_BRACKETS = re.compile(r'"[^"]*"|;[^\n]*|[^\[\](){}<>";]+|"|;')  # strings, comments, other text
_IR_OPENING = np.zeros(256, np.int8)
_IR_OPENING[[ord(c) for c in "([{<"]] = 1
_IR_OPENING[[ord(c) for c in ")]}>"]] = -1


def ir_nesting(text: str) -> int:
    """How deep the brackets of LLVM IR text ((), [], {}, <>) nest, outside strings and comments."""
    brackets = _IR_NOT_BRACKETS.sub("", text).encode("ascii")
    if not brackets:
        return 0
    return max(0, int(np.cumsum(_IR_OPENING[np.frombuffer(brackets, np.uint8)], dtype=np.int64).max()))
