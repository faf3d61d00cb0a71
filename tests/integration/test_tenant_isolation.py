"""Two tenants, every domain: one account can never read, change or delete the other's rows — through the API
(404, row unchanged, never listed or found) and in Postgres itself (row-level security under the application
role, whatever the SQL)."""

from __future__ import annotations

import importlib
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg import sql

from functions.routes import ROUTE_GROUPS

HTTP_METHODS = ("get", "put", "post", "delete", "patch")


# --- API level ----------------------------------------------------------------------------------------------


@dataclass
class Probe:
    """One request by the attacker. ``path``/``body``/``params`` are templates formatted with ``v`` (the victim's
    seeded ids) and ``own`` (the attacker's own ids)."""

    method: str
    path: str
    body: Any = None
    params: dict[str, Any] | None = None
    statuses: tuple[int, ...] = (404,)  # for reads and writes
    own_visible: bool | str = (
        False  # for listings: the attacker's own row (or own[<this key>]) must be listed
    )
    check: Callable[[Any], bool] | None = None  # extra assertion on a listing's JSON

    def render(self, v: dict[str, Any], own: dict[str, Any]) -> tuple[str, Any, dict[str, Any] | None]:
        def fmt(value: Any) -> Any:
            if isinstance(value, str):
                return value.format(v=_Attr(v), own=_Attr(own))
            if isinstance(value, dict):
                return {k: fmt(x) for k, x in value.items()}
            if isinstance(value, list):
                return [fmt(x) for x in value]
            return value

        return fmt(self.path), fmt(self.body), fmt(self.params)


class _Attr(dict):
    def __getattr__(self, name: str) -> Any:
        return self[name]


@dataclass
class Domain:
    name: str
    prefix: str  # the domain is tested when a route group serves this prefix
    scope: str | tuple[str, ...]  # the scopes of the seeding and attacking keys
    seed: Callable[[Any, dict[str, str], str, str], dict[str, Any]]  # (client, headers, marker, secret) → ids
    rows: Callable[[dict[str, Any]], list[tuple[str, tuple[Any, ...]]]]  # SQL snapshots of the seeded rows
    reads: list[Probe] = field(default_factory=list)
    writes: list[Probe] = field(default_factory=list)
    listings: list[Probe] = field(default_factory=list)
    owner_read: str = ""  # a GET the victim uses afterwards to prove its row still works

    def headers(self, acct: Any) -> dict[str, str]:
        return acct.headers(*((self.scope,) if isinstance(self.scope, str) else self.scope))


def _ok(r, *statuses: int) -> Any:
    assert r.status_code in (statuses or (200, 201)), (
        f"{r.request.method} {r.request.url}: {r.status_code} {r.text}"
    )
    return r.json() if r.content else None


def _row(table: str, column: str = "id") -> Callable[[dict[str, Any]], list[tuple[str, tuple[Any, ...]]]]:
    return lambda v: [(f"SELECT to_jsonb(t) FROM {table} t WHERE {column} = %s ORDER BY 1::text", (v["id"],))]


def seed_todos(client, h, marker, secret):
    return {
        "id": _ok(
            client.post(
                "/api/todos",
                json={"title": f"{marker} todo", "description": secret, "tags": [marker]},
                headers=h,
            )
        )["id"]
    }


def seed_notes(client, h, marker, secret):
    return {
        "id": _ok(
            client.post(
                "/api/notes",
                json={"title": f"{marker} note", "content": f"{marker} {secret}", "tags": [marker]},
                headers=h,
            )
        )["id"]
    }


def seed_reports(client, h, marker, secret):
    return {
        "id": _ok(
            client.post(
                "/api/reports",
                json={"title": f"{marker} report", "content": secret, "tags": [marker], "source": secret},
                headers=h,
            )
        )["id"]
    }


def seed_bookmarks(client, h, marker, secret):
    body = {
        "url": f"https://example.com/{marker}/{secret}",
        "title": f"{marker} bookmark",
        "summary": secret,
        "content": secret,
        "tags": [marker],
        "source": secret,
    }
    return {"id": _ok(client.post("/api/bookmarks", json=body, headers=h))["id"]}


def seed_expenses(client, h, marker, secret):
    body = {
        "amount": "12.50",
        "currency": "EUR",
        "description": f"{marker} {secret}",
        "tags": [marker, secret],
        "source": secret,
    }
    return {"id": _ok(client.post("/api/expenses", json=body, headers=h))["id"]}


def seed_memory(client, h, marker, secret):
    event = _ok(
        client.post(
            "/api/memory/events",
            json={
                "event_type": "observation",
                "idempotency_key": f"ev-{marker}",
                "payload": {"text": f"{marker} {secret}"},
                "session_id": f"session-{marker}",
            },
            headers=h,
        )
    )
    entry = _ok(
        client.post(
            "/api/memory/entries",
            json={
                "memory_type": "semantic",
                "title": f"{marker} memory",
                "content": f"{marker} {secret}",
                "source_event_id": event["id"],
                "evidence": [{"source_type": "note", "source_id": secret}],
            },
            headers=h,
        )
    )
    other = _ok(
        client.post(
            "/api/memory/entries",
            json={
                "memory_type": "semantic",
                "content": f"{marker} second {secret}",
                "evidence": [{"source_type": "note", "source_id": secret}],
            },
            headers=h,
        )
    )
    _ok(
        client.post(
            "/api/memory/entries/{}/feedback".format(entry["id"]),
            json={"signal": "useful", "session_id": f"session-{marker}"},
            headers=h,
        )
    )
    _ok(
        client.post(
            "/api/memory/checkpoints",
            json={"session_id": f"session-{marker}", "goal": f"{marker} {secret}"},
            headers=h,
        )
    )
    return {
        "id": entry["id"],
        "other_id": other["id"],
        "event_id": event["id"],
        "session": f"session-{marker}",
    }


def rows_memory(v):
    return [
        (
            "SELECT to_jsonb(t) FROM memory_entries t WHERE id = ANY(%s) ORDER BY 1::text",
            ([v["id"], v["other_id"]],),
        ),
        ("SELECT to_jsonb(t) FROM memory_events t WHERE id = %s", (v["event_id"],)),
        ("SELECT to_jsonb(t) FROM memory_feedback t WHERE memory_id = %s ORDER BY 1::text", (v["id"],)),
        ("SELECT to_jsonb(t) FROM memory_evidence t WHERE memory_id = %s ORDER BY 1::text", (v["id"],)),
    ]


def seed_working(client, h, marker, secret):
    session = _ok(
        client.post(
            "/api/memory/working/sessions",
            json={"title": f"{marker} {secret}", "agent": f"agent-{marker}"},
            headers=h,
        )
    )
    _ok(
        client.post(
            f"/api/memory/working/sessions/{session['id']}/items",
            json={
                "items": [
                    {"item_type": "message", "role": "user", "content": secret, "idempotency_key": "i1"},
                    {"item_type": "draft", "content": secret, "idempotency_key": "i2"},
                ]
            },
            headers=h,
        )
    )
    return {"id": session["id"], "agent": f"agent-{marker}", "seq": 1}


