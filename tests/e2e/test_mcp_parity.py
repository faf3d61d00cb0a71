"""Every MCP tool has a REST twin requiring the same scope, and the names are the spec's (no server needed)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import agentmate
from agentmate.api.deps import route_scopes
from agentmate.mcp import registry
from functions.routes import ROUTE_GROUPS

from .spec_tools import SPEC_TOOLS

ROOT = Path(__file__).resolve().parents[2]


def rest_routes() -> dict[str, set[str]]:
    """``"METHOD /path"`` → required scopes, from every route group app and every domain router."""
    from fastapi.routing import APIRoute

    routes: list[Any] = []
    for module in ROUTE_GROUPS:
        routes += importlib.import_module(module).app.routes
    for info in pkgutil.iter_modules(agentmate.__path__):
        try:
            router_module = importlib.import_module(f"agentmate.{info.name}.router")
        except ModuleNotFoundError:
            continue
        router = getattr(router_module, "router", None)
        routes += getattr(router, "routes", [])
    table: dict[str, set[str]] = {}
    for route in routes:
        if isinstance(route, APIRoute):
            for method in route.methods:
                table[f"{method} {route.path}"] = set(route_scopes(route.dependant))
    return table


def test_every_tool_has_a_rest_twin_that_requires_the_same_scope():
    rest = rest_routes()
    for toolset in registry.load().values():
        for spec in toolset.specs:
            assert spec.rest in rest, f"{spec.name}: no REST route {spec.rest}"
            assert rest[spec.rest] == {spec.scope}, f"{spec.name} needs {spec.scope}, {spec.rest} needs {rest[spec.rest]}"


def test_registered_tools_include_the_spec_names_and_the_guide_lists_the_rest():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "agent-integration.md").read_text(encoding="utf-8")
    for module, toolset in registry.load().items():
        names = {s.name for s in toolset.specs}
        assert set(SPEC_TOOLS[module]) <= names, module
        assert {n for n in names - set(SPEC_TOOLS[module]) if f"`{n}`" not in guide} == set(), module


def test_read_tools_are_marked_read_only_and_writes_are_not():
    for toolset in registry.load().values():
        for spec in toolset.specs:
            assert spec.read_only == spec.scope.endswith(":r"), spec.name
            assert spec.rest.startswith("GET ") or spec.rest.startswith("POST ") or not spec.read_only, spec.name


def test_rest_lambdas_never_import_the_mcp_sdk():
    # Cold start: mcp costs ~0.8 s of imports; only the MCP container may load it.
    code = ("import sys; " + "; ".join(f"import {m}" for m in ROUTE_GROUPS) +
            "; bad = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'agentmate.mcp')));"
            " print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": f"{ROOT / 'shared'}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
