"""The package's layout rules: no import cycles, a light `import pyhipbench`, vendor choices only in backends/."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pyhipbench"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(source: str, name: str, is_package: bool) -> set[str]:
    """The pyhipbench modules module `name` (its `source`) imports when it is imported: module level
    only, `if TYPE_CHECKING:` blocks left out (function-level imports run later, on first use)."""
    tree = ast.parse(source)
    package = name if is_package else name.rpartition(".")[0]
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
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                if base.startswith("pyhipbench"):
                    found.add(base)
                    found.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name.startswith("pyhipbench"))

    visit(tree.body)
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
