"""The page a package index shows (pyproject's `readme`): no link that breaks there, install lines that work from
the index, nothing the README does not say too; and classifiers from the trove list."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from codegen_helpers import require

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")

ROOT = Path(__file__).parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
README = (ROOT / "README.md").read_text()

# Where a Markdown page points: inline links and images, reference definitions, autolinks, HTML attributes.
LINK_TARGETS = [re.compile(r"\]\(\s*<?([^)\s>]+)"), re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$", re.M),
                re.compile(r"<([^<>\s]+:[^<>\s]*|[^<>\s]+\.(?:md|html))>"),
                re.compile(r"\b(?:href|src)\s*=\s*[\"']([^\"']+)")]
ABSOLUTE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # a URL with a scheme: the same wherever the page is shown


def index_page() -> str:
    return (ROOT / PROJECT["readme"]).read_text()


def relative_links(text: str) -> list[str]:
    """The link targets of Markdown `text` that are not absolute URLs (a file, a folder, an anchor)."""
    return [target for pattern in LINK_TARGETS for target in pattern.findall(text) if not ABSOLUTE.match(target)]


def pip_installs(text: str) -> list[list[str]]:
    """The words of every `pip install` command in `text` (code blocks and inline code alike)."""
    return [shlex.split(command) for command in re.findall(r"pip install ([^`\n#&]+)", text)]


def from_a_checkout(words: list[str]) -> bool:
    """Whether a `pip install` installs the project from a folder (`.`, `.[cuda]`, `-e .`), not from an index."""
    return any(w == "-e" or w.startswith((".", "/")) for w in words)


def test_the_index_page_is_not_the_readme_and_holds_no_relative_link():
    assert PROJECT["readme"] != "README.md"
    assert relative_links(index_page()) == []


def test_relative_links_are_found_in_the_readme():
    found = relative_links(README + "\n[x]: docs/api.md\n<a href=\"LICENSE\">l</a>\n")
    assert {"docs/amd.md", "CONTRIBUTING.md", "LICENSE", "docs/api.md#bench_chain"} <= set(found)
    assert relative_links("[site](https://example.org/docs) <https://example.org>") == []


def test_the_index_page_installs_from_the_index():
    installs = pip_installs(index_page())
    assert ["pyhipbench[cuda]"] in installs and ["pyhipbench", "hip-python==7.2.2.562.43"] in installs
    assert [words for words in installs if from_a_checkout(words)] == []


def test_the_readme_installs_from_an_index_and_from_a_checkout():
    install = README[README.index("## Install\n"):README.index("\nhip-python must be")]
    installs = pip_installs(install)
    assert ["pyhipbench[cuda]"] in installs and ["pyhipbench", "hip-python==7.2.2.562.43"] in installs
    assert [".[cuda]"] in installs and [".", "hip-python==7.2.2.562.43"] in installs
    assert from_a_checkout([".[cuda]"]) and from_a_checkout(["-e", "."])


def test_the_index_page_says_what_the_readme_says():
    """Its description, tables and code are the README's, its install lines aside: the two cannot drift."""
    page = index_page()
    assert page[:page.index("## Install\n")] == README[:README.index("## Install\n")]
    rows = [line for line in page.splitlines() if line.startswith("|")]
    assert len(rows) > 10 and set(rows) <= set(README.splitlines())
    blocks = re.findall(r"^```\w*\n.*?^```\n", page, re.S | re.M)
    assert len([b for b in blocks if "pip install" not in b]) >= 2
    assert all(block in README for block in blocks if "pip install" not in block)


def test_the_classifiers_are_from_the_trove_list_and_name_both_vendors():
    try:
        from trove_classifiers import classifiers
    except ImportError:
        require("trove-classifiers", "the list of classifiers a package index accepts")
    assert [c for c in PROJECT["classifiers"] if c not in classifiers] == []
    assert {"Environment :: GPU", "Environment :: GPU :: NVIDIA CUDA"} <= set(PROJECT["classifiers"])
    # The list has no ROCm or AMD classifier yet: one added to it is named here too.
    assert {c for c in classifiers if re.search(r"ROCm|AMD", c)} <= set(PROJECT["classifiers"])