def rows_working(v):
    return [
        ("SELECT to_jsonb(t) FROM working_sessions t WHERE id = %s", (v["id"],)),
        ("SELECT to_jsonb(t) FROM working_items t WHERE session_id = %s ORDER BY 1::text", (v["id"],)),
    ]


def seed_context(client, h, marker, secret):
    """What the context pack reads with memory scopes: memories, a journal with a checkpoint, a working session."""
    memory = seed_memory(client, h, marker, secret)
    working = seed_working(client, h, marker, secret)
    return {
        "id": memory["id"],
        "other_id": memory["other_id"],
        "working_id": working["id"],
        "session": memory["session"],
    }


def _pack_is_empty(doc: Any) -> bool:
    """The victim's session is no session of the caller's: no working items, TASK has only the goal (the
    caller's own memories may match the query; the victim's ids and secret are checked not to appear)."""
    items = {layer["layer"]: layer["items"] for layer in doc["layers"]}
    return not items.get("WORKING") and [i["source"] for i in items["TASK"]] == ["task"]


def seed_skills(client, h, marker, secret):
    version = _ok(
        client.post(
            "/api/skills/versions",
            json={
                "skill_name": f"skill-{marker}",
                "version": "1.0.0",
                "content": f"# {marker}\n{secret}\n",
                "activate": True,
            },
            headers=h,
        )
    )
    log = _ok(
        client.post(
            "/api/skills/logs",
            json={
                "skill_name": f"skill-{marker}",
                "skill_version_id": version["id"],
                "outcome": "failure",
                "failure_reason": secret,
                "trigger_text": secret,
            },
            headers=h,
        )
    )
    # The registry: a local source, a pushed package (activated, indexed) and a quality run
    source = _ok(
        client.post(
            "/api/skills/sources",
            json={
                "name": f"src-{marker}",
                "type": "local",
                "repository_url": "file:///skills",
                "package_path": f"pkg-{marker}",
            },
            headers=h,
        )
    )
    skill_md = (
        f"---\nname: pkg-{marker}\ndescription: {marker} skill\ntriggers: [{marker} task]\n---\n"
        f"# {marker}\n{secret}\n"
    )
    pushed = _ok(
        client.post(
            f"/api/skills/sources/{source['id']}/snapshots",
            json={
                "files": [
                    {"path": "SKILL.md", "content": skill_md},
                    {"path": "references/notes.md", "content": f"{marker} {secret}"},
                ],
                "activate": True,
                "index": True,
            },
            headers=h,
        )
    )
    pkg_version = pushed["version"]["id"]
    file_id = _ok(client.get(f"/api/skills/versions/{pkg_version}/resources", headers=h))["items"][0][
        "file_id"
    ]
    run = _ok(client.post(f"/api/skills/versions/{pkg_version}/quality-runs", json={}, headers=h))
    return {
        "id": version["id"],
        "log_id": log["id"],
        "skill": f"skill-{marker}",
        "source_id": source["id"],
        "pkg_version_id": pkg_version,
        "file_id": file_id,
        "run_id": run["id"],
        "pkg_skill": f"pkg-{marker}",
    }


def rows_skills(v):
    return [
        (
            "SELECT to_jsonb(t) FROM skill_versions t WHERE id = ANY(%s) ORDER BY 1::text",
            ([v["id"], v["pkg_version_id"]],),
        ),
        ("SELECT to_jsonb(t) FROM skill_logs t WHERE id = %s", (v["log_id"],)),
        ("SELECT to_jsonb(t) FROM skill_sources t WHERE id = %s", (v["source_id"],)),
        ("SELECT to_jsonb(t) FROM skill_source_revisions t WHERE source_id = %s", (v["source_id"],)),
        ("SELECT to_jsonb(t) FROM skill_revision_files t WHERE id = %s", (v["file_id"],)),
        (
            "SELECT to_jsonb(t) FROM skill_compiled_artifacts t WHERE skill_version_id = %s",
            (v["pkg_version_id"],),
        ),
        ("SELECT to_jsonb(t) FROM skill_quality_runs t WHERE id = %s", (v["run_id"],)),
    ]


def seed_knowledge(client, h, marker, secret):
    # A local source (domain kb<marker>) with a pushed package: KNOWLEDGE.yaml, a text and a binary document
    source = _ok(
        client.post(
            "/api/knowledge/sources",
            json={"type": "local", "repository_url": "file:///kb", "package_path": f"kb{marker}/faq"},
            headers=h,
        )
    )
    manifest = f"name: {marker} faq\ndescription: {secret}\ncapabilities: [{marker}]\n"
    pushed = _ok(
        client.post(
            f"/api/knowledge/sources/{source['id']}/snapshots",
            json={
                "files": [
                    {"path": "KNOWLEDGE.yaml", "content": manifest},
                    {"path": "docs/a.md", "content": f"# {marker}\n{secret}\n"},
                    {"path": "docs/logo.png", "content_base64": "iVBORw0KGgo="},
                ]
            },
            headers=h,
        )
    )
    revision = pushed["revision"]["id"]
    docs = _ok(client.get(f"/api/knowledge/revisions/{revision}/documents", headers=h))["items"]
    indexed = _ok(client.post("/api/knowledge/index", json={"source_id": source["id"]}, headers=h))
    assert indexed["items"][0]["chunks"] == 1
    git = _ok(
        client.post(
            "/api/knowledge/sources",
            json={
                "type": "git",
                "package_path": f"kb{marker}/git",
                "repository_url": "https://github.com/acme/kb",
            },
            headers=h,
        )
    )
    return {
        "id": source["id"],
        "revision_id": revision,
        "document_id": docs[0]["id"],
        "git_source_id": git["id"],
        "domain": f"kb{marker}",
    }


def rows_knowledge(v):
    return [
        (
            "SELECT to_jsonb(t) FROM knowledge_sources t WHERE id = ANY(%s) ORDER BY 1::text",
            ([v["id"], v["git_source_id"]],),
        ),
        ("SELECT to_jsonb(t) FROM knowledge_source_revisions t WHERE source_id = %s", (v["id"],)),
        (
            "SELECT to_jsonb(t) FROM knowledge_documents t WHERE revision_id = %s ORDER BY 1::text",
            (v["revision_id"],),
        ),
        ("SELECT to_jsonb(t) FROM knowledge_chunks t WHERE source_id = %s ORDER BY 1::text", (v["id"],)),
    ]


def seed_jobs(client, h, marker, secret):
    # No route enqueues a generic job: the account's jobs are enqueued the way a domain does (agentmate.jobs)
    import os

    from agentmate import jobs
    from agentmate.core.db import Database

    account_id = uuid.UUID(_ok(client.get("/api/auth/me", headers=h))["account_id"])
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    try:
        with db.tenant(account_id) as conn:
            job = jobs.enqueue(conn, account_id=account_id, kind=f"iso_{marker}", payload={"secret": secret})
    finally:
        db.close()
    return {"id": str(job.id), "kind": job.kind}


