"""The package's layout rules: no import cycles, layers that import only downwards, a light `import pyhipbench`,
vendor choices only in backends/."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pyhipbench"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    """The pyhipbench modules (and the names taken from them) one import statement names, a relative one
    resolved against `package`."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name.startswith("pyhipbench")}
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(anchor + ([base] if base else []))
    if not base.startswith("pyhipbench"):
        return set()
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def _package(name: str, is_package: bool) -> str:
    return name if is_package else name.rpartition(".")[0]


def _runtime_imports(source: str, name: str, is_package: bool) -> set[str]:
    """The pyhipbench modules module `name` (its `source`) imports when it is imported: module level
    only, `if TYPE_CHECKING:` blocks left out (function-level imports run later, on first use)."""
    tree = ast.parse(source)
    package = _package(name, is_package)
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_imported(node, package))

    visit(tree.body)
    return found


_MODULE_NAME = re.compile(r"pyhipbench(\.\w+)+")


def _every_import(source: str, name: str, is_package: bool) -> set[str]:
    """The pyhipbench modules module `name` imports anywhere: at module level, in functions, for type
    checking, or by name (a string that is a module's full name, as importlib.import_module takes it)."""
    package = _package(name, is_package)
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(_imported(node, package))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_NAME.fullmatch(node.value):
            found.add(node.value)
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        imported = _runtime_imports(path.read_text(), name, path.name == "__init__.py")
        # A package's __init__ importing its own modules is how a package exports them, not a cycle.
        graph[name] = {m for m in imported if m in modules and m != name and not name.startswith(m + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(graph[module]):
            if state.get(dep) == "open":
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in state:
                walk(dep, path + [dep])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    return cycles


def test_no_module_imports_itself_through_others():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_rule_finds_a_cycle_and_skips_type_checking_imports():
    source = "from . import b\nif TYPE_CHECKING:\n    from .c import C\n"
    assert _runtime_imports(source, "pyhipbench.a", False) == {"pyhipbench", "pyhipbench.b"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# The layers, from the bottom. Measuring, and what it stands on: the shared modules, devices, launches, code
# objects, source kinds, code generation. Above it: results (reports, comparisons, plots) and tuning. On top,
# the front ends: pyhipbench.triton, pyhipbench.inductor, pyhipbench.helion, the sweep, and the command line over
# all of them.
_FRONT_ENDS = ("pyhipbench.triton", "pyhipbench._sweep", "pyhipbench.cli", "pyhipbench.inductor", "pyhipbench.helion")
_ABOVE_MEASURING = ("pyhipbench._results", "pyhipbench._tuning", *_FRONT_ENDS)
_MEASURING_AND_BELOW = ("pyhipbench.errors", "pyhipbench._values", "pyhipbench._textfile", "pyhipbench._frozen",
                        "pyhipbench._progress", "pyhipbench._cpp", "pyhipbench._device", "pyhipbench._launch",
                        "pyhipbench._codeobject", "pyhipbench._sources", "pyhipbench.codegen", "pyhipbench._compile",
                        "pyhipbench._measure")
# The front ends a front end may import: the command line runs the others.
_FRONT_END_MAY_IMPORT = {"pyhipbench.cli": ("pyhipbench.triton", "pyhipbench._sweep")}
# Imports across the layers the rules allow, (importer, imported): the source-kind registry imports Triton's
# kind, which lives with the Triton front end, by name on its first use (never at module level).
_ALLOWED = {("pyhipbench._sources.source", "pyhipbench.triton._source")}


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def _violations(importers: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    """"A imports B" for each module A in `importers` that imports a module B in `forbidden` anywhere."""
    wrong = set()
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        if _within(name, importers):
            for imported in _every_import(path.read_text(), name, path.name == "__init__.py"):
                if _within(imported, forbidden) and (name, imported) not in _ALLOWED:
                    wrong.add(f"{name} imports {imported}")
    return sorted(wrong)


def test_measuring_and_what_it_stands_on_import_nothing_above_them():
    """No results, tuning or front end, not even in a function: the data flows up from measuring."""
    wrong = _violations(_MEASURING_AND_BELOW, _ABOVE_MEASURING)
    assert not wrong, "an import from below measuring into a layer above it: " + "; ".join(wrong)


def test_results_and_tuning_import_no_front_end():
    wrong = _violations(("pyhipbench._results", "pyhipbench._tuning"), _FRONT_ENDS)
    assert not wrong, "results or tuning import a front end: " + "; ".join(wrong)


@pytest.mark.parametrize("front_end", _FRONT_ENDS)
def test_no_front_end_imports_another(front_end):
    others = tuple(f for f in _FRONT_ENDS if f != front_end and f not in _FRONT_END_MAY_IMPORT.get(front_end, ()))
    wrong = _violations((front_end,), others)
    assert not wrong, f"{front_end} imports another front end: " + "; ".join(wrong)


def test_the_layer_rules_see_imports_in_functions_for_types_and_by_name():
    source = ("from . import bench\n"
              "if TYPE_CHECKING:\n    from .._tuning.trial import Trial\n"
              "def report():\n    from .._results import plot\n"
              "KIND = {'triton': 'pyhipbench.triton._source'}\n")
    assert _every_import(source, "pyhipbench._measure.a", False) == {
        "pyhipbench._measure", "pyhipbench._measure.bench", "pyhipbench._tuning.trial", "pyhipbench._tuning.trial.Trial",
        "pyhipbench._results", "pyhipbench._results.plot", "pyhipbench.triton._source"}
    assert _within("pyhipbench._results.plot", _ABOVE_MEASURING) and not _within("pyhipbench._resultsx", _ABOVE_MEASURING)


def test_import_pyhipbench_loads_no_code_generator_triton_or_sweep():
    """The code generator (llvmlite), Triton and the sweep package (SQLite, the scheduler) load on first use."""
    code = ("import sys, pyhipbench\n"
            "heavy = ('llvmlite', 'triton', 'sqlite3', 'pyhipbench._sweep', 'pyhipbench.codegen', 'pyhipbench.cli')\n"
            "print(' '.join(m for m in heavy if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []


# What a vendor test looks like: a backend's name compared with a vendor's.
_VENDOR_TEST = ("== \"cuda\"", "== \"hip\"", "!= \"cuda\"", "!= \"hip\"", "\"cuda\" if ", "\"hip\" if ")


@pytest.mark.parametrize("path", sorted(p for p in PACKAGE.rglob("*.py") if "backends" not in p.parts),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_vendor_choices_live_in_the_backends(path):
    lines = [f"{path.name}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
             if any(test in line for test in _VENDOR_TEST) and "backend" in line]
    assert not lines, "a vendor test outside pyhipbench/_device/backends/: " + "; ".join(lines)


def test_the_architecture_map_names_every_file():
    """docs/architecture.md's map of the tree lists every source file of the package and the core."""
    root = PACKAGE.parent
    text = (root / "docs" / "architecture.md").read_text()
    files = [p for top in ("pyhipbench", "csrc") for p in (root / top).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".so", ".pyc")
             and p.name != "__init__.py" and p.relative_to(root).parts[1:2] not in (("include",), ("lib",), ("share",))]

    def named(path: Path) -> bool:  # a header and its source may share a line: "timer.hpp/.cpp"
        return path.name in text or (path.suffix == ".cpp" and f"{path.stem}.hpp/.cpp" in text)

    missing = sorted(str(p.relative_to(root)) for p in files if not named(p))
    assert not missing, "not in docs/architecture.md's map: " + ", ".join(missing)
