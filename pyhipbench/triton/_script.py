"""Whether a script's `__main__` can be imported again by a compile worker: definitions only at its top level.

A kernel defined in the script being run lives in `__main__`. A compile worker
imports that script under another name (as multiprocessing's spawn imports it
as `__mp_main__`, a name multiprocessing itself binds to the worker's own
`__main__`), so its `if __name__ == "__main__":` block does not run there,
and compiles the kernel from the same file, under the same Triton cache key. What the script
runs at its top level would run again in every worker, so only a script
whose top level defines (imports, functions and classes, constants and
Triton configs, the `__main__` block) is imported; any other statement is
named, and the kernels compile in the measuring process instead.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

__all__ = ["MAIN_ALIAS", "top_level_work"]

MAIN_ALIAS = "__pyhipbench_main__"  # the name a worker imports the script under: its __main__ block does not run
# Calls a definition may make at the top level: Triton's configs and constants, typing, dataclass fields.
_DEFINING_CALLS = {"Config", "constexpr", "cdiv", "next_power_of_2", "TypeVar", "namedtuple", "field",
                   "frozenset", "tuple", "list", "dict", "set", "range", "float", "int", "str", "bool"}


@functools.lru_cache(maxsize=8)  # asked once per config: the script is read once
def top_level_work(path: str) -> str | None:
    """The first statement of the script at `path` that does more than define (line and text), or why it
    cannot be read; None when its top level only defines."""
    try:
        tree = ast.parse(Path(path).read_bytes(), path)
    except (OSError, SyntaxError, ValueError) as e:
        return f"it cannot be read ({type(e).__name__}: {e})"
    for node in tree.body:
        if not _defines(node):
            text = ast.get_source_segment(Path(path).read_text(errors="replace"), node) or type(node).__name__
            return f"line {node.lineno} runs at import ({' '.join(text.split())[:60]})"
    return None


def _defines(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring
    if isinstance(node, ast.If):
        return _is_main_guard(node.test) and not node.orelse
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return all(_plain(d) for d in node.decorator_list) and \
            (not isinstance(node, ast.ClassDef) or all(_defines(n) or _is_assignment(n) for n in node.body))
    return _is_assignment(node)


def _is_assignment(node: ast.stmt) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True  # a method, in a class body
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    return isinstance(node, (ast.Assign, ast.AnnAssign)) and (value is None or _plain(value))


def _plain(expr: ast.expr) -> bool:
    """Names, attributes, constants and containers, and calls to the defining callables above, with no
    `device=` (a decorator opening a GPU)."""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Call):
            callee = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", None)
            if callee not in _DEFINING_CALLS and not _is_jit(sub.func):
                return False
            if any(k.arg == "device" for k in sub.keywords):
                return False
        elif isinstance(sub, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda)):
            return False
    return True


def _is_jit(func: ast.expr) -> bool:
    """triton.jit(...), triton.autotune(...), triton.heuristics(...): decorators that only wrap."""
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in ("jit", "autotune", "heuristics")


def _is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == "__main__" and isinstance(test.ops[0], ast.Eq)
