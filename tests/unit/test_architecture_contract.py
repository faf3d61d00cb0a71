"""The import contract (pyproject.toml, checked by ``lint-imports`` in .ci/run) places every package of agentmate
in a layer: a new domain that is not listed would be free to import anything."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layered_modules() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return {
        n.strip().strip("()") for layer in layers["layers"] for n in re.split(r"[|:]", layer) if n.strip()
    }


def test_every_agentmate_package_is_in_a_layer():
    packages = {f"agentmate.{p.parent.name}" for p in (ROOT / "shared" / "agentmate").glob("*/__init__.py")}
    assert packages - _layered_modules() == set()


def test_the_layers_name_only_existing_packages_or_optional_ones():
    config = (ROOT / "pyproject.toml").read_text()
    for name in _layered_modules():
        path = ROOT / "shared" / Path(*name.split(".")) if name.startswith("agentmate") else ROOT / name
        assert path.is_dir() or f"({name})" in config, name


MAX_FUNCTION_LINES = 80  # docs/architecture.md: a function a reader can follow in one screen


def test_no_function_in_shared_is_longer_than_a_screen():
    import ast

    long = []
    for path in sorted((ROOT / "shared").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def _importer_exists(importer: str) -> bool:
    """``agentmate.knowledge.*.router`` → is there a shared/agentmate/knowledge/*/router.py (or package)?"""
    path = "/".join(importer.split("."))
    shared = ROOT / "shared"
    return any(shared.glob(f"{path}.py")) or any(shared.glob(f"{path}/__init__.py"))


def test_ignored_imports_name_modules_that_exist():
    """An ``ignore_imports`` line for a module that moved allows nothing and hides that its successor is not
    allowed (or is, by accident): each line's importer names an existing module, wildcards included."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    importers = [line.split("->")[0].strip() for line in layers["ignore_imports"]]
    assert [i for i in importers if not _importer_exists(i)] == []
    assert not _importer_exists("agentmate.skills.registry_router")  # the check can fail
