"""Findings of a first-time-agent trial (issue 23) in the skills area: publish indexes on request, unknown
frontmatter keys are compile warnings, a push that could not index says why, ``body`` is hinted as content."""

from __future__ import annotations

from tests.integration.test_skills_registry import register

GOOD = "---\nname: trip-planner\ndescription: Plan multi-city trips with budgets\n---\n# Trips\n"
TYPO = "---\nname: trip-planner\ndescription: Plan trips\ntrigers: [plan a trip]\nzzqqxx: 1\n---\n# Trips\n"


def _publish(client, h, **over) -> dict:
    body = {"skill_name": "trip-planner", "version": "1", "content": GOOD, **over}
    r = client.post("/api/skills/versions", json=body, headers=h)
    assert r.status_code in (200, 201), r.text
    return r.json()


def _search(client, h) -> list[dict]:
    r = client.post("/api/skills/search", json={"query": "plan multi-city trips"}, headers=h)
    assert r.status_code == 200, r.text
    return r.json()["items"]


def test_publish_with_activate_and_index_makes_the_skill_searchable(client, account):
    h = account.headers("skills:rw")
    # When a compiling body is published with activate and index
    out = _publish(client, h, activate=True, index=True)
    # Then it is active, indexed (reported in index), and skill search finds it at once
    assert out["activated"] is True and out["index"]["status"] == "indexed", out
    assert out["not_indexed_reason"] is None
    assert [hit["skill_name"] for hit in _search(client, h)] == ["trip-planner"]


def test_publish_without_index_does_not_index_and_says_nothing_about_it(client, account):
    h = account.headers("skills:rw")
    out = _publish(client, h, activate=True)
    assert (out["index"], out["not_indexed_reason"]) == (None, None)
    assert _search(client, h) == []


def test_publish_with_index_but_not_active_says_why_it_was_not_indexed(client, account):
    h = account.headers("skills:rw")
    out = _publish(client, h, index=True)
    assert out["index"] is None and "active" in out["not_indexed_reason"], out
    # And one whose compile failed names the compile
    out = _publish(client, h, version="2", content="# Trips\n", activate=True, index=True)
    assert out["index"] is None and "compile" in out["not_indexed_reason"], out


def test_unknown_frontmatter_keys_are_compile_warnings_with_a_likely_meant_key(client, account):
    h = account.headers("skills:rw")
    # A publish of a SKILL.md with a misspelt key compiles, and warns about it
    out = _publish(client, h, content=TYPO, activate=True)
    assert out["compile"]["status"] == "compiled" and out["compile"]["problems"] == []
    warnings = out["compile"]["warnings"]
    [typo] = [w for w in warnings if "trigers" in w]
    assert "did you mean triggers?" in typo, warnings
    [other] = [w for w in warnings if "zzqqxx" in w]
    assert "did you mean" not in other
    # The compile route reports the same warnings
    r = client.post("/api/skills/compile", json={"skill_version_id": out["id"]}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["items"][0]["warnings"] == warnings
    # And a clean SKILL.md has none
    assert _publish(client, h, version="2", content=GOOD + "v2\n")["compile"]["warnings"] == []


def test_a_snapshot_push_reports_unknown_frontmatter_keys(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    r = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={"files": [{"path": "SKILL.md", "content": TYPO}]},
        headers=h,
    )
    assert r.status_code == 201, r.text
    assert any("did you mean triggers?" in w for w in r.json()["compile"]["warnings"]), r.json()


def test_a_push_with_index_whose_compile_failed_says_why_it_was_not_indexed(client, account):
    h = account.headers("skills:rw")
    source = register(client, h)
    r = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={"files": [{"path": "SKILL.md", "content": "---\nname: Not_Valid\n---\nbody\n"}], "index": True},
        headers=h,
    )
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["index"] is None and "compile" in out["not_indexed_reason"], out


def test_body_instead_of_content_on_publish_is_hinted(client, account):
    r = client.post(
        "/api/skills/versions",
        json={"skill_name": "trip-planner", "version": "1", "body": GOOD},
        headers=account.headers("skills:rw"),
    )
    assert r.status_code == 400, r.text
    [error] = [e for e in r.json()["errors"] if e["field"] == "body"]
    assert "content" in error["message"] and error["likely_meant"] == "content", error
