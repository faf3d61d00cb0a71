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