def seed_knowledge_quality(client, h, marker, secret):
    # A source with an active wiki build (written straight into the wiki's tables), a lint run, a reported
    # signal carrying the secret, a logged wiki search and a (skipped) review of the build
    from agentmate.core.db import get_database
    from agentmate.knowledge.quality import review_service
    from agentmate.llm.settings import ModelSettings as Settings
    from agentmate.retrieval.service import record_query
    from tests.integration.knowledge_quality.wikibuilds import Actor, PageSpec, make_build

    me = _ok(client.get("/api/auth/me", headers=h))
    actor = Actor(uuid.UUID(me["account_id"]), uuid.UUID(me["user_id"]))
    source = _ok(
        client.post(
            "/api/knowledge/sources",
            json={"type": "local", "repository_url": "file:///kb", "package_path": f"kq{marker}/wiki"},
            headers=h,
        )
    )
    pushed = _ok(
        client.post(
            f"/api/knowledge/sources/{source['id']}/snapshots",
            json={
                "files": [
                    {"path": "KNOWLEDGE.yaml", "content": f"name: {marker} wiki\n"},
                    {"path": "docs/a.md", "content": f"# {marker}\n{secret}\n"},
                ]
            },
            headers=h,
        )
    )
    build = make_build(
        actor,
        uuid.UUID(source["id"]),
        uuid.UUID(pushed["revision"]["id"]),
        [PageSpec("wiki/a.md", "summary", f"# {marker}\n", cites=["docs/a.md"])],
    )
    run = _ok(client.post("/api/knowledge/wiki/lint", json={"source_id": source["id"]}, headers=h))
    with get_database().tenant(actor.account_id) as conn:
        query_id = record_query(
            conn,
            actor.account_id,
            user_id=None,
            key_id=None,
            namespace="knowledge_wiki",
            query=f"{marker} question",
            filters={},
            top_k=5,
            hits=[],
            degraded=[],
        )
        review_service.enqueue_after_activation(
            conn,
            account_id=actor.account_id,
            build_id=build,
            settings=Settings(reviewer_base_url="", embedding_base_url=""),
        )
    signal = _ok(
        client.post(
            "/api/knowledge/validation/signals",
            json={
                "source_id": source["id"],
                "signal": "question_repeated",
                "query_id": str(query_id),
                "page_path": "wiki/a.md",
                "detail": secret,
                "idempotency_key": f"k-{marker}",
            },
            headers=h,
        )
    )
    return {
        "id": source["id"],
        "build_id": str(build),
        "run_id": run["run"]["id"],
        "signal_id": signal["id"],
        "query_id": str(query_id),
        "marker": marker,
    }


def rows_knowledge_quality(v):
    return [
        ("SELECT to_jsonb(t) FROM knowledge_lint_runs t WHERE id = %s", (v["run_id"],)),
        (
            "SELECT to_jsonb(t) FROM knowledge_lint_findings t WHERE run_id = %s ORDER BY 1::text",
            (v["run_id"],),
        ),
        ("SELECT to_jsonb(t) FROM knowledge_validation_signals t WHERE id = %s", (v["signal_id"],)),
        ("SELECT to_jsonb(t) FROM knowledge_build_reviews t WHERE build_id = %s", (v["build_id"],)),
        ("SELECT to_jsonb(t) - 'review_status' FROM knowledge_builds t WHERE id = %s", (v["build_id"],)),
    ]


def seed_wiki(client, h, marker, secret):
    # A source compiled into a succeeded build: enqueued through the service, compiled against the fake provider
    from agentmate.packages.service import Actor
    from tests.fakes.chat_provider import FakeChatProvider
    from tests.integration.wiki.corpus import compile_now

    me = _ok(client.get("/api/auth/me", headers=h))
    actor = Actor(uuid.UUID(me["account_id"]), uuid.UUID(me["user_id"]))
    source = _ok(
        client.post(
            "/api/knowledge/sources",
            json={"type": "local", "repository_url": "file:///kb", "package_path": f"wiki{marker}/kb"},
            headers=h,
        )
    )
    _ok(
        client.post(
            f"/api/knowledge/sources/{source['id']}/snapshots",
            json={
                "files": [
                    {"path": "KNOWLEDGE.yaml", "content": f"name: {marker}\n"},
                    {"path": "docs/a.md", "content": f"# {marker}\n\n{secret}\n"},
                ]
            },
            headers=h,
        )
    )
    with FakeChatProvider() as fake:
        build = compile_now(actor, fake, uuid.UUID(source["id"]))
    return {"id": str(build.id), "source_id": source["id"], "page_path": "wiki/docs-a.md"}


def rows_wiki(v):
    return [
        ("SELECT to_jsonb(t) FROM knowledge_builds t WHERE id = %s", (v["id"],)),
        ("SELECT to_jsonb(t) FROM knowledge_pages t WHERE build_id = %s ORDER BY 1::text", (v["id"],)),
        ("SELECT active_build_id FROM knowledge_sources WHERE id = %s", (v["source_id"],)),
    ]


TAGGED = {  # the record modules of the tag roster → a create body (its tags added by seed_tags)
    "todos": {"title": "tagged"},
    "notes": {"title": "tagged"},
    "reports": {"title": "tagged"},
    "bookmarks": {"url": "https://example.com/tagged"},
    "expenses": {"amount": "1.00", "currency": "EUR"},
}


def seed_tags(client, h, marker, secret):
    """One record in each record module tagged with the marker and the secret: the secret tag must never be
    counted in another account's roster (``tag`` is the caller's own, which its roster must list)."""
    ids = {
        f"{module[:-1]}_id": _ok(
            client.post(f"/api/{module}", json={**body, "tags": [marker, secret]}, headers=h)
        )["id"]
        for module, body in TAGGED.items()
    }
    return {**ids, "tag": secret}


def _tagged_rows(v: dict[str, Any]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(f"SELECT to_jsonb(t) FROM {m} t WHERE id = %s", (v[f"{m[:-1]}_id"],)) for m in TAGGED]


def seed_apikeys(client, h, marker, secret):
    return {
        "id": _ok(
            client.post(
                "/api/auth/apikeys", json={"name": f"{marker} {secret}", "scopes": ["manage_keys"]}, headers=h
            )
        )["id"]
    }


def seed_transfers(client, h, marker, secret):
    """An account export (queued) and an import awaiting its upload (issue 25 §4)."""
    return {
        "id": _ok(client.post("/api/account/exports", headers=h), 202)["id"],
        "import_id": _ok(client.post("/api/account/imports", headers=h), 201)["id"],
    }


def seed_grants(client, h, marker, secret):
    """An OAuth grant of the account's user (issued by the service, as the token endpoint does)."""
    from uuid import UUID

    from agentmate.auth.oauth import service
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.core.db import get_database

    me = _ok(client.get("/api/auth/me", headers=h))
    db = get_database()
    service.issue_grant(
        db,
        get_oauth_settings(),
        account_id=UUID(me["account_id"]),
        user_id=UUID(me["user_id"]),
        client_id=f"https://{marker}.example/client.json",
        client_name=f"{marker} {secret}",
        client_uri=None,
        scopes=["todos:r"],
        resource="http://127.0.0.1:26001/api",
    )
    page = _ok(client.get("/api/auth/grants", headers=h))
    return {"id": next(g["id"] for g in page["items"] if g["client_name"] == f"{marker} {secret}")}


