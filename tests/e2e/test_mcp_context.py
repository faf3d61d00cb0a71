"""/mcp/context over real HTTP (official SDK client): context_pack answers exactly what the REST twin answers,
with the same validation and the same per-layer authorisation."""

from __future__ import annotations

import json
import uuid

import anyio
import httpx
import pytest

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio


async def test_context_pack_matches_the_rest_twin_and_authorises_each_layer(base_url, account):
    h = account.headers("memory:rw", "notes:rw")
    async with httpx.AsyncClient(base_url=base_url, headers=h, timeout=30) as rest:
        r = await rest.post(
            "/api/memory/entries",
            json={
                "memory_type": "procedural",
                "content": "Run the migrations before switching traffic.",
                "evidence": [{"source_type": "test", "source_id": "t"}],
            },
        )
        assert r.status_code == 201, r.text
        assert (
            await rest.post("/api/notes", json={"title": "migrations", "content": "0042 is slow"})
        ).status_code == 201
        body = {
            "task": "switch traffic after migrations",
            "query": "migrations",
            "session_id": str(uuid.uuid4()),
            "max_chars": 900,
            "render": True,
        }
        twin = await rest.post("/api/context/pack", json=body)
        assert twin.status_code == 200, twin.text
        bad = await rest.post("/api/context/pack", json={"task": "x", "layers": ["nope"]})
    with anyio.fail_after(60):
        async with mcp_session(
            f"{base_url}/mcp/context", {"X-Api-Key": account.key("memory:rw", "notes:rw")}
        ) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            assert tools == {"context_pack"}
            packed = await call(s, "context_pack", **body)
            message = await refused(s, "context_pack", task="x", layers=["nope"])
            too_small = await refused(s, "context_pack", task="x", max_chars=10)
            misnamed = await refused(s, "context_pack", task="x", max_tokens=100)
            goal = await refused(s, "context_pack", task="x", goal="ship it")
            big = await refused(s, "context_pack", task="x", max_chars="big")
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key("todos:r")}) as s:
            scope_refusal = await refused(s, "context_pack", task="x")
    # Same service, same answer: REST and MCP return the same pack
    assert json.dumps(packed, sort_keys=True) == json.dumps(twin.json(), sort_keys=True)
    facts = next(layer for layer in packed["layers"] if layer["layer"] == "FACTS")
    assert [i["source"] for i in facts["items"]] == ["note"] and facts[
        "note"
    ] == "todos: insufficient scope: todos:r"
    # Same validation: the unknown layer is named with the allowed values
    assert bad.status_code == 400
    assert message.startswith(
        "Validation failed: layers[0]: must be one of the allowed values (allowed: SKILL, "
    )
    assert "max_chars: must be an integer 500..200000 (0 or omitted = 12000)" in too_small
    # issue 23 item 7: one error naming the field with the fix, over MCP as over REST
    assert "goal: unknown field (use task: the task is the TASK layer's goal)" in goal
    assert "max_chars: must be an integer 500..200000 (0 or omitted = 12000)" in big
    assert "max_tokens: unknown field (use max_chars: budgets are in characters, not tokens)" in misnamed
    assert scope_refusal.startswith("insufficient scope: context_pack requires memory:r")
