"""Every MCP tool has a REST twin requiring the same scope, and the names are the spec's (no server needed)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentmate
from agentmate.api.deps import route_scopes
from agentmate.mcp import registry
from functions.routes import ROUTE_GROUPS
from tests.contract.test_route_groups import _api_routes

from .spec_tools import SPEC_TOOLS

ROOT = Path(__file__).resolve().parents[2]


def rest_routes() -> dict[str, set[str]]:
    """``"METHOD /path"`` → required scopes, from every route group app and every domain router."""
    routes: list[Any] = []
    for module in ROUTE_GROUPS:
        routes += importlib.import_module(module).app.routes
    for info in pkgutil.walk_packages(agentmate.__path__, "agentmate."):
        if not info.name.rsplit(".", 1)[-1].endswith("router"):  # router.py, search_router.py, …
            continue
        router = getattr(importlib.import_module(info.name), "router", None)
        routes += getattr(router, "routes", [])
    table: dict[str, set[str]] = {}
    for path, route in _api_routes(routes):  # through included routers (a group of several routers)
        for method in route.methods:
            table[f"{method} {path}"] = set(route_scopes(route.dependant))
            # a scope that depends on a query value (GET /api/tags?module=todos needs todos:r)
            for extension, by_value in (route.openapi_extra or {}).items():
                if extension.startswith("x-required-scopes-by-"):
                    name = extension.removeprefix("x-required-scopes-by-")
                    for value, scopes in by_value.items():
                        table[f"{method} {path}?{name}={value}"] = set(scopes)
    return table


def test_every_tool_has_a_rest_twin_that_requires_the_same_scope():
    rest = rest_routes()
    for toolset in registry.load().values():
        for spec in toolset.specs:
            assert spec.rest in rest, f"{spec.name}: no REST route {spec.rest}"
            assert rest[spec.rest] == set(spec.scopes), (
                f"{spec.name} needs {spec.scopes}, {spec.rest} needs {rest[spec.rest]}"
            )


def test_registered_tools_include_the_spec_names_and_the_guide_lists_the_rest():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "agent-integration.md").read_text(
        encoding="utf-8"
    )
    for module, toolset in registry.load().items():
        names = {s.name for s in toolset.specs}
        assert set(SPEC_TOOLS[module]) <= names, module
        assert {n for n in names - set(SPEC_TOOLS[module]) if f"`{n}`" not in guide} == set(), module


def test_the_guides_endpoint_table_lists_every_tool_of_each_endpoint():
    guide = (Path(__file__).resolve().parents[2] / "docs" / "agent-integration.md").read_text(
        encoding="utf-8"
    )
    rows = {
        line.split("|")[1].strip(" `"): line for line in guide.splitlines() if line.startswith("| `/mcp/")
    }
    for module, toolset in registry.load().items():
        assert {s.name for s in toolset.specs if f"`{s.name}`" not in rows[f"/mcp/{module}"]} == set(), module


def test_read_tools_are_marked_read_only_and_writes_are_not():
    for toolset in registry.load().values():
        for spec in toolset.specs:
            assert spec.read_only == spec.scope.endswith(":r"), spec.name
            assert spec.rest.startswith("GET ") or spec.rest.startswith("POST ") or not spec.read_only, (
                spec.name
            )


def test_rest_lambdas_never_import_the_mcp_sdk():
    # Cold start: mcp costs ~0.8 s of imports; only the MCP container may load it.
    code = (
        "import sys; "
        + "; ".join(f"import {m}" for m in ROUTE_GROUPS)
        + "; bad = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'agentmate.mcp')));"
        " print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": f"{ROOT / 'shared'}:{ROOT}", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- null and omitted arguments: MCP update tools do what REST PATCH does (issue 10, item 6) ----------------------

CREATE = {  # REST create path → body, for each update tool's record
    "/api/todos": {"title": "t"},
    "/api/notes": {"title": "t"},
    "/api/reports": {"title": "t"},
    "/api/bookmarks": {"url": "https://example.com"},
    "/api/expenses": {"amount": "1.00", "currency": "EUR"},
    "/api/memory/working/sessions": {"title": "s"},
}
CLEARABLE_VALUE = {"due_date": "2026-12-01T10:00:00Z", "source": "label", "title": "titled"}


def _update_tools() -> list[registry.ToolSpec]:
    return [spec for ts in registry.load().values() for spec in ts.specs if spec.patch is not None]


def test_every_patch_route_has_an_update_tool_declaring_its_patch_model():
    patches = {r.split(" ", 1)[1] for r in rest_routes() if r.startswith("PATCH ")}
    declared = {spec.rest.split(" ", 1)[1] for spec in _update_tools()}
    # append is not a PATCH body of fields (it takes one required text); memory_update's PATCH takes two required
    # fields, not a PatchModel: test_memory_update_treats_null_and_omitted_arguments_as_its_patch_does covers it.
    assert patches - {"/api/notes/{note_id}/append", "/api/memory/entries/{entry_id}"} <= declared, (
        patches - declared
    )


@pytest.mark.anyio
async def test_update_tools_treat_null_and_omitted_arguments_as_rest_patch_does(base_url, account):
    import anyio

    from .conftest import mcp_session

    rest = account.client
    h = account.headers()
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            for spec in _update_tools():
                path = spec.rest.split(" ", 1)[1]
                base = path.rsplit("/", 1)[0]
                nullable = spec.patch.nullable  # type: ignore[union-attr]
                for field in (f for f in spec.patch.model_fields if f in spec.arguments):  # type: ignore[union-attr]
                    record = rest.post(base, json=CREATE[base], headers=h).json()
                    url = f"{base}/{record['id']}"
                    if field in nullable:
                        assert (
                            rest.patch(url, json={field: CLEARABLE_VALUE[field]}, headers=h).status_code
                            == 200
                        )
                        cleared = await s.call_tool(spec.name, {"id": record["id"], field: None})
                        assert not cleared.is_error, (spec.name, field, cleared.content)
                        assert cleared.structured_content[field] is None, (spec.name, field)
                        assert rest.get(url, headers=h).json()[field] is None
                    else:
                        refused = await s.call_tool(spec.name, {"id": record["id"], field: None})
                        assert refused.is_error and field in refused.content[0].text, (spec.name, field)
                        assert "may not be null" in refused.content[0].text
                        r = rest.patch(url, json={field: None}, headers=h)
                        assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == [field]
                    # omitted: an update of another field leaves this one as it is
                    before = rest.get(url, headers=h).json()[field]
                    other = next(
                        f
                        for f in ("title", "description", "status", "tags")
                        if f != field and f in spec.arguments
                    )
                    value = {"title": "other", "description": "other", "status": "archived", "tags": ["x"]}[
                        other
                    ]
                    if spec.name != "memory_working_session_update" and other == "status":
                        value = "done"
                    changed = await s.call_tool(spec.name, {"id": record["id"], other: value})
                    assert not changed.is_error, (spec.name, other, changed.content)
                    assert changed.structured_content[field] == before, (spec.name, field)


@pytest.mark.anyio
async def test_memory_update_treats_null_and_omitted_arguments_as_its_patch_does(base_url, account):
    """Both of memory_update's arguments are required, as the PATCH body's fields are: null or omitted is the same
    refusal naming the field over both transports, and the entry stays as it was."""
    import anyio

    from .conftest import mcp_session

    rest, h = account.client, account.headers()
    entry = rest.post(
        "/api/memory/entries",
        json={
            "memory_type": "semantic",
            "content": "parity",
            "evidence": [{"source_type": "test", "source_id": "t"}],
        },
        headers=h,
    ).json()
    url = f"/api/memory/entries/{entry['id']}"
    full = {"status": "archived", "reason": "no longer relevant"}
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            for field in full:
                for label, body in (
                    ("null", {**full, field: None}),
                    ("omitted", {k: v for k, v in full.items() if k != field}),
                ):
                    r = rest.patch(url, json=body, headers=h)
                    assert r.status_code == 400, (label, field, r.text)
                    assert [e["field"] for e in r.json()["errors"]] == [field], (label, r.text)
                    refused = await s.call_tool("memory_update", {"id": entry["id"], **body})
                    assert refused.is_error and f"{field}:" in refused.content[0].text, (
                        label,
                        refused.content,
                    )
    assert rest.get(url, headers=h).json()["status"] == "active"