def seed_resolutions(client, h, marker, secret):
    """K4: a knowledge package, a skill whose contract matches it, a discovery and a recorded run (one key
    holds every scope these need)."""
    from types import SimpleNamespace

    from tests.integration.knowledge.k4 import knowledge_base, requirement, skill_version

    acct = SimpleNamespace(client=client, headers=lambda *_: h)
    kb = knowledge_base(
        acct,
        f"kb/{marker}",
        f"name: {marker}\ncapabilities: [{marker}]\n",
        {"docs/a.md": f"# {marker}\n{secret}\n"},
    )
    vid = skill_version(client, acct, {"requirements": [requirement(match={"capabilities": [marker]})]})
    found = _ok(client.post("/api/knowledge/discover", json={"skill_version_id": vid}, headers=h))
    run = _ok(
        client.post(
            "/api/knowledge/resolutions",
            json={
                "skill_version_id": vid,
                "requirement_id": "billing-docs",
                "session_id": marker,
                "discovery_fingerprint": found["discovery_fingerprint"],
                "discovery_status": "matched",
                "selected": [{"source_id": kb["source_id"]}],
                "selection_reason": secret,
            },
            headers=h,
        )
    )
    return {
        "id": run["id"],
        "source_id": kb["source_id"],
        "revision_id": kb["revision_id"],
        "version_id": vid,
    }


def rows_resolutions(v):
    return [
        ("SELECT to_jsonb(t) FROM knowledge_resolution_runs t WHERE id = %s", (v["id"],)),
        ("SELECT to_jsonb(t) FROM knowledge_resolution_selections t WHERE run_id = %s", (v["id"],)),
    ]


def _summary_is_empty(doc: Any) -> bool:
    return doc["count"] == 0 and doc["currencies"] == []


