"""The wiki quality routes over REST (the local dispatcher = the knowledge Lambda's app): statuses, bodies,
problem+json for bad input, Cache-Control, and the validation loop an agent runs (answer → report → summary)."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import get_database
from agentmate.retrieval.service import record_query
from tests.integration.knowledge_quality.wikibuilds import PageSpec, actor_of, make_build, make_source, push

PAGE = "wiki/refunds.md"


def _kb(account, name="routes-kb"):
    actor = actor_of(account)
    source = make_source(actor, name)
    revision = push(
        actor,
        source,
        {
            "docs/refunds.md": "# Refunds\n\nRefunds take 30 days.\n",
            "docs/unused.md": "# Unused\n\nNobody cites this.\n",
        },
    )
    build = make_build(
        actor,
        source,
        revision,
        [
            PageSpec("wiki/index.md", "index", links=[(PAGE, "references")]),
            PageSpec(PAGE, "summary", "# Refunds\n\nRefunds take 30 days.\n", cites=["docs/refunds.md"]),
        ],
    )
    return source, build


def test_lint_runs_are_created_listed_and_read_back(client, account):
    source, build = _kb(account)
    h = account.headers("knowledge:rw")
    r = client.post("/api/knowledge/wiki/lint", json={"source_id": str(source)}, headers=h)
    assert r.status_code == 201, r.text
    assert r.headers["cache-control"] == "private, no-store"
    run = r.json()["run"]
    assert (run["build_id"], run["pages_examined"]) == (str(build), 2)
    assert {(f["rule"], f["page_path"], f["related_path"]) for f in r.json()["findings"]} == {
        ("orphan_page", PAGE, None),
        ("uncovered_document", None, "docs/unused.md"),
    }
    read = account.headers("knowledge:r")
    listed = client.get(
        "/api/knowledge/wiki/lint/runs", params={"source_id": str(source)}, headers=read
    ).json()
    assert (listed["total"], listed["items"][0]["id"]) == (1, run["id"])
    got = client.get(f"/api/knowledge/wiki/lint/runs/{run['id']}", headers=read)
    assert got.status_code == 200 and got.json()["run"] == run
    # Bad input: a missing or malformed source_id names the field; an unknown field is refused with a hint
    bad = client.post("/api/knowledge/wiki/lint", json={"source_id": "nope", "build_id": "x"}, headers=h)
    assert bad.status_code == 400 and bad.headers["content-type"].startswith("application/problem+json")
    assert {e["field"] for e in bad.json()["errors"]} == {"source_id", "build_id"}
    assert client.get("/api/knowledge/wiki/lint/runs/not-a-uuid", headers=read).status_code in (400, 422)
    assert client.get(f"/api/knowledge/wiki/lint/runs/{UUID(int=1)}", headers=read).status_code == 404
    # A read-only key may read but not lint
    assert (
        client.post("/api/knowledge/wiki/lint", json={"source_id": str(source)}, headers=read).status_code
        == 403
    )


def test_a_review_request_answers_202_and_the_review_reads_back_with_the_standing_warning(client, account):
    _, build = _kb(account, "routes-review-kb")
    h = account.headers("knowledge:rw")
    r = client.get(f"/api/knowledge/builds/{build}/review", headers=account.headers("knowledge:r"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["review"], body["findings"], body["review_status"]) == (None, [], "skipped")
    assert "check is the only gate" in body["warning"] and "not been reviewed" in body["warning"]
    # The test runtime configures no reviewer: an operator gap, 501, and nothing queued
    r = client.post(f"/api/knowledge/builds/{build}/review", headers=h)
    assert r.status_code == 501, r.text
    assert client.post(f"/api/knowledge/builds/{UUID(int=3)}/review", headers=h).status_code == 404


def test_the_validation_loop_answer_then_report_then_summary(client, account):
    # Given an answer that came from a wiki search (its query_id) ...
    source, build = _kb(account, "routes-signals-kb")
    a = UUID(account.account_id)
    with get_database().tenant(a) as conn:
        query_id = record_query(
            conn,
            a,
            user_id=None,
            key_id=None,
            namespace="knowledge_wiki",
            query="how long do refunds take",
            filters={},
            top_k=5,
            hits=[{"source_id": str(source), "path": PAGE}],
            degraded=[],
        )
    h = account.headers("knowledge:rw")
    body = {
        "source_id": str(source),
        "signal": "question_repeated",
        "query_id": str(query_id),
        "page_path": PAGE,
        "idempotency_key": "task-7:repeat",
    }
    # ... when the agent reports that the question came back
    r = client.post("/api/knowledge/validation/signals", json=body, headers=h)
    assert r.status_code == 201, r.text
    signal = r.json()
    assert (signal["cause"], signal["origin"], signal["direction"], signal["build_id"]) == (
        "wiki_synthesis",
        "reported",
        "negative",
        str(build),
    )
    # A retry is recorded once (200, the original); the same key with another body is a 409
    again = client.post("/api/knowledge/validation/signals", json=body, headers=h)
    assert (again.status_code, again.json()["id"], again.headers["idempotent-replay"]) == (
        200,
        signal["id"],
        "true",
    )
    conflict = client.post(
        "/api/knowledge/validation/signals", json={**body, "signal": "answer_adopted"}, headers=h
    )
    assert conflict.status_code == 409
    # Then the summary counts it, by page and by cause
    read = account.headers("knowledge:r")
    s = client.get(
        "/api/knowledge/validation/summary", params={"source_id": str(source)}, headers=read
    ).json()
    assert (s["total"], s["negative"], s["reported"]) == (1, 1, 1)
    assert s["by_page"] == [{"key": PAGE, "positive": 0, "negative": 1}]
    listed = client.get("/api/knowledge/validation/signals", params={"cause": "wiki_synthesis"}, headers=read)
    assert [i["id"] for i in listed.json()["items"]] == [signal["id"]]
    patterns = client.get("/api/knowledge/validation/skill-patterns", headers=read).json()
    assert patterns["items"] == [] and patterns["note"]
    sweep = client.post("/api/knowledge/validation/sweep", json={"idle_days": 30}, headers=h)
    assert sweep.status_code == 200 and sweep.json()["recorded"] == 0
    assert client.post("/api/knowledge/validation/sweep", headers=h).json()["idle_days"] == 14


def test_bad_signal_reports_name_every_field_and_list_their_allowed_values(client, account):
    source, _ = _kb(account, "routes-bad-kb")
    h = account.headers("knowledge:rw")
    r = client.post(
        "/api/knowledge/validation/signals",
        headers=h,
        json={
            "source_id": str(source),
            "signal": "never_retrieved",
            "direction": "positive",
            "detail": "x" * 2001,
        },
    )
    assert r.status_code == 400
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert set(errors) == {"signal", "direction", "detail"}
    assert (
        "answer_adopted" in errors["signal"]["allowed"]
        and "never_retrieved" not in errors["signal"]["allowed"]
    )
    r = client.post(
        "/api/knowledge/validation/signals",
        headers=h,
        json={
            "source_id": str(source),
            "signal": "answer_adopted",
            "query_id": str(UUID(int=4)),
            "page_path": "nope.md",
        },
    )
    assert r.status_code == 400 and {e["field"] for e in r.json()["errors"]} == {"query_id", "page_path"}
    r = client.get(
        "/api/knowledge/validation/signals",
        params={"cause": "bad_luck"},
        headers=account.headers("knowledge:r"),
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "cause"
    assert client.post("/api/knowledge/validation/sweep", json={"idle_days": 0}, headers=h).status_code == 400
