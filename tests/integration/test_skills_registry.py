"""The skills registry through the HTTP API: sources, snapshots, compile, catalog, L1/L2 loads, index, search,
quality runs and the delete rules (real Postgres, the embedded vector index, the offline embedder)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid

import psycopg
import pytest

SKILL = """---
name: domain-web
description: Build and review small web services with FastAPI
triggers: [build a web service, add an http route]
capabilities: [fastapi, http-api]
---

# Instructions

Keep every route handler thin and put the logic in a service; test every route against a real database.
"""
REFERENCE = "# Routing\n\nDeclare routes on an APIRouter and include it in the app.\n"


def files(skill: str = SKILL) -> list[dict]:
    return [
        {"path": "SKILL.md", "content": skill, "mime_type": "text/markdown"},
        {"path": "references/routing.md", "content": REFERENCE},
        {"path": "assets/logo.png", "sha256": hashlib.sha256(b"png").hexdigest(), "size_bytes": 3},
    ]


def register(client, h, name: str = "personal-domain-web", path: str = "team/domain-web") -> dict:
    r = client.post(
        "/api/skills/sources",
        json={
            "name": name,
            "type": "local",
            "repository_url": "file:///Users/me/.agents/skills",
            "package_path": path,
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    return r.json()


def push(client, h, source_id: str, **body) -> dict:
    r = client.post(f"/api/skills/sources/{source_id}/snapshots", json={"files": files(), **body}, headers=h)
    assert r.status_code in (200, 201), r.text
    return r.json()


def test_agent_loop_register_push_catalog_search_instructions_resource(client, account):
    h = account.headers("skills:rw")
    # Given a local source and a pushed snapshot (activated and indexed)
    source = register(client, h)
    assert source["domain"] == "team" and source["sync_mode"] == "client_push"
    out = push(client, h, source["id"], activate=True, index=True)
    version = out["version"]
    assert out["created"] is True and out["compile"]["status"] == "compiled"
    assert out["index"]["status"] == "indexed"
    assert version["skill_name"] == "domain-web" and version["is_active"] is True
    assert version["source_id"] == source["id"] and version["source_revision_id"] == out["revision"]["id"]
    # The server derived every hash: package_hash is the identity hash of the file lines
    lines = sorted(
        f"{f['path']}\0{hashlib.sha256((f['content']).encode()).hexdigest()}\0{len(f['content'].encode())}"
        if "content" in f
        else f"{f['path']}\0{f['sha256']}\0{f['size_bytes']}"
        for f in files()
    )
    assert out["revision"]["package_hash"] == hashlib.sha256("\n".join(lines).encode()).hexdigest()

    # 1. Catalog: the active card, without instructions
    r = client.get("/api/skills/catalog", headers=h)
    assert r.status_code == 200
    [item] = r.json()["items"]
    assert item["compiled"] is True and item["card"]["triggers"] == [
        "build a web service",
        "add an http route",
    ]
    assert "Keep every route handler thin" not in r.text

    # 2. Search the cards
    r = client.post("/api/skills/search", json={"query": "build a web service"}, headers=h)
    assert r.status_code == 200, r.text
    hit = r.json()["items"][0]
    assert hit["skill_version_id"] == version["id"] and hit["instructions"] is None

    # 3. Load L1 instructions (no-store)
    r = client.get(f"/api/skills/versions/{version['id']}/instructions", headers=h)
    assert r.status_code == 200 and r.headers["cache-control"] == "private, no-store"
    body = r.json()
    assert body["instructions"].startswith("# Instructions") and body["name"] == "domain-web"

    # 4. List L2 resources (no content) and load one text resource
    r = client.get(f"/api/skills/versions/{version['id']}/resources", headers=h)
    assert r.status_code == 200
    manifest = r.json()
    assert manifest["total"] == 2 and all("content" not in m for m in manifest["items"])
    ref = next(m for m in manifest["items"] if m["path"] == "references/routing.md")
    assert (ref["kind"], ref["text_available"]) == ("reference", True)
    r = client.get(f"/api/skills/versions/{version['id']}/resources/{ref['file_id']}", headers=h)
    assert r.status_code == 200 and r.headers["cache-control"] == "private, no-store"
    assert r.json()["content"] == REFERENCE


def test_search_with_include_content_loads_instructions_from_postgres(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    push(client, h, source["id"], activate=True, index=True)
    r = client.post(
        "/api/skills/search", json={"query": "fastapi http route", "include_content": True}, headers=h
    )
    assert r.status_code == 200, r.text
    hit = r.json()["items"][0]
    assert hit["instructions"].startswith("# Instructions")
    assert r.headers["cache-control"] == "private, no-store"


def test_index_holds_cards_only_never_instructions(client, account, owner_url):
    h = account.headers("skills:rw")
    source = register(client, h)
    push(client, h, source["id"], activate=True)
    r = client.post("/api/skills/index", json={}, headers=h)
    assert r.status_code == 200 and r.json()["indexed"] == 1
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT title, content FROM retrieval_documents WHERE account_id = %s AND namespace = 'skills'",
            (account.account_id,),
        ).fetchall()
    assert len(rows) == 1
    assert "Keep every route handler thin" not in rows[0][1] and "build a web service" in rows[0][1]


def test_replaying_a_package_hash_returns_the_existing_revision_and_version(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    first = push(client, h, source["id"])
    again = client.post(f"/api/skills/sources/{source['id']}/snapshots", json={"files": files()}, headers=h)
    assert again.status_code == 200
    assert again.json()["created"] is False
    assert again.json()["version"]["id"] == first["version"]["id"]
    r = client.get(f"/api/skills/sources/{source['id']}/revisions", headers=h)
    assert r.json()["total"] == 1


def test_a_package_without_skill_md_is_refused_and_writes_nothing(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    r = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={"files": [{"path": "README.md", "content": "x"}]},
        headers=h,
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "files"
    assert client.get(f"/api/skills/sources/{source['id']}/revisions", headers=h).json()["total"] == 0


def test_compiler_failure_keeps_the_package_refuses_activate_and_the_catalog_shows_a_basic_card(
    client, account
):
    h = account.headers("skills:rw")
    source = register(client, h)
    bad = "---\nname: Not_Valid\n---\nbody\n"
    # When a package whose frontmatter does not compile is pushed with activate: true
    r = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={"files": [{"path": "SKILL.md", "content": bad}], "activate": True, "index": True},
        headers=h,
    )
    # Then the package is kept (201) but the version is not activated, and the response says why
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["compile"]["status"] == "failed" and "name:" in out["compile"]["problems"][0]
    assert out["activated"] is False and out["version"]["is_active"] is False and out["index"] is None
    assert "blocker" in out["not_activated_reason"] and "name:" in out["not_activated_reason"]
    assert client.get("/api/skills/catalog", headers=h).json()["items"] == []
    # And an explicit activation still activates it (package identity); the catalog then shows a basic card
    vid = out["version"]["id"]
    assert client.post(f"/api/skills/versions/{vid}/activate", headers=h).json()["is_active"] is True
    [item] = client.get("/api/skills/catalog", headers=h).json()["items"]
    assert item["compiled"] is False and item["card"]["compiled"] is False
    assert item["skill_name"] == "domain-web"  # the folder name, since the frontmatter name is unusable
    # Instructions still load (the stored body) and compile reports the failure again
    r = client.get(f"/api/skills/versions/{vid}/instructions", headers=h)
    assert r.json()["compiled"] is False and r.json()["instructions"] == "body"
    r = client.post("/api/skills/compile", json={}, headers=h)
    assert r.json()["failed"] == 1


@pytest.mark.parametrize(
    ("skill", "problem"),
    [
        ("# Instructions\nNo frontmatter at all.\n", "frontmatter: SKILL.md has none"),
        ("---\ndescription: Plans trips\n---\n# Trips\n", "name: required"),
        ("---\nname: domain-web\n---\n# Trips\n", "description: required"),
    ],
)
def test_a_skill_md_without_name_and_description_is_a_blocker_and_is_not_activated(
    client, account, skill, problem
):
    h = account.headers("skills:rw")
    source = register(client, h)
    # Given an active, compiled version of the skill
    good = push(client, h, source["id"], activate=True)
    assert good["activated"] is True and good["not_activated_reason"] is None
    # When a package without the Agent Skills format's required fields is pushed with activate: true
    r = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={"files": [{"path": "SKILL.md", "content": skill}], "activate": True},
        headers=h,
    )
    assert r.status_code == 201, r.text
    out = r.json()
    # Then its compile failed naming the field, it is not activated, and the previous version stays active
    assert out["compile"]["status"] == "failed" and out["compile"]["problems"][0].startswith(problem)
    assert out["activated"] is False and problem in out["not_activated_reason"]
    active = client.get("/api/skills/versions/active", params={"skill_name": "domain-web"}, headers=h).json()
    assert active["id"] == good["version"]["id"]


def test_direct_publish_with_activate_activates_only_a_version_that_compiles(client, account):
    h = account.headers("skills:rw")
    ok = "---\nname: trip-planner\ndescription: Plan trips\n---\n# Trips\n"
    # A compiling body is activated; the response carries the compile outcome
    r = client.post(
        "/api/skills/versions",
        json={"skill_name": "trip-planner", "version": "1", "content": ok, "activate": True},
        headers=h,
    )
    assert r.status_code == 201, r.text
    first = r.json()
    assert (first["activated"], first["is_active"], first["compile"]["status"]) == (True, True, "compiled")
    # A body without frontmatter is published (201) but not activated, and says why
    r = client.post(
        "/api/skills/versions",
        json={
            "skill_name": "trip-planner",
            "version": "2",
            "content": "# Trips\nno frontmatter\n",
            "activate": True,
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    second = r.json()
    assert (second["activated"], second["is_active"], second["compile"]["status"]) == (False, False, "failed")
    assert second["not_activated_reason"].startswith("not activated: the compile produced a blocker")
    active = client.get(
        "/api/skills/versions/active", params={"skill_name": "trip-planner"}, headers=h
    ).json()
    assert active["id"] == first["id"]
    # And a publish without activate says nothing about activation
    r = client.post(
        "/api/skills/versions",
        json={"skill_name": "trip-planner", "version": "3", "content": ok + "v3\n"},
        headers=h,
    )
    assert (r.json()["activated"], r.json()["not_activated_reason"]) == (False, None)


def test_artifact_is_refreshed_after_direct_publish_and_after_activation(client, account, owner_url):
    h = account.headers("skills:rw")
    body = "---\nname: alpha-skill\ndescription: Summarise papers\n---\nDo it.\n"
    # When a body is published (no compile call)
    vid = client.post(
        "/api/skills/versions", json={"skill_name": "alpha-skill", "version": "1", "content": body}, headers=h
    ).json()["id"]
    # Then its artifact exists: the instructions are the compiled ones
    assert client.get(f"/api/skills/versions/{vid}/instructions", headers=h).json()["compiled"] is True
    # Given the artifact is gone (e.g. written by an older compiler and removed)
    with psycopg.connect(owner_url) as conn:
        conn.execute("DELETE FROM skill_compiled_artifacts WHERE skill_version_id = %s", (vid,))
    assert client.get(f"/api/skills/versions/{vid}/instructions", headers=h).json()["compiled"] is False
    # When the version is activated, the artifact is compiled again after the commit
    assert client.post(f"/api/skills/versions/{vid}/activate", headers=h).status_code == 200
    [item] = client.get("/api/skills/catalog", headers=h).json()["items"]
    assert item["compiled"] is True and item["card"]["description"] == "Summarise papers"


def test_source_delete_is_refused_while_a_version_bound_log_references_its_version(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    vid = push(client, h, source["id"])["version"]["id"]
    # Given a log bound to the version (and no quality run)
    r = client.post(
        "/api/skills/logs",
        json={"skill_name": "domain-web", "skill_version_id": vid, "outcome": "success"},
        headers=h,
    )
    assert r.status_code == 201, r.text
    # When the source (with its versions) is deleted: 409, and nothing is deleted
    r = client.delete(f"/api/skills/sources/{source['id']}", headers=h)
    assert r.status_code == 409, r.text
    assert "skill log" in r.json()["detail"]
    assert client.get(f"/api/skills/versions/{vid}", headers=h).status_code == 200
    # While an unbound log of the same skill does not hold a version
    other = register(client, h, name="other-src", path="other/domain-web")
    push(client, h, other["id"])
    client.post("/api/skills/logs", json={"skill_name": "domain-web", "outcome": "success"}, headers=h)
    assert client.delete(f"/api/skills/sources/{other['id']}", headers=h).status_code == 204


def test_routing_metadata_present_names_the_fields_it_looks_for(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    plain = "---\nname: domain-web\ndescription: Build web services\n---\n# Web\n"
    vid = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={"files": [{"path": "SKILL.md", "content": plain}]},
        headers=h,
    ).json()["version"]["id"]
    report = client.post(f"/api/skills/versions/{vid}/quality-runs", json={}, headers=h).json()["report"]
    [check] = [c for c in report["lint"] if c["id"] == "routing_metadata_present"]
    assert (check["passed"], check["severity"]) == (False, "warning")
    assert check["evidence"]["fields"] == ["triggers", "capabilities"]
    assert "triggers" in check["evidence"]["hint"] and "capabilities" in check["evidence"]["hint"]


def test_compile_backfills_direct_publishes_and_catalog_filters_by_query(client, account):
    h = account.headers("skills:rw")
    for name, desc in (("alpha-skill", "Summarise papers"), ("beta-skill", "Plan trips")):
        body = f"---\nname: {name}\ndescription: {desc}\n---\nDo it.\n"
        r = client.post(
            "/api/skills/versions",
            json={"skill_name": name, "version": "1", "content": body, "activate": True},
            headers=h,
        )
        assert r.status_code == 201
    r = client.post("/api/skills/compile", headers=h)
    assert r.status_code == 200 and r.json()["compiled"] == 2
    page = client.get("/api/skills/catalog", params={"limit": 1}, headers=h).json()
    assert page["total"] == 2 and page["items"][0]["skill_name"] == "alpha-skill"
    page2 = client.get("/api/skills/catalog", params={"limit": 1, "offset": 1}, headers=h).json()
    assert page2["items"][0]["skill_name"] == "beta-skill"
    found = client.get("/api/skills/catalog", params={"query": "trips"}, headers=h).json()
    assert [i["skill_name"] for i in found["items"]] == ["beta-skill"]


def test_binary_resource_has_no_text_and_skill_md_is_not_a_resource(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    out = push(client, h, source["id"])
    vid = out["version"]["id"]
    listing = client.get(f"/api/skills/versions/{vid}/files", headers=h).json()
    by_path = {f["path"]: f for f in listing["items"]}
    assert by_path["SKILL.md"]["kind"] == "instructions" and by_path["assets/logo.png"]["is_text"] is False
    r = client.get(f"/api/skills/versions/{vid}/resources/{by_path['assets/logo.png']['id']}", headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "file_id"
    r = client.get(f"/api/skills/versions/{vid}/resources/{by_path['SKILL.md']['id']}", headers=h)
    assert r.status_code == 404


def test_quality_run_stores_a_report_and_lists_summaries(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    v1 = push(client, h, source["id"], activate=True)["version"]["id"]
    r = client.post(f"/api/skills/versions/{v1}/quality-runs", json={}, headers=h)
    assert r.status_code == 201, r.text
    run = r.json()
    assert run["summary"]["blockers"] == 0 and run["summary"]["errors"] == 0
    assert len(run["report"]["lint"]) == 19 and len(run["report"]["eval"]) == 5
    # a second version of the same skill compared against the first
    changed = files(SKILL.replace("fastapi, http-api", "fastapi, http-api, testing"))
    r = client.post(f"/api/skills/sources/{source['id']}/snapshots", json={"files": changed}, headers=h)
    v2 = r.json()["version"]["id"]
    r = client.post(f"/api/skills/versions/{v2}/quality-runs", json={"baseline_version_id": v1}, headers=h)
    cmp = r.json()["report"]["comparison"]
    assert cmp["package_hash_changed"] is True and cmp["status"] == "review_required"
    assert cmp["routing_diffs"][0]["field"] == "capabilities"
    listing = client.get(f"/api/skills/versions/{v2}/quality-runs", headers=h).json()
    assert listing["total"] == 1 and "report" not in listing["items"][0]
    detail = client.get(f"/api/skills/quality-runs/{listing['items'][0]['id']}", headers=h).json()
    assert detail["report"]["comparison"]["baseline_version_id"] == v1


def test_baseline_must_be_another_version_of_the_same_skill(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    v1 = push(client, h, source["id"])["version"]["id"]
    other = client.post(
        "/api/skills/versions", json={"skill_name": "other", "version": "1", "content": "x"}, headers=h
    ).json()["id"]
    for baseline in (v1, other, str(uuid.uuid4())):
        r = client.post(
            f"/api/skills/versions/{v1}/quality-runs", json={"baseline_version_id": baseline}, headers=h
        )
        assert r.status_code == 400 and r.json()["errors"][0]["field"] == "baseline_version_id"


def test_telemetry_uses_version_bound_logs(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    vid = push(client, h, source["id"], activate=True)["version"]["id"]
    for i in range(22):
        outcome = "failure" if i < 4 else "success"
        r = client.post(
            "/api/skills/logs",
            json={"skill_name": "domain-web", "skill_version_id": vid, "outcome": outcome},
            headers=h,
        )
        assert r.status_code == 201
    client.post("/api/skills/logs", json={"skill_name": "domain-web", "outcome": "failure"}, headers=h)
    t = client.post(f"/api/skills/versions/{vid}/quality-runs", headers=h).json()["report"]["telemetry"]
    assert (t["status"], t["considered"], t["triggered"]) == ("sufficient", 22, 22)
    assert [s["category"] for s in t["suggestions"]] == ["failure"]


def test_source_delete_is_refused_while_an_audit_row_references_its_version(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    vid = push(client, h, source["id"])["version"]["id"]
    client.post(f"/api/skills/versions/{vid}/quality-runs", headers=h)
    r = client.delete(f"/api/skills/sources/{source['id']}", headers=h)
    assert r.status_code == 409
    assert client.get(f"/api/skills/sources/{source['id']}", headers=h).status_code == 200


def test_deleting_a_baseline_version_only_clears_baseline_version_id(client, account):
    h = account.headers("skills:rw")
    base_source = register(client, h, name="base-src", path="base/domain-web")
    cur_source = register(client, h, name="cur-src", path="cur/domain-web")
    v1 = push(client, h, base_source["id"])["version"]["id"]
    changed = files(SKILL + "\nMore.\n")
    v2 = client.post(
        f"/api/skills/sources/{cur_source['id']}/snapshots", json={"files": changed}, headers=h
    ).json()["version"]["id"]
    run = client.post(
        f"/api/skills/versions/{v2}/quality-runs", json={"baseline_version_id": v1}, headers=h
    ).json()
    assert client.delete(f"/api/skills/sources/{base_source['id']}", headers=h).status_code == 204
    detail = client.get(f"/api/skills/quality-runs/{run['id']}", headers=h).json()
    assert (
        detail["baseline_version_id"] is None and detail["report"]["comparison"]["baseline_version_id"] == v1
    )


def test_source_without_audit_rows_deletes_with_its_versions(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    vid = push(client, h, source["id"])["version"]["id"]
    assert client.delete(f"/api/skills/sources/{source['id']}", headers=h).status_code == 204
    assert client.get(f"/api/skills/versions/{vid}/instructions", headers=h).status_code == 404


def test_quality_runs_are_append_only_for_the_application_role(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    vid = push(client, h, source["id"])["version"]["id"]
    run = client.post(f"/api/skills/versions/{vid}/quality-runs", headers=h).json()
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        conn.execute("SELECT set_config('app.account_id', %s, false)", (account.account_id,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE skill_quality_runs SET status = 'failed' WHERE id = %s", (run["id"],))


def test_git_sync_through_the_route_ingests_compiles_and_replays(client, account, monkeypatch):
    # Given the packages tests' loopback git server with a skill package under skills/web
    from agentmate.packages.git import GitFetcher
    from agentmate.skills.registry import service as registry
    from tests.integration.packages.gitserver import GitServer, commit_tree
    from tests.integration.packages.test_packages_git import SETTINGS, make_policy

    server = GitServer().start()
    try:
        skill = (
            "---\nname: web\ndescription: Browse the web\ntriggers: [open a page]\n---\n# Web\nRead pages.\n"
        )
        sha = commit_tree(
            server.repo("acme/skills"),
            {"skills/web/SKILL.md": skill.encode(), "skills/web/references/a.md": b"# A\n"},
        )
        policy = make_policy()
        monkeypatch.setattr(registry, "net_policy", lambda: policy)
        monkeypatch.setattr(registry, "fetcher", lambda: GitFetcher(policy, SETTINGS))
        h = account.headers("skills:rw")
        r = client.post(
            "/api/skills/sources",
            json={
                "type": "git",
                "repository_url": server.url("git.test", "acme/skills"),
                "package_path": "skills/web",
                "default_ref": "main",
            },
            headers=h,
        )
        assert r.status_code == 201, r.text
        source = r.json()
        assert source["domain"] == "skills" and source["sync_mode"] == "server_pull"
        # When it is synced
        r = client.post(
            f"/api/skills/sources/{source['id']}/sync", json={"activate": True, "index": True}, headers=h
        )
        # Then the commit is ingested, compiled and searchable
        assert r.status_code == 201, r.text
        out = r.json()
        assert out["revision"]["commit_sha"] == sha and out["compile"]["status"] == "compiled"
        assert out["version"]["skill_name"] == "web" and out["index"]["status"] == "indexed"
        hits = client.post("/api/skills/search", json={"query": "open a page"}, headers=h).json()["items"]
        assert hits[0]["skill_version_id"] == out["version"]["id"]
        # And syncing the unchanged commit again replays it
        again = client.post(f"/api/skills/sources/{source['id']}/sync", headers=h)
        assert again.status_code == 200 and again.json()["version"]["id"] == out["version"]["id"]
        # And a local source cannot be synced
        local = register(client, h)
        assert client.post(f"/api/skills/sources/{local['id']}/sync", headers=h).status_code == 409
    finally:
        server.stop()


# spec/001 "Skills (authenticated)", every route with its scope, as written there.
SPEC_SKILLS_ROUTES = {
    ("POST", "/api/skills/sources"): "skills:rw",
    ("GET", "/api/skills/sources"): "skills:r",
    ("GET", "/api/skills/sources/{}/revisions"): "skills:r",
    ("POST", "/api/skills/sources/{}/snapshots"): "skills:rw",
    ("POST", "/api/skills/sources/{}/sync"): "skills:rw",
    ("POST", "/api/skills/compile"): "skills:rw",
    ("GET", "/api/skills/catalog"): "skills:r",
    ("GET", "/api/skills/versions/{}/instructions"): "skills:r",
    ("GET", "/api/skills/versions/{}/resources"): "skills:r",
    ("GET", "/api/skills/versions/{}/resources/{}"): "skills:r",
    ("POST", "/api/skills/index"): "skills:rw",
    ("POST", "/api/skills/versions/{}/quality-runs"): "skills:rw",
    ("GET", "/api/skills/versions/{}/quality-runs"): "skills:r",
    ("GET", "/api/skills/quality-runs/{}"): "skills:r",
    ("POST", "/api/skills/search"): "skills:r",
    ("GET", "/api/skills/versions/active"): "skills:r",
    ("GET", "/api/skills/versions/{}/files"): "skills:r",
    ("POST", "/api/skills/versions/{}/activate"): "skills:rw",
}


def test_every_spec_skills_route_is_served_with_its_scope():
    import re

    from fastapi.routing import APIRoute

    from agentmate.api.deps import route_scopes
    from functions.skills.app import app

    served = {}
    for route in app.router.routes:
        original = getattr(route, "original_router", None)
        for r in original.routes if original is not None else [route]:
            if isinstance(r, APIRoute):
                for method in r.methods:
                    served[(method, re.sub(r"\{[^}]*\}", "{}", r.path))] = route_scopes(r.dependant)
    missing = {k: v for k, v in SPEC_SKILLS_ROUTES.items() if served.get(k) != [v]}
    assert not missing, f"spec routes not served with their scope: {missing}"


class _WriteAfterFirstRead:
    """The real database, except that right after the first transaction has begun (its snapshot taken by the
    tenant setting) another connection commits ``write``: a run reading in one repeatable-read snapshot cannot see
    it; a run reading with read committed, or across transactions, would."""

    def __init__(self, db, write):
        self.db, self.write, self.done = db, write, False

    @contextlib.contextmanager
    def tenant(self, account_id, *, snapshot=False, pipeline=False):
        with self.db.tenant(account_id, snapshot=snapshot, pipeline=pipeline) as conn:
            if not self.done:
                self.done = True
                self.write()
            yield conn


def test_a_quality_run_reads_its_inputs_in_one_repeatable_read_snapshot(client, account, owner_url):
    from agentmate.core.db import Database
    from agentmate.core.principal import Principal
    from agentmate.skills.quality import service as quality
    from agentmate.skills.quality.schemas import SkillQualityRunRequest

    h = account.headers("skills:rw")
    source = register(client, h)
    vid = push(client, h, source["id"])["version"]["id"]

    def artifact_deleted_meanwhile() -> None:
        with psycopg.connect(owner_url) as conn:
            conn.execute("DELETE FROM skill_compiled_artifacts WHERE skill_version_id = %s", (vid,))

    db = Database(os.environ["DATABASE_URL"], max_size=2)
    try:
        principal = Principal(
            account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt"
        )
        # When the version's artifact is deleted (committed) after the run's snapshot began
        run = quality.run_quality(
            _WriteAfterFirstRead(db, artifact_deleted_meanwhile),
            principal,
            uuid.UUID(vid),
            SkillQualityRunRequest(),
        )
    finally:
        db.close()
    # Then the run read the artifact as its snapshot had it: present and current
    [check] = [c for c in run.report["lint"] if c["id"] == "compiled_artifact_current"]
    assert check["evidence"]["artifact_present"] is True and check["passed"] is True
    with psycopg.connect(owner_url) as conn:
        gone = conn.execute(
            "SELECT count(*) FROM skill_compiled_artifacts WHERE skill_version_id = %s", (vid,)
        )
        assert gone.fetchone() == (0,)


@pytest.mark.parametrize(("sent", "meant"), [("text", "query"), ("k", "top_k")])
def test_skill_search_names_what_an_unknown_field_likely_meant(client, account, sent, meant):
    body = {"query": "plan a trip", sent: 3 if sent == "k" else "plan a trip"}
    r = client.post("/api/skills/search", json=body, headers=account.headers("skills:r"))
    assert r.status_code == 400, r.text
    [error] = [e for e in r.json()["errors"] if e["field"] == sent]
    assert meant in error["message"], error