DOMAINS: list[Domain] = [
    Domain(
        "todos",
        "/api/todos",
        "todos:rw",
        seed_todos,
        _row("todos"),
        reads=[Probe("GET", "/api/todos/{v.id}")],
        writes=[
            Probe("PATCH", "/api/todos/{v.id}", {"title": "pwned", "status": "done"}),
            Probe("DELETE", "/api/todos/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/todos", own_visible=True),
            Probe("GET", "/api/todos", params={"q": "{v.marker}"}),
            Probe("GET", "/api/todos", params={"tag": "{v.marker}"}),
            Probe("GET", "/api/todos/search", params={"q": "{v.marker}"}),
        ],
        owner_read="/api/todos/{v.id}",
    ),
    Domain(
        "notes",
        "/api/notes",
        "notes:rw",
        seed_notes,
        _row("notes"),
        reads=[Probe("GET", "/api/notes/{v.id}")],
        writes=[
            Probe("PATCH", "/api/notes/{v.id}", {"title": "pwned"}),
            Probe("PATCH", "/api/notes/{v.id}/append", {"content": "pwned"}),
            Probe("DELETE", "/api/notes/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/notes", own_visible=True),
            Probe("GET", "/api/notes", params={"q": "{v.marker}"}),
            Probe("GET", "/api/notes", params={"tag": "{v.marker}"}),
            Probe("GET", "/api/notes/search", params={"q": "{v.marker}"}),
        ],
        owner_read="/api/notes/{v.id}",
    ),
    Domain(
        "reports",
        "/api/reports",
        "reports:rw",
        seed_reports,
        _row("reports"),
        reads=[Probe("GET", "/api/reports/{v.id}")],
        writes=[
            Probe("PATCH", "/api/reports/{v.id}", {"title": "pwned"}),
            Probe("DELETE", "/api/reports/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/reports", own_visible=True),
            Probe("GET", "/api/reports", params={"q": "{v.marker}"}),
            Probe("GET", "/api/reports", params={"tag": "{v.marker}"}),
            Probe("GET", "/api/reports/sources", check=lambda d: [s["source"] for s in d["items"]] != []),
        ],
        owner_read="/api/reports/{v.id}",
    ),
    Domain(
        "bookmarks",
        "/api/bookmarks",
        "bookmarks:rw",
        seed_bookmarks,
        _row("bookmarks"),
        reads=[Probe("GET", "/api/bookmarks/{v.id}")],
        writes=[
            Probe("PATCH", "/api/bookmarks/{v.id}", {"title": "pwned", "is_read": True}),
            Probe("DELETE", "/api/bookmarks/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/bookmarks", own_visible=True),
            Probe("GET", "/api/bookmarks", params={"q": "{v.marker}"}),
            Probe("GET", "/api/bookmarks", params={"tag": "{v.marker}"}),
        ],
        owner_read="/api/bookmarks/{v.id}",
    ),
    Domain(
        "expenses",
        "/api/expenses",
        "expenses:rw",
        seed_expenses,
        _row("expenses"),
        reads=[Probe("GET", "/api/expenses/{v.id}")],
        writes=[
            Probe("PATCH", "/api/expenses/{v.id}", {"description": "pwned", "amount": "0.01"}),
            Probe("DELETE", "/api/expenses/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/expenses", own_visible=True),
            Probe("GET", "/api/expenses", params={"q": "{v.marker}"}),
            Probe("GET", "/api/expenses", params={"tag": "{v.marker}"}),
            Probe("GET", "/api/expenses/summary", params={"q": "{v.marker}"}, check=_summary_is_empty),
            Probe("GET", "/api/expenses/summary", check=lambda d: d["count"] == 1),
        ],
        owner_read="/api/expenses/{v.id}",
    ),
    Domain(
        "memory",
        "/api/memory",
        "memory:rw",
        seed_memory,
        rows_memory,
        reads=[
            Probe("GET", "/api/memory/entries/{v.id}"),
            Probe("GET", "/api/memory/entries/{v.id}/feedback"),
            Probe("GET", "/api/memory/entries/{v.id}/attribution"),
            Probe("GET", "/api/memory/events/{v.event_id}"),
        ],
        writes=[
            Probe("POST", "/api/memory/entries/{v.id}/feedback", {"signal": "harmful", "session_id": "x"}),
            Probe("POST", "/api/memory/entries/{v.id}/supersede", {"superseded_id": "{own.id}"}),
            Probe("POST", "/api/memory/entries/{v.other_id}/supersede", {"superseded_id": "{v.id}"}),
            # references to the victim's ids in a body are refused too (and change nothing)
            Probe(
                "POST",
                "/api/memory/entries/{own.id}/supersede",
                {"superseded_id": "{v.id}"},
                statuses=(400, 404),
            ),
            Probe(
                "POST",
                "/api/memory/entries",
                {"memory_type": "semantic", "content": "pwned", "source_event_id": "{v.event_id}"},
                statuses=(400, 404),
            ),
            Probe("PATCH", "/api/memory/entries/{v.id}", {"status": "invalidated", "reason": "pwned"}),
            Probe("DELETE", "/api/memory/entries/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/memory/entries", own_visible=True),
            Probe("GET", "/api/memory/events", own_visible="event_id"),
            Probe("GET", "/api/memory/scopes"),
            Probe("POST", "/api/memory/search", {"query": "{v.marker}"}),
            Probe("POST", "/api/memory/search", {"query": "{v.marker} memory", "status": "active"}),
            Probe("GET", "/api/memory/timeline", params={"session_id": "{v.session}"}),
            Probe(
                "GET",
                "/api/memory/resume",
                params={"session_id": "{v.session}"},
                check=lambda d: d["resolution"] == "empty",
            ),
            # the attacker's own session is the newest of its scope; the victim's never is
            Probe(
                "GET",
                "/api/memory/resume",
                params={"scope_type": "global"},
                check=lambda d: d["session_id"].startswith("session-am"),
            ),
            Probe(
                "GET",
                "/api/memory/journal/sessions",
                check=lambda d: d["total"] == 1 and d["items"][0]["session_id"].startswith("session-am"),
            ),
            Probe("GET", "/api/memory/export", params={"scope_type": "global"}, own_visible=True),
        ],
        owner_read="/api/memory/entries/{v.id}",
    ),
    Domain(
        "working",
        "/api/memory/working",
        "memory:rw",
        seed_working,
        rows_working,
        reads=[
            Probe("GET", "/api/memory/working/sessions/{v.id}"),
            Probe("GET", "/api/memory/working/sessions/{v.id}/items"),
        ],
        writes=[
            Probe("PATCH", "/api/memory/working/sessions/{v.id}", {"title": "pwned", "status": "archived"}),
            Probe(
                "POST",
                "/api/memory/working/sessions/{v.id}/items",
                {"items": [{"item_type": "draft", "content": "pwned", "idempotency_key": "i1"}]},
            ),
            Probe("DELETE", "/api/memory/working/sessions/{v.id}/items/{v.seq}"),
            Probe("DELETE", "/api/memory/working/sessions/{v.id}"),
        ],
        listings=[
            Probe("GET", "/api/memory/working/sessions", own_visible=True),
            Probe("GET", "/api/memory/working/sessions", params={"agent": "{v.agent}"}),
        ],
        owner_read="/api/memory/working/sessions/{v.id}",
    ),
    Domain(
        "context",
        "/api/context",
        "memory:rw",
        seed_context,
        lambda v: [
            (
                "SELECT to_jsonb(t) FROM memory_entries t WHERE id = ANY(%s) ORDER BY 1::text",
                ([v["id"], v["other_id"]],),
            )
        ],
        listings=[
            Probe(
                "POST",
                "/api/context/pack",
                {"task": "{v.marker} memory", "session_id": "{v.session}", "render": True},
                check=_pack_is_empty,
            ),
            Probe(
                "POST",
                "/api/context/pack",
                {"task": "{v.marker}", "session_id": "{v.working_id}"},
                check=_pack_is_empty,
            ),
        ],
    ),
    Domain(
        "skills",
        "/api/skills",
        "skills:rw",
        seed_skills,
        rows_skills,
        reads=[
            Probe("GET", "/api/skills/versions/{v.id}"),
            Probe("GET", "/api/skills/versions/active", params={"skill_name": "{v.skill}"}),
            Probe("GET", "/api/skills/sources/{v.source_id}"),
            Probe("GET", "/api/skills/sources/{v.source_id}/revisions"),
            Probe("GET", "/api/skills/versions/{v.pkg_version_id}/instructions"),
            Probe("GET", "/api/skills/versions/{v.pkg_version_id}/resources"),
            Probe("GET", "/api/skills/versions/{v.pkg_version_id}/resources/{v.file_id}"),
            Probe("GET", "/api/skills/versions/{own.pkg_version_id}/resources/{v.file_id}"),
            Probe("GET", "/api/skills/versions/{v.pkg_version_id}/files"),
            Probe("GET", "/api/skills/versions/{v.pkg_version_id}/quality-runs"),
            Probe("GET", "/api/skills/quality-runs/{v.run_id}"),
        ],
        writes=[
            Probe("POST", "/api/skills/versions/{v.id}/activate"),
            Probe(
                "POST",
                "/api/skills/logs",
                {"skill_name": "{v.skill}", "outcome": "success", "skill_version_id": "{v.id}"},
                statuses=(400, 404),
            ),
            Probe("DELETE", "/api/skills/sources/{v.source_id}"),
            Probe(
                "POST",
                "/api/skills/sources/{v.source_id}/snapshots",
                {"files": [{"path": "SKILL.md", "content": "planted"}]},
            ),
            Probe("POST", "/api/skills/sources/{v.source_id}/sync", {}),
            Probe("POST", "/api/skills/versions/{v.pkg_version_id}/quality-runs", {}),
            Probe(
                "POST",
                "/api/skills/versions/{own.pkg_version_id}/quality-runs",
                {"baseline_version_id": "{v.pkg_version_id}"},
                statuses=(400,),
            ),
            Probe("POST", "/api/skills/compile", {"skill_version_id": "{v.pkg_version_id}"}),
        ],
        listings=[
            Probe("GET", "/api/skills/versions", own_visible=True),
            Probe("GET", "/api/skills/logs", own_visible=True),
            Probe("GET", "/api/skills/logs", params={"skill_version_id": "{v.id}"}),
            Probe("GET", "/api/skills/logs", params={"skill_name": "{v.skill}"}),
            Probe("GET", "/api/skills/stats", params={"skill_name": "{v.skill}"}),
            Probe("GET", "/api/skills/signals", params={"skill_name": "{v.skill}"}),
            Probe("GET", "/api/skills/sources", own_visible="source_id"),
            Probe("GET", "/api/skills/catalog", own_visible="pkg_version_id"),
            Probe("GET", "/api/skills/catalog", params={"query": "{v.marker}"}),
            Probe("POST", "/api/skills/search", {"query": "{v.marker} task", "include_content": True}),
            Probe("POST", "/api/skills/index", {}, own_visible="pkg_version_id"),
            Probe("POST", "/api/skills/compile", {}, own_visible="pkg_version_id"),
        ],
        owner_read="/api/skills/versions/{v.id}",
    ),
    Domain(
        "knowledge",
        "/api/knowledge",
        "knowledge:rw",
        seed_knowledge,
        rows_knowledge,
        reads=[
            Probe("GET", "/api/knowledge/sources/{v.id}"),
            Probe("GET", "/api/knowledge/sources/{v.id}/revisions"),
            Probe("GET", "/api/knowledge/revisions/{v.revision_id}/documents"),
            Probe("GET", "/api/knowledge/revisions/{v.revision_id}/documents/{v.document_id}"),
            Probe("GET", "/api/knowledge/revisions/{own.revision_id}/documents/{v.document_id}"),
            Probe("GET", "/api/knowledge/documents/{v.document_id}/links"),
        ],
        writes=[
            Probe("DELETE", "/api/knowledge/sources/{v.id}"),
            Probe(
                "POST",
                "/api/knowledge/sources/{v.id}/snapshots",
                {
                    "files": [
                        {"path": "KNOWLEDGE.yaml", "content": "name: planted\n"},
                        {"path": "a.md", "content": "planted"},
                    ]
                },
            ),
            Probe("POST", "/api/knowledge/sources/{v.git_source_id}/sync", {"ref": "main"}),
            Probe("POST", "/api/knowledge/sources/{v.id}/sync", {}),
            Probe("POST", "/api/knowledge/index", {"source_id": "{v.id}"}),
        ],
        listings=[
            Probe("GET", "/api/knowledge/sources", own_visible=True),
            Probe("GET", "/api/knowledge/catalog", own_visible=True),
            Probe(
                "GET",
                "/api/knowledge/catalog",
                params={"query": "{v.marker}"},
                check=lambda d: d["items"] == [],
            ),
            Probe(
                "GET",
                "/api/knowledge/catalog",
                params={"domain": "{v.domain}"},
                check=lambda d: d["items"] == [] and len(d["domains"]) == 1,
            ),
            Probe("POST", "/api/knowledge/index", {}, own_visible=True),
            Probe("POST", "/api/knowledge/search", {"query": "{v.marker}"}),  # the leak check covers it
            Probe(
                "POST",
                "/api/knowledge/search",
                {"query": "{v.marker}", "source_ids": ["{v.id}"]},
                check=lambda d: d["items"] == [],
            ),
            Probe(
                "POST",
                "/api/knowledge/search",
                {"query": "{v.marker}", "domain": "{v.domain}"},
                check=lambda d: d["items"] == [],
            ),
        ],
        owner_read="/api/knowledge/sources/{v.id}",
    ),
    Domain(
        "jobs",
        "/api/knowledge/jobs",
        "knowledge:r",
        seed_jobs,
        _row("jobs"),
        reads=[Probe("GET", "/api/knowledge/jobs/{v.id}")],
        listings=[
            Probe("GET", "/api/knowledge/jobs", own_visible=True),
            Probe("GET", "/api/knowledge/jobs", params={"kind": "{v.kind}"}),
            Probe(
                "GET",
                "/api/knowledge/queue",
                check=lambda doc: (
                    doc["kinds"] == [] or all(k["kind"].startswith("iso_am") for k in doc["kinds"])
                ),
            ),
        ],
        owner_read="/api/knowledge/jobs/{v.id}",
    ),
    Domain(
        "knowledge resolutions",
        "/api/knowledge/resolutions",
        ("knowledge:rw", "skills:rw"),
        seed_resolutions,
        rows_resolutions,
        reads=[Probe("GET", "/api/knowledge/resolutions/{v.id}")],
        writes=[
            Probe("POST", "/api/knowledge/discover", {"skill_version_id": "{v.version_id}"}, statuses=(400,)),
            Probe(
                "POST",
                "/api/knowledge/resolutions",
                {
                    "skill_version_id": "{v.version_id}",
                    "requirement_id": "billing-docs",
                    "discovery_fingerprint": "0" * 64,
                    "discovery_status": "matched",
                },
                statuses=(400,),
            ),
            Probe(
                "POST",
                "/api/knowledge/resolutions",
                {
                    "skill_version_id": "{own.version_id}",
                    "requirement_id": "billing-docs",
                    "discovery_fingerprint": "0" * 64,
                    "discovery_status": "matched",
                    "selected": [{"source_id": "{v.source_id}"}],
                },
                statuses=(400,),
            ),
            Probe(
                "POST",
                "/api/knowledge/resolutions",
                {
                    "skill_version_id": "{own.version_id}",
                    "requirement_id": "billing-docs",
                    "discovery_fingerprint": "0" * 64,
                    "discovery_status": "matched",
                    "selected": [{"source_id": "{own.source_id}", "revision_id": "{v.revision_id}"}],
                },
                statuses=(400,),
            ),
        ],
        listings=[
            Probe("GET", "/api/knowledge/resolutions", own_visible=True),
            Probe("GET", "/api/knowledge/resolutions", params={"source_id": "{v.source_id}"}),
            Probe("GET", "/api/knowledge/resolutions", params={"skill_version_id": "{v.version_id}"}),
            Probe("GET", "/api/knowledge/resolutions", params={"session_id": "{v.marker}"}),
            Probe(
                "POST",
                "/api/knowledge/discover",
                {"skill_version_id": "{own.version_id}"},
                own_visible="source_id",
            ),
        ],
        owner_read="/api/knowledge/resolutions/{v.id}",
    ),
    Domain(
        "wiki",
        "/api/knowledge",
        "knowledge:rw",
        seed_wiki,
        rows_wiki,
        reads=[
            Probe("GET", "/api/knowledge/builds/{v.id}"),
            Probe("GET", "/api/knowledge/builds/{v.id}/pages"),
            Probe("GET", "/api/knowledge/builds/{v.id}/pages/{v.page_path}"),
            Probe("GET", "/api/knowledge/builds/{v.id}/diff"),
            Probe("GET", "/api/knowledge/builds/{own.id}/diff", params={"from": "{v.id}"}),
            Probe("GET", "/api/knowledge/builds/{v.id}/events"),
            Probe("GET", "/api/knowledge/builds", params={"source_id": "{v.source_id}"}),
        ],
        writes=[Probe("POST", "/api/knowledge/builds/{v.id}/activate")],
        listings=[Probe("GET", "/api/knowledge/builds", own_visible=True)],
        owner_read="/api/knowledge/builds/{v.id}",
    ),
    Domain(
        "knowledge-quality",
        "/api/knowledge",
        "knowledge:rw",
        seed_knowledge_quality,
        rows_knowledge_quality,
        reads=[
            Probe("GET", "/api/knowledge/wiki/lint/runs/{v.run_id}"),
            Probe("GET", "/api/knowledge/builds/{v.build_id}/review"),
            Probe("GET", "/api/knowledge/validation/summary", params={"source_id": "{v.id}"}),
        ],
        writes=[
            Probe("POST", "/api/knowledge/wiki/lint", {"source_id": "{v.id}"}),
            Probe("POST", "/api/knowledge/builds/{v.build_id}/review"),
            Probe(
                "POST",
                "/api/knowledge/validation/signals",
                {"source_id": "{v.id}", "signal": "answer_adopted"},
            ),
            Probe(
                "POST",
                "/api/knowledge/validation/signals",
                {"source_id": "{own.id}", "signal": "question_repeated", "query_id": "{v.query_id}"},
                statuses=(400,),
            ),
            Probe(
                "POST",
                "/api/knowledge/validation/signals",
                {"source_id": "{own.id}", "signal": "answer_adopted", "build_id": "{v.build_id}"},
                statuses=(400,),
            ),
            Probe(
                "POST",
                "/api/knowledge/validation/signals",
                {"source_id": "{own.id}", "signal": "answer_adopted", "idempotency_key": "k-{v.marker}"},
                statuses=(200, 201),
            ),
        ],
        listings=[
            Probe("GET", "/api/knowledge/wiki/lint/runs", own_visible="run_id"),
            Probe(
                "GET",
                "/api/knowledge/wiki/lint/runs",
                params={"source_id": "{v.id}"},
                check=lambda d: d["items"] == [],
            ),
            Probe("GET", "/api/knowledge/validation/signals", own_visible="signal_id"),
            Probe(
                "GET",
                "/api/knowledge/validation/signals",
                params={"source_id": "{v.id}"},
                check=lambda d: d["items"] == [],
            ),
            Probe("GET", "/api/knowledge/validation/summary"),
            Probe("GET", "/api/knowledge/validation/skill-patterns"),
            Probe("POST", "/api/knowledge/validation/sweep", {"idle_days": 1}),
        ],
        owner_read="/api/knowledge/builds/{v.build_id}/review",
    ),
    Domain(
        "tags",
        "/api/tags",
        tuple(f"{m}:rw" for m in TAGGED),
        seed_tags,
        _tagged_rows,
        listings=[
            Probe("GET", "/api/tags", own_visible="tag"),
            *(Probe("GET", "/api/tags", params={"module": m}, own_visible="tag") for m in TAGGED),
        ],
    ),
    Domain(
        "apikeys",
        "/api/auth",
        "manage_keys",
        seed_apikeys,
        _row("api_keys"),
        writes=[Probe("DELETE", "/api/auth/apikeys/{v.id}")],
        listings=[Probe("GET", "/api/auth/apikeys", own_visible=True)],
    ),
    Domain(
        "account transfers",
        "/api/account",
        tuple(
            f"{d}:rw"
            for d in ("todos", "notes", "reports", "bookmarks", "expenses", "memory", "skills", "knowledge")
        ),
        seed_transfers,
        lambda v: [
            ("SELECT to_jsonb(t) FROM account_exports t WHERE id = %s", (v["id"],)),
            ("SELECT to_jsonb(t) FROM account_imports t WHERE id = %s", (v["import_id"],)),
        ],
        reads=[
            Probe("GET", "/api/account/exports/{v.id}"),
            Probe("GET", "/api/account/imports/{v.import_id}"),
        ],
        writes=[Probe("POST", "/api/account/imports/{v.import_id}/start")],
        owner_read="/api/account/imports/{v.import_id}",
    ),
    Domain(
        "oauth grants",
        "/api/auth",
        "manage_keys",
        seed_grants,
        _row("oauth_grants"),
        writes=[Probe("DELETE", "/api/auth/grants/{v.id}")],
        listings=[Probe("GET", "/api/auth/grants", own_visible=True)],
    ),
]

