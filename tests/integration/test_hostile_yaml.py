"""Issue 20 through the HTTP API: hostile KNOWLEDGE.yaml and SKILL.md frontmatter on both snapshot routes, git
sync, direct publish, compile, quality and the account-wide backfill (real Postgres). No answer is a 500; a
pathological glob costs a bounded number of matcher steps."""

from __future__ import annotations

import hashlib

import psycopg
import pytest

KRW = "knowledge:rw"
SRW = "skills:rw"
HOSTILE = [
    ("description: 2024-13-45", "description"),
    ("description: !!int 0x", "description"),
    ("description: !!float abc", "description"),
    ("description: " + "9" * 5000, "description"),
    ("description: !!bool maybe", "description"),
]


def knowledge_source(client, h, path="kb/hostile") -> dict:
    r = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": path},
        headers=h,
    )
    assert r.status_code in (200, 201), r.text
    return r.json()


def push_manifest(client, h, source_id, manifest: str, *extra: dict):
    files = [{"path": "KNOWLEDGE.yaml", "content": manifest}, *extra]
    return client.post(f"/api/knowledge/sources/{source_id}/snapshots", json={"files": files}, headers=h)


def fields(r) -> list[str]:
    return [e["field"] for e in r.json().get("errors", [])]


# -- KNOWLEDGE.yaml ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "field"), HOSTILE)
def test_a_hostile_manifest_scalar_is_a_400_naming_the_field(client, account, line, field):
    h = account.headers(KRW)
    src = knowledge_source(client, h)
    r = push_manifest(client, h, src["id"], f"name: x\n{line}\n", {"path": "a.md", "content": "# A\n"})
    assert r.status_code == 400, r.text
    assert fields(r) == [f"KNOWLEDGE.yaml.{field}"]
    assert "quote it" in r.json()["errors"][0]["message"]


def test_capability_items_longer_than_64_characters_are_a_400_naming_the_item(client, account):
    h = account.headers(KRW)
    src = knowledge_source(client, h)
    r = push_manifest(client, h, src["id"], "name: x\ncapabilities: [faq, '" + "c" * 65 + "']\n")
    assert r.status_code == 400 and fields(r) == ["KNOWLEDGE.yaml.capabilities.1"]


def test_globs_past_the_limits_are_a_400_naming_the_pattern(client, account):
    h = account.headers(KRW)
    src = knowledge_source(client, h)
    globs = ", ".join(f"'{i:03d}" + "*" * 253 + "'" for i in range(16))
    r = push_manifest(client, h, src["id"], f"name: x\ninclude: [{globs}, 'docs/**']\n")
    assert r.status_code == 400 and fields(r) == ["KNOWLEDGE.yaml.include.16"]
    assert "4096 characters" in r.json()["errors"][0]["message"]


