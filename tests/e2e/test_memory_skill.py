"""The official Agentmate Memory skill (integrations/skills/agentmate-memory) can never drift from the server:
it uses only the public Agent Skills keys, registers into our own registry as a local snapshot with a quality run
free of blockers and errors, and every tool, argument and allowed value it names is in the served MCP tool schemas
and /api/schema (the earlier skill recommended checkpoint keys the server rejected)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from agentmate.core.principal import Principal
from agentmate.mcp import registry
from agentmate.mcp.app import build_servers
from agentmate.mcp.context import acting_as
from agentmate.skills.compile import frontmatter

pytestmark = pytest.mark.anyio

SKILL_DIR = Path(__file__).resolve().parents[2] / "integrations" / "skills" / "agentmate-memory"
TOOL = re.compile(r"\b((?:memory|skill)_[a-z_]+)\b")
CALL = re.compile(r"`((?:memory|skill)_[a-z_]+)\(([^`]*)\)`")
KWARG = re.compile(r"(?:^|[(,]\s*)([a-z_]+)=")
ALLOWED = re.compile(r"`([a-z_]+)`: ((?:`[a-z_]+`(?: \| )?)+)")
FIELD = re.compile(r"`([a-z_]+)`")


def texts() -> dict[str, str]:
    return {
        str(p.relative_to(SKILL_DIR)): p.read_text(encoding="utf-8")
        for p in sorted(SKILL_DIR.rglob("*"))
        if p.is_file()
    }


def served_tools() -> dict[str, dict[str, Any]]:
    principal = Principal(
        account_id=uuid.uuid4(),
        user_id=uuid.uuid4(),
        via="api_key",
        key_id=uuid.uuid4(),
        scopes=("memory:rw", "skills:rw"),
    )

    async def listing() -> dict[str, dict[str, Any]]:
        with anyio.fail_after(10), acting_as(principal):
            async with Client(build_servers(registry.load())["/mcp"]) as client:
                return {t.name: t.input_schema for t in (await client.list_tools()).tools}

    return anyio.run(listing)


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    """Every property of a tool's input, including those of nested item models ($defs)."""
    props = dict(schema.get("properties", {}))
    for definition in schema.get("$defs", {}).values():
        props.update(definition.get("properties", {}))
    return props


def _enum(prop: dict[str, Any]) -> set[str]:
    values: set[str] = set(prop.get("enum", []))
    for option in prop.get("anyOf", []):
        values |= set(option.get("enum", []))
    return values


def test_frontmatter_uses_only_the_public_agent_skills_keys_and_names_the_folder():
    front = frontmatter.parse(texts()["SKILL.md"])
    assert frontmatter.public_only(front)
    assert front.name == SKILL_DIR.name
    assert front.description and len(front.description) <= frontmatter.MAX_DESCRIPTION


def test_every_tool_argument_and_allowed_value_the_skill_names_is_served():
    tools = served_tools()
    arguments = {a for schema in tools.values() for a in _properties(schema)}
    problems: list[str] = []
    for path, text in texts().items():
        for name in set(TOOL.findall(text)):
            if name not in tools and name not in arguments:  # memory_type is an argument, not a tool
                problems.append(f"{path}: names {name}, which is neither a served tool nor an argument")
        for name, args in CALL.findall(text):
            if name not in tools:
                continue
            props = _properties(tools[name])
            for arg in KWARG.findall(args):
                if arg not in props:
                    problems.append(f"{path}: {name} has no argument {arg!r} (has {sorted(props)})")
        for field, values in ALLOWED.findall(text):
            named = set(FIELD.findall(values))
            enums = [_enum(p) for t in tools.values() for f, p in _properties(t).items() if f == field]
            if not any(named <= e for e in enums if e):
                problems.append(
                    f"{path}: {field} values {sorted(named)} are not an allowed set of any tool "
                    f"({[sorted(e) for e in enums if e]})"
                )
    assert not problems, "\n".join(problems)


def test_the_allowed_values_match_api_schema(client):
    schema = client.get("/api/schema").json()
    flat = str(schema)
    for _path, text in texts().items():
        for field, values in ALLOWED.findall(text):
            for value in FIELD.findall(values):
                assert f"'{value}'" in flat, f"{field}={value} is not in /api/schema"
    # the checkpoint fields the skill teaches are exactly the ones the server accepts
    event_types = texts()["references/event-types.md"]
    assert "`goal` (required), `done`, `next`, `open` (lists of strings), `notes` and `label`" in event_types
    assert {"goal", "done", "next", "open", "notes", "label"} <= set(str(schema).split("'"))


def test_the_skill_registers_as_a_local_snapshot_and_its_quality_run_has_no_blocker_or_error(client, account):
    h = account.headers("skills:rw")
    r = client.post(
        "/api/skills/sources",
        json={
            "type": "local",
            "repository_url": "file:///agentmate",
            "package_path": "integrations/skills/agentmate-memory",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    files = [{"path": path, "content": text, "mime_type": "text/markdown"} for path, text in texts().items()]
    r = client.post(
        f"/api/skills/sources/{r.json()['id']}/snapshots", json={"files": files, "activate": True}, headers=h
    )
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["compile"]["status"] == "compiled" and out["version"]["skill_name"] == "agentmate-memory"
    run = client.post(f"/api/skills/versions/{out['version']['id']}/quality-runs", headers=h).json()
    failing = [
        c
        for c in run["report"]["lint"] + run["report"]["eval"]
        if c["applicable"] and not c["passed"] and c["severity"] in ("blocker", "error")
    ]
    assert failing == [], failing
    assert run["summary"]["blockers"] == 0 and run["summary"]["errors"] == 0