# Route groups that own no tenant rows of their own (public discovery, operator repair).
NO_TENANT_ROWS = {
    "/api/health",
    "/api/schema",
    "/api/admin",
    # the OAuth endpoints act on a client's tokens and codes, found by their hash (tests/integration/test_oauth_*)
    "/api/oauth",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource",
}
# Routes whose path parameter names a public document, not a tenant row.
PUBLIC_DOCUMENTS = {"GET /api/docs/{name}", "GET /.well-known/oauth-protected-resource/mcp/{module}"}
# Routes whose path parameter is the credential itself: an archive link's signed, expiring token (portability).
PUBLIC_DOCUMENTS |= {"GET /api/account/archives/{token}", "PUT /api/account/archives/{token}"}


def _served_prefixes() -> set[str]:
    return {p for prefixes in ROUTE_GROUPS.values() for p in prefixes}


def _present(domain: Domain) -> bool:
    return any(domain.prefix == p or domain.prefix.startswith(p + "/") for p in _served_prefixes())


PRESENT = [d for d in DOMAINS if _present(d)]


def _template(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


def test_every_route_group_with_tenant_rows_has_an_isolation_spec():
    covered = {d.prefix for d in DOMAINS}
    # A spec covers its prefix and every prefix under it: the knowledge wiki function's prefixes
    # (/api/knowledge/wiki, …) are probed by the knowledge Domains (and every id route by the test below)
    missing = sorted(
        p
        for p in _served_prefixes() - NO_TENANT_ROWS
        if not any(c == p or c.startswith(p + "/") or p.startswith(c + "/") for c in covered)
    )
    assert not missing, f"add a Domain to tests/integration/test_tenant_isolation.py for: {missing}"


def test_every_route_taking_an_id_is_probed_with_the_other_accounts_id():
    """Each route with a path parameter (a read, update or delete of one row) is attacked by some probe."""
    probed = {(p.method, _template(p.path)) for d in DOMAINS for p in d.reads + d.writes}
    unprobed = []
    for module, prefixes in ROUTE_GROUPS.items():
        if set(prefixes) <= NO_TENANT_ROWS:
            continue
        app = importlib.import_module(module).app
        if not callable(getattr(app, "openapi", None)):
            continue
        for path, item in app.openapi().get("paths", {}).items():
            for method in item:
                route = f"{method.upper()} {path}"
                if method in HTTP_METHODS and "{" in path and (method.upper(), _template(path)) not in probed:
                    if route not in PUBLIC_DOCUMENTS:
                        unprobed.append(route)
    assert not unprobed, f"routes no isolation probe attacks: {sorted(unprobed)}"


def _snapshot(owner_url: str, domain: Domain, v: dict[str, Any]) -> list[Any]:
    with psycopg.connect(owner_url) as conn:
        return [conn.execute(q, params).fetchall() for q, params in domain.rows(v)]  # type: ignore[arg-type]


@pytest.mark.parametrize("domain", PRESENT, ids=[d.name for d in PRESENT])
def test_another_accounts_rows_cannot_be_read_changed_deleted_or_listed(
    client, account, other_account, owner_url, domain: Domain
):
    # Given a victim and an attacker, each with the same kind of data
    victim_marker, victim_secret = f"vm{uuid.uuid4().hex[:10]}", f"vs{uuid.uuid4().hex[:12]}"
    v = {
        **domain.seed(client, domain.headers(other_account), victim_marker, victim_secret),
        "marker": victim_marker,
    }
    own = {
        **domain.seed(
            client, domain.headers(account), f"am{uuid.uuid4().hex[:10]}", f"as{uuid.uuid4().hex[:12]}"
        )
    }
    before = _snapshot(owner_url, domain, v)
    assert all(before), f"seeded rows not found: {before}"
    forbidden = {victim_secret, *(str(x) for k, x in v.items() if k.endswith("id"))}
    failures: list[str] = []
    for label, headers in (("scoped key", domain.headers(account)), ("JWT", account.jwt_headers)):
        # When the attacker reads, updates and deletes the victim's ids
        for probe in domain.reads + domain.writes:
            path, body, params = probe.render(v, own)
            r = client.request(probe.method, path, json=body, params=params, headers=headers)
            sent = path + json.dumps(params or {}) + json.dumps(body or {})
            if r.status_code not in probe.statuses:
                failures.append(
                    f"[{label}] {probe.method} {path} {body or ''}: {r.status_code} {r.text[:300]}"
                )
            elif any(s in r.text for s in forbidden if s not in sent):
                failures.append(
                    f"[{label}] {probe.method} {path}: the error leaks victim data: {r.text[:300]}"
                )
        # And lists and searches
        for probe in domain.listings:
            path, body, params = probe.render(v, own)
            r = client.request(probe.method, path, json=body, params=params, headers=headers)
            echoed = path + json.dumps(params or {}) + json.dumps(body or {})
            if r.status_code != 200:
                failures.append(
                    f"[{label}] {probe.method} {path} {params or body or ''}: {r.status_code} {r.text[:300]}"
                )
                continue
            leaked = [s for s in forbidden if s in r.text and s not in echoed]
            if leaked:
                failures.append(
                    f"[{label}] {probe.method} {path} {params or body or ''} shows the victim's {leaked}"
                )
            own_key = probe.own_visible if isinstance(probe.own_visible, str) else "id"
            if probe.own_visible and own[own_key] not in r.text:
                failures.append(f"[{label}] {probe.method} {path} does not list the caller's own row")
            if probe.check and not probe.check(r.json()):
                failures.append(
                    f"[{label}] {probe.method} {path} {params or body or ''}: unexpected {r.text[:300]}"
                )
    assert not failures, "\n".join(failures)
    # Then the victim's rows are exactly as they were, and still work for the victim
    assert _snapshot(owner_url, domain, v) == before
    if domain.owner_read:
        path, _, _ = Probe("GET", domain.owner_read).render(v, own)
        assert client.get(path, headers=domain.headers(other_account)).status_code == 200


# --- database level -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tenant_tables(owner_url) -> list[str]:
    """Every table with an account_id column (discovered, so new tables are covered automatically)."""
    with psycopg.connect(owner_url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                """SELECT c.table_name FROM information_schema.columns c
               JOIN information_schema.tables t USING (table_schema, table_name)
               WHERE c.table_schema = 'public' AND c.column_name = 'account_id' AND t.table_type = 'BASE TABLE'
               ORDER BY 1"""
            )
        ]
    assert {"users", "api_keys", "todos"} <= set(tables)
    return tables