def test_the_pathological_glob_of_issue_20_selects_in_bounded_steps(client, account, monkeypatch):
    from agentmate.packages import globs

    counted: list[tuple[int, int]] = []
    real = globs.GlobSet.match

    def match(self, path):
        out = real(self, path)
        counted.append((self.steps, globs.GlobSet.max_steps(path)))
        return out

    monkeypatch.setattr(globs.GlobSet, "match", match)
    h = account.headers(KRW)
    src = knowledge_source(client, h)
    # 60 'a's: the regex translation took 47 s on this one file and stalled /api/health meanwhile
    r = push_manifest(
        client,
        h,
        src["id"],
        "name: x\ninclude: ['*a*a*a*a*a*a*a*ab']\n",
        {"path": "a" * 60, "content": "x"},
        {"path": "a" * 59 + "b", "content": "y"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["revision"]["file_count"] == 2  # the manifest and the one path ending in b
    assert counted and all(steps <= bound for steps, bound in counted)


def test_git_sync_refuses_a_hostile_manifest_scalar_naming_the_field(client, account, monkeypatch, owner_url):
    from tests.integration.knowledge.corpus import loopback_git

    h = account.headers(KRW)
    with loopback_git(monkeypatch) as server:
        server.commit({"kb/KNOWLEDGE.yaml": b"name: x\ndescription: 2024-13-45\n", "kb/a.md": b"# A\n"})
        r = client.post(
            "/api/knowledge/sources",
            json={
                "type": "git",
                "repository_url": server.url("github.test", "acme/kb"),
                "package_path": "kb",
            },
            headers=h,
        )
        assert r.status_code == 201, r.text
        r = client.post(f"/api/knowledge/sources/{r.json()['id']}/sync", json={"ref": "main"}, headers=h)
    assert r.status_code == 400, r.text
    assert fields(r) == ["KNOWLEDGE.yaml.description"]


# -- SKILL.md ----------------------------------------------------------------------------------------------------


def skill(line: str, name: str = "hostile") -> str:
    return f"---\nname: {name}\n{line}\n---\n\nDo the thing.\n"


def skill_source(client, h, path="team/hostile") -> dict:
    r = client.post(
        "/api/skills/sources",
        json={"type": "local", "repository_url": "file:///skills", "package_path": path},
        headers=h,
    )
    assert r.status_code == 201, r.text
    return r.json()


@pytest.mark.parametrize(("line", "field"), HOSTILE)
def test_a_hostile_frontmatter_snapshot_is_kept_with_a_compile_failure_naming_the_field(
    client, account, line, field
):
    h = account.headers(SRW)
    src = skill_source(client, h)
    r = client.post(
        f"/api/skills/sources/{src['id']}/snapshots",
        json={"files": [{"path": "SKILL.md", "content": skill(line)}], "activate": True},
        headers=h,
    )
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["compile"]["status"] == "failed" and out["compile"]["problems"][0].startswith(f"{field}: ")
    assert out["version"]["skill_name"] == "hostile"  # the folder: the frontmatter could not be read


def test_a_hostile_direct_publish_compiles_to_a_recorded_failure(client, account):
    h = account.headers(SRW)
    r = client.post(
        "/api/skills/versions",
        json={"skill_name": "hostile", "version": "1", "content": skill("description: !!int 0x")},
        headers=h,
    )
    assert r.status_code == 201, r.text
    r = client.post("/api/skills/compile", json={"skill_version_id": r.json()["id"]}, headers=h)
    assert r.status_code == 200, r.text
    [item] = r.json()["items"]
    assert item["status"] == "failed" and item["problems"][0].startswith(
        "description: is not a valid YAML int"
    )


def stored_version(owner_url: str, account_id: str, name: str, content: str) -> str:
    """A version written straight into the table, as a version stored before this fix would be."""
    with psycopg.connect(owner_url) as conn:
        return str(
            conn.execute(
                """INSERT INTO skill_versions (account_id, skill_name, version, content, content_hash, is_active,
                   activated_at) VALUES (%s, %s, '0.1', %s, %s, true, now()) RETURNING id""",
                (account_id, name, content, hashlib.sha256(content.encode()).hexdigest()),
            ).fetchone()[0]
        )


def test_a_stored_hostile_version_fails_its_compile_and_quality_run_and_never_the_backfill(
    client, account, owner_url
):
    h = account.headers(SRW)
    good = client.post(
        "/api/skills/versions",
        json={
            "skill_name": "fine",
            "version": "1",
            "activate": True,
            "content": skill("description: fine", "fine"),
        },
        headers=h,
    )
    assert good.status_code == 201, good.text
    bad = stored_version(owner_url, account.account_id, "hostile", skill("description: 2024-13-45"))
    # its own compile: a recorded failure naming the field
    r = client.post("/api/skills/compile", json={"skill_version_id": bad}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["items"][0]["problems"] == [
        "description: is not a valid YAML timestamp (line 3); quote it to keep it as text"
    ]
    with psycopg.connect(owner_url) as conn:
        problems = conn.execute(
            "SELECT problems FROM skill_compile_failures WHERE skill_version_id = %s", (bad,)
        ).fetchone()[0]
    assert problems[0].startswith("description: ")
    # its quality run: frontmatter_valid fails with the problem
    r = client.post(f"/api/skills/versions/{bad}/quality-runs", json={}, headers=h)
    assert r.status_code == 201, r.text
    check = next(c for c in r.json()["report"]["lint"] if c["id"] == "frontmatter_valid")
    assert not check["passed"] and check["evidence"]["problems"][0].startswith("description: ")
    # the account-wide backfill: the good one compiles, the bad one is reported
    r = client.post("/api/skills/compile", json={}, headers=h)
    assert r.status_code == 200, r.text
    report = r.json()
    assert (report["compiled"], report["failed"]) == (1, 1)
    assert {i["skill_name"]: i["status"] for i in report["items"]} == {
        "fine": "compiled",
        "hostile": "failed",
    }
    # the catalog still lists both
    names = {i["skill_name"] for i in client.get("/api/skills/catalog", headers=h).json()["items"]}
    assert names == {"fine", "hostile"}
