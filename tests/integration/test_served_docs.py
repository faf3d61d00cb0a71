"""A self-contained deployment: GET /api/guide serves the agent guide, GET /api/llms.txt indexes it, the OpenAPI
and the MCP endpoints; /api/schema gives the item shape of array fields and says which scopes grant nothing yet."""

from __future__ import annotations

import re
from pathlib import Path

from agentmate.core.mcp_modules import MCP_MODULES
from agentmate.system.service import GUIDE_FILE

ROOT = Path(__file__).resolve().parents[2]


def test_the_served_guide_is_the_repository_guide():
    # The copy is package data (it ships in the Lambda layer); `make guide` refreshes it.
    assert GUIDE_FILE.read_bytes() == (ROOT / "docs" / "agent-integration.md").read_bytes(), (
        "run `make guide`"
    )


def test_the_guide_is_served_as_markdown_without_a_key(client):
    r = client.get("/api/guide")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/markdown; charset=utf-8"
    assert r.text == (ROOT / "docs" / "agent-integration.md").read_text(encoding="utf-8")
    assert "### 3.7.1 After a crash: find your session again" in r.text


def test_llms_txt_lists_the_guide_the_openapi_and_every_mcp_endpoint(client):
    r = client.get("/api/llms.txt")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    # llms.txt: an H1 title, a blockquote summary, then H2 sections of "- [name](url): notes" links
    assert text.startswith("# Agentmate\n\n> ")
    links = dict(re.findall(r"^- \[([^\]]+)\]\(([^)]+)\)", text, flags=re.MULTILINE))
    base = "http://127.0.0.1:26001"
    assert links["Agent integration guide"] == f"{base}/api/guide"
    assert links["OpenAPI document"] == f"{base}/api/openapi.json"
    assert links["/mcp"] == f"{base}/mcp"
    for module in MCP_MODULES:
        assert links[f"/mcp/{module}"] == f"{base}/mcp/{module}"
    assert re.findall(r"^## (.+)$", text, flags=re.MULTILINE) == ["Docs", "MCP"]
    # every linked path answers
    for url in links.values():
        path = url.removeprefix(base)
        if path.startswith("/api/"):
            assert client.get(path).status_code == 200, path


def test_the_schema_gives_the_evidence_item_shape_and_calls_no_scope_unused(client):
    body = client.get("/api/schema").json()
    evidence = body["models"]["memory_entry"]["fields"]["evidence"]
    assert evidence["type"] == "array" and evidence["maxItems"] == 50
    assert evidence["items"]["required"] == ["source_type", "source_id"]
    assert set(evidence["items"]["fields"]) == {"source_type", "source_id", "excerpt", "metadata"}
    notes = {s["scope"]: s.get("note") for s in body["scopes"]}
    assert notes["knowledge:r"] is None and notes["knowledge:rw"] is None  # the knowledge registry uses them
    assert notes["memory:r"] is None