@pytest.fixture(scope="module")
def two_populated_tenants(client, tenant_tables):
    """Two accounts that both hold rows in every domain present."""
    from conftest import make_account

    pair = [make_account(client), make_account(client)]
    for acct in pair:
        for domain in PRESENT:
            domain.seed(client, domain.headers(acct), f"db{uuid.uuid4().hex[:8]}", uuid.uuid4().hex)
        acct.key("todos:r")
    return pair


def _app_connect() -> psycopg.Connection:
    import os

    return psycopg.connect(os.environ["DATABASE_URL"])


def test_the_application_role_is_not_privileged(owner_url):
    with _app_connect() as conn:
        role = conn.execute("SELECT current_user").fetchone()[0]
        flags = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
    assert role == "agentmate_app"
    assert flags == (False, False), f"agentmate_app rolsuper/rolbypassrls = {flags}"


def test_every_tenant_table_has_row_level_security_and_a_policy_and_is_not_owned_by_the_app(
    owner_url, tenant_tables
):
    with psycopg.connect(owner_url) as conn:
        info = {
            r[0]: r[1:]
            for r in conn.execute(
                """SELECT c.relname, c.relrowsecurity, pg_get_userbyid(c.relowner),
                      (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND c.relname = ANY(%s)""",
                ([*tenant_tables, "accounts"],),
            )
        }
    problems = [
        f"{t}: rls={rls} owner={owner} policies={n}"
        for t, (rls, owner, n) in sorted(info.items())
        if not rls or owner == "agentmate_app" or n == 0
    ]
    assert not problems, problems


def test_raw_selects_without_where_see_only_the_callers_rows(owner_url, tenant_tables, two_populated_tenants):
    a, b = two_populated_tenants
    with psycopg.connect(owner_url) as conn:
        owned = {
            t: {
                acct.account_id: conn.execute(
                    sql.SQL("SELECT count(*) FROM {} WHERE account_id = %s").format(sql.Identifier(t)),
                    (acct.account_id,),
                ).fetchone()[0]
                for acct in (a, b)
            }
            for t in tenant_tables
        }
    populated = [t for t in tenant_tables if all(owned[t].values())]
    assert {"users", "api_keys", "todos"} <= set(populated), owned
    with _app_connect() as conn:
        for acct in (a, b):
            with conn.transaction():
                conn.execute("SELECT set_config('app.account_id', %s, true)", (acct.account_id,))
                for table in tenant_tables:
                    rows = conn.execute(
                        sql.SQL("SELECT account_id::text FROM {}").format(sql.Identifier(table))
                    ).fetchall()
                    assert {r[0] for r in rows} <= {acct.account_id}, f"{table} shows another account's rows"
                    assert len(rows) == owned[table][acct.account_id], f"{table}: own rows hidden"
                accounts = conn.execute("SELECT id::text FROM accounts").fetchall()
                assert accounts == [(acct.account_id,)]


def test_raw_selects_see_nothing_when_no_account_is_set(tenant_tables, two_populated_tenants):
    with _app_connect() as conn:
        for setting in (None, ""):
            with conn.transaction():
                if setting is not None:
                    conn.execute("SELECT set_config('app.account_id', %s, true)", (setting,))
                for table in [*tenant_tables, "accounts"]:
                    n = conn.execute(
                        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
                    ).fetchone()[0]
                    assert n == 0, f"{table}: {n} rows visible without app.account_id ({setting!r})"


def test_unfiltered_updates_touch_only_the_callers_rows_and_cannot_move_rows_to_another_account(
    owner_url, tenant_tables, two_populated_tenants
):
    a, b = two_populated_tenants
    with psycopg.connect(owner_url) as conn:
        owned = {
            t: conn.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE account_id = %s").format(sql.Identifier(t)),
                (a.account_id,),
            ).fetchone()[0]
            for t in tenant_tables
        }
    with _app_connect() as conn:
        for table in tenant_tables:
            ident = sql.Identifier(table)
            updatable = conn.execute(
                "SELECT has_table_privilege(current_user, %s, 'UPDATE')", (table,)
            ).fetchone()[0]
            if not updatable:  # append-only tables: the application role may not UPDATE them at all
                with (
                    pytest.raises(psycopg.errors.InsufficientPrivilege),
                    conn.transaction(force_rollback=True),
                ):
                    conn.execute(sql.SQL("UPDATE {} SET account_id = account_id").format(ident))
                continue
            with conn.transaction(force_rollback=True):
                conn.execute("SELECT set_config('app.account_id', %s, true)", (a.account_id,))
                cur = conn.execute(sql.SQL("UPDATE {} SET account_id = account_id").format(ident))
                assert cur.rowcount == owned[table], (
                    f"{table}: an unfiltered UPDATE touched {cur.rowcount} rows"
                )
            if owned[table]:
                with pytest.raises(psycopg.Error), conn.transaction(force_rollback=True):
                    conn.execute("SELECT set_config('app.account_id', %s, true)", (a.account_id,))
                    conn.execute(sql.SQL("UPDATE {} SET account_id = %s").format(ident), (b.account_id,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction(force_rollback=True):
            conn.execute("SELECT set_config('app.account_id', %s, true)", (a.account_id,))
            conn.execute("INSERT INTO todos (account_id, title) VALUES (%s, 'planted')", (b.account_id,))
