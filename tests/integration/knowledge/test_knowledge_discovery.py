"""K4 over REST: discover classifies every requirement of a skill's compiled knowledge contract against the K0
catalog, and resolution runs freeze what an execution selected, with the trust boundary spec/001 gives each
field."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Forbidden

from .k4 import knowledge_base, requirement, skill_version

BILLING = (
    "name: Billing FAQ\ndescription: How billing works\ncapabilities: [billing, refunds]\nlanguage: en\n"
)
BILLING_ZH = "name: 账单 FAQ\ncapabilities: [billing]\nlanguages: [zh]\n"
OPS = "name: Ops runbooks\ncapabilities: [operations]\nlanguages: [en]\n"
BARE = "name: Bare notes\nlanguages: [en]\n"
BOTH = ("knowledge:r", "skills:r")
RECORD = ("knowledge:rw", "skills:r")


def discover(client, account, version_id, **body):
    return client.post(
        "/api/knowledge/discover",
        json={"skill_version_id": version_id, **body},
        headers=account.headers(*BOTH),
    )


def record(client, account, body, headers=None):
    return client.post("/api/knowledge/resolutions", json=body, headers=headers or account.headers(*RECORD))


def run_body(version_id, fingerprint, **kw):
    return {
        "skill_version_id": version_id,
        "requirement_id": "billing-docs",
        "discovery_fingerprint": fingerprint,
        "discovery_status": "matched",
        **kw,
    }


# --- discover: every status with data made for it ----------------------------------------------------------------


def test_discover_matches_ranks_and_spells_out_the_matched_terms(client, account):
    # Given an English and a Chinese billing collection and an unrelated one
    en = knowledge_base(account, "product/billing", BILLING)
    zh = knowledge_base(account, "product/billing-zh", BILLING_ZH)
    knowledge_base(account, "platform/ops", OPS)
    vid = skill_version(
        client,
        account,
        {
            "requirements": [
                requirement(
                    match={
                        "capabilities": ["billing", "refunds"],
                        "languages": ["en", "zh"],
                        "domains": ["product"],
                    },
                    retrieval={"max_knowledge_bases": 2, "top_k_per_base": 4, "citations": "required"},
                )
            ]
        },
    )
    # When the skill's contract is discovered
    r = discover(client, account, vid)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "private, no-store"
    out = r.json()
    (req,) = out["requirements"]
    # Then both billing collections match, the one overlapping more terms first, terms spelled out
    assert (req["status"], req["candidates_total"]) == ("matched", 2)
    assert [(c["source_id"], c["score"]) for c in req["candidates"]] == [
        (en["source_id"], 4),
        (zh["source_id"], 3),
    ]
    assert req["candidates"][0]["matched"] == {
        "capabilities": ["billing", "refunds"],
        "languages": ["en"],
        "domain": "product",
    }
    assert req["candidates"][0]["languages"] == ["en"]  # the singular language folded into languages
    assert req["candidates"][0]["revision_id"] == en["revision_id"]
    assert req["retrieval"] == {
        "max_knowledge_bases": 2,
        "top_k_per_base": 4,
        "freshness": "active",
        "citations": "required",
    }
    assert out["catalog_size"] == 3 and len(out["discovery_fingerprint"]) == 64
    assert out["contract_identity"].startswith("mode=discover;req(billing-docs,")


def test_discover_is_ambiguous_beyond_max_knowledge_bases_with_the_contracts_guidance(client, account):
    knowledge_base(account, "product/billing", BILLING)
    knowledge_base(account, "product/billing-zh", BILLING_ZH)
    vid = skill_version(
        client,
        account,
        {
            "requirements": [
                requirement(
                    match={"capabilities": ["billing"]},
                    retrieval={"max_knowledge_bases": 1},
                    fallback={"on_ambiguous": "ask_user"},
                )
            ]
        },
    )
    (req,) = discover(client, account, vid).json()["requirements"]
    assert (req["status"], req["guidance"], req["candidates_total"]) == ("ambiguous", "ask_user", 2)


def test_discover_no_metadata_match_tells_nothing_fits_from_nobody_declares_capabilities(
    client, account, other_account
):
    # Given collections that declare capabilities, none of them the wanted one
    knowledge_base(account, "platform/ops", OPS)
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    (req,) = discover(client, account, vid).json()["requirements"]
    assert (req["status"], req["undeclared"], req["candidates"]) == ("no_metadata_match", [], [])
    assert req["note"].startswith("nothing fits")
    # Given an account whose manifests declare no capabilities at all
    knowledge_base(other_account, "notes/bare", BARE)
    vid2 = skill_version(
        client,
        other_account,
        {"requirements": [requirement(match={"capabilities": ["billing"]}, required=True)]},
    )
    (req2,) = discover(client, other_account, vid2).json()["requirements"]
    assert (req2["status"], req2["undeclared"], req2["guidance"]) == (
        "no_metadata_match",
        ["capabilities"],
        "ask_user",
    )
    assert "declares capabilities at all" in req2["note"]


def test_discover_without_any_knowledge_source_is_no_authorized_knowledge(client, account):
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    out = discover(client, account, vid).json()
    assert (out["catalog_size"], out["requirements"][0]["status"]) == (0, "no_authorized_knowledge")


def test_discover_pinned_resolved_and_pinned_missing(client, account):
    kb = knowledge_base(account, "product/billing", BILLING)
    ok = skill_version(
        client,
        account,
        {"mode": "pinned", "requirements": [requirement(pinned=[{"source_id": kb["source_id"]}])]},
    )
    (req,) = discover(client, account, ok).json()["requirements"]
    assert (req["status"], [c["source_id"] for c in req["candidates"]]) == (
        "pinned_resolved",
        [kb["source_id"]],
    )
    missing = skill_version(
        client,
        account,
        {
            "mode": "pinned",
            "requirements": [
                requirement(pinned=[{"source_name": kb["name"]}, {"source_name": "retired-kb"}])
            ],
        },
    )
    (req,) = discover(client, account, missing).json()["requirements"]
    assert (req["status"], [p["resolved"] for p in req["pins"]]) == ("pinned_missing", [True, False])


def test_scoped_discover_is_501(client, account):
    vid = skill_version(
        client,
        account,
        {
            "mode": "scoped_discover",
            "scope": {"tags": ["approved"]},
            "requirements": [requirement(match={"capabilities": ["billing"]})],
        },
    )
    r = discover(client, account, vid)
    assert r.status_code == 501 and "scoped_discover" in r.json()["detail"]


def test_discover_refuses_unknown_versions_requirements_and_versions_without_a_contract(client, account):
    r = discover(client, account, str(uuid.uuid4()))
    assert (r.status_code, r.json()["errors"][0]["field"]) == (400, "skill_version_id")
    bare = skill_version(client, account, None)
    r = discover(client, account, bare)
    assert (r.status_code, r.json()["errors"][0]["field"]) == (400, "skill_version_id")
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    r = discover(client, account, vid, requirement_id="nope")
    assert r.status_code == 400 and r.json()["errors"][0] == {
        "field": "requirement_id",
        "message": "is not a requirement of this skill version's knowledge contract",
        "allowed": ["billing-docs"],
    }
    r = client.post(
        "/api/knowledge/discover",
        json={"skill_version_id": vid, "contract": {}},
        headers=account.headers(*BOTH),
    )
    assert r.status_code == 400 and "compiled skill version" in r.text


def test_the_fingerprint_is_stable_and_follows_the_catalog(client, account):
    kb = knowledge_base(account, "product/billing", BILLING)
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    first = discover(client, account, vid).json()["discovery_fingerprint"]
    assert discover(client, account, vid).json()["discovery_fingerprint"] == first
    filtered = discover(client, account, vid, requirement_id="billing-docs").json()["discovery_fingerprint"]
    assert filtered != first
    # When the card changes (a new package becomes the active revision), Then the fingerprint changes
    r = client.post(
        f"/api/knowledge/sources/{kb['source_id']}/snapshots",
        json={
            "files": [{"path": "KNOWLEDGE.yaml", "content": BILLING}, {"path": "docs/b.md", "content": "B"}]
        },
        headers=account.headers("knowledge:rw"),
    )
    assert r.status_code == 201, r.text
    assert discover(client, account, vid).json()["discovery_fingerprint"] != first


# --- resolution runs -------------------------------------------------------------------------------------------


def _discovered(client, account):
    kb = knowledge_base(account, "product/billing", BILLING)
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    out = discover(client, account, vid).json()
    return kb, vid, out


def test_a_run_is_recorded_with_server_filled_identity_and_verified_selection(client, account):
    kb, vid, out = _discovered(client, account)
    body = run_body(
        vid,
        out["discovery_fingerprint"],
        session_id="task-1",
        candidates=[{"source_id": kb["source_id"], "rank": 1, "score": 1}],
        selected=[{"source_id": kb["source_id"]}],
        retrieved=[{"source_id": kb["source_id"], "path": "docs/a.md", "chunk_id": "c1", "score": 0.8}],
        citations=[{"source_id": kb["source_id"], "path": "docs/a.md", "heading_path": ["A"]}],
        selection_reason="only billing collection",
        confidence=0.9,
    )
    r = record(client, account, body)
    assert r.status_code == 201, r.text
    run = r.json()
    assert run["contract_identity"] == out["contract_identity"] and run["fingerprint_current"] is True
    assert run["selected"] == [
        {
            "source_id": kb["source_id"],
            "source_name": kb["name"],
            "revision_id": kb["revision_id"],
            "build_id": None,
        }
    ]
    assert [{k: v for k, v in c.items() if v is not None} for c in run["citations"]] == [
        {"source_id": kb["source_id"], "path": "docs/a.md", "heading_path": ["A"]}
    ]
    got = client.get(f"/api/knowledge/resolutions/{run['id']}", headers=account.headers("knowledge:r"))
    assert got.status_code == 200 and got.json() == run
    assert got.headers["cache-control"] == "private, no-store"


def test_an_empty_selection_is_a_run_worth_recording(client, account):
    vid = skill_version(client, account, {"requirements": [requirement(match={"capabilities": ["billing"]})]})
    out = discover(client, account, vid).json()
    r = record(
        client,
        account,
        run_body(
            vid,
            out["discovery_fingerprint"],
            discovery_status="no_authorized_knowledge",
            selection_reason="proceeded per fallback",
        ),
    )
    assert r.status_code == 201 and r.json()["selected"] == []
    # A fingerprint that discovery never served is kept, and marked as not current
    r = record(client, account, run_body(vid, "0" * 64, discovery_status="no_authorized_knowledge"))
    assert r.status_code == 201 and r.json()["fingerprint_current"] is False


def test_the_trust_boundary_refuses_foreign_bases_unknown_requirements_and_server_fields(
    client, account, other_account
):
    kb, vid, out = _discovered(client, account)
    foreign = knowledge_base(other_account, "product/billing", BILLING)
    fp = out["discovery_fingerprint"]
    cases = [
        (run_body(vid, fp, selected=[{"source_id": foreign["source_id"]}]), "selected[0].source_id"),
        (
            run_body(
                vid, fp, selected=[{"source_id": kb["source_id"], "revision_id": foreign["revision_id"]}]
            ),
            "selected[0].revision_id",
        ),
        (
            run_body(vid, fp, selected=[{"source_id": kb["source_id"], "build_id": str(uuid.uuid4())}]),
            "selected[0].build_id",
        ),
        (
            run_body(vid, fp, selected=[{"source_id": kb["source_id"]}, {"source_id": kb["source_id"]}]),
            "selected[1].source_id",
        ),
        (run_body(vid, fp, requirement_id="not-in-contract"), "requirement_id"),
        ({**run_body(vid, fp), "contract_identity": "mode=discover"}, "contract_identity"),
        (run_body(vid, fp, discovery_status="found"), "discovery_status"),
        (run_body(vid, "abc"), "discovery_fingerprint"),
        (run_body(vid, fp, retrieved=[{"path": "docs/a.md", "content": "the body"}]), "retrieved[0].content"),
        (run_body(str(uuid.uuid4()), fp), "skill_version_id"),
    ]
    for body, field in cases:
        r = record(client, account, body)
        assert r.status_code == 400, (field, r.text)
        assert field in [e["field"] for e in r.json()["errors"]], (field, r.json())
    r = record(client, account, run_body(vid, fp, requirement_id="nope"))
    assert r.json()["errors"][0]["allowed"] == ["billing-docs"]
    listed = client.get("/api/knowledge/resolutions", headers=account.headers("knowledge:r")).json()
    assert listed["total"] == 0  # nothing was stored by any refused request


def test_oversized_echoes_are_refused(client, account):
    kb, vid, out = _discovered(client, account)
    fp = out["discovery_fingerprint"]
    too_many = [{"source_id": kb["source_id"]} for _ in range(257)]
    r = record(client, account, run_body(vid, fp, candidates=too_many))
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "candidates"
    long_ref = [{"path": "p" * 513}]
    r = record(client, account, run_body(vid, fp, citations=long_ref))
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "citations[0].path"
    # Within every per-entry bound, but more than 256 KiB together
    big = [{"path": "p" * 500, "chunk_id": "c" * 500} for _ in range(256)]
    r = record(client, account, run_body(vid, fp, retrieved=big, citations=big))
    assert r.status_code == 413 and "more than 262144" in r.json()["detail"]
    r = record(client, account, run_body(vid, fp, selection_reason="x" * 2001))
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "selection_reason"


def test_idempotent_replay_returns_the_original_and_a_disagreeing_replay_is_409(client, account):
    kb, vid, out = _discovered(client, account)
    body = run_body(
        vid, out["discovery_fingerprint"], selected=[{"source_id": kb["source_id"]}], idempotency_key="run-1"
    )
    first = record(client, account, body)
    again = record(client, account, body)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json() and again.headers["idempotent-replay"] == "true"
    differs = record(client, account, {**body, "confidence": 0.5})
    assert differs.status_code == 409
    # The header spelling is the same key
    header = record(
        client,
        account,
        {k: v for k, v in body.items() if k != "idempotency_key"},
        headers={**account.headers(*RECORD), "Idempotency-Key": "run-1"},
    )
    assert (header.status_code, header.json()["id"]) == (200, first.json()["id"])
    listed = client.get("/api/knowledge/resolutions", headers=account.headers("knowledge:r")).json()
    assert listed["total"] == 1


def test_list_summaries_filter_by_version_session_and_source_newest_first(client, account):
    kb, vid, out = _discovered(client, account)
    other_kb = knowledge_base(account, "product/other", "name: Other\ncapabilities: [billing]\n")
    fp = out["discovery_fingerprint"]
    ids = []
    for session, selected in (("s1", [kb]), ("s2", [kb, other_kb]), ("s1", [])):
        r = record(
            client,
            account,
            run_body(
                vid,
                fp,
                session_id=session,
                selected=[{"source_id": k["source_id"]} for k in selected],
                retrieved=[{"path": "docs/a.md"}],
            ),
        )
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    h = account.headers("knowledge:r")
    page = client.get("/api/knowledge/resolutions", headers=h).json()
    assert [i["id"] for i in page["items"]] == ids[::-1] and page["total"] == 3
    assert [(i["selected_count"], i["retrieved_count"], i["citation_count"]) for i in page["items"]] == [
        (0, 1, 0),
        (2, 1, 0),
        (1, 1, 0),
    ]
    assert "selected" not in page["items"][0]
    by_source = client.get(
        "/api/knowledge/resolutions", params={"source_id": other_kb["source_id"]}, headers=h
    )
    assert [i["id"] for i in by_source.json()["items"]] == [ids[1]]
    by_session = client.get("/api/knowledge/resolutions", params={"session_id": "s1"}, headers=h).json()
    assert [i["id"] for i in by_session["items"]] == [ids[2], ids[0]]
    by_version = client.get(
        "/api/knowledge/resolutions", params={"skill_version_id": str(uuid.uuid4())}, headers=h
    )
    assert by_version.json()["total"] == 0
    paged = client.get("/api/knowledge/resolutions", params={"limit": 1, "offset": 1}, headers=h).json()
    assert ([i["id"] for i in paged["items"]], paged["total"]) == ([ids[1]], 3)
    assert client.get(f"/api/knowledge/resolutions/{uuid.uuid4()}", headers=h).status_code == 404


def test_runs_are_append_only_and_pin_their_targets(client, account, owner_url):
    kb, vid, out = _discovered(client, account)
    run = record(
        client,
        account,
        run_body(vid, out["discovery_fingerprint"], selected=[{"source_id": kb["source_id"]}]),
    ).json()
    # The application role can neither rewrite nor remove a run
    db = get_database()
    for sql in (
        "UPDATE knowledge_resolution_runs SET confidence = 0 WHERE id = %s",
        "DELETE FROM knowledge_resolution_runs WHERE id = %s",
    ):
        with pytest.raises(Forbidden), db.tenant(uuid.UUID(account.account_id)) as conn:
            conn.execute(sql, (run["id"],))
    # Deleting the selected knowledge source is refused with a 409, and nothing is deleted
    r = client.delete(f"/api/knowledge/sources/{kb['source_id']}", headers=account.headers("knowledge:rw"))
    assert r.status_code == 409 and "resolution run" in r.json()["detail"]
    assert (
        client.get(f"/api/knowledge/resolutions/{run['id']}", headers=account.headers("knowledge:r")).json()
        == run
    )
    # and the foreign keys refuse deleting the source or the skill version underneath anyway
    with psycopg.connect(owner_url) as conn:
        for sql, arg in (
            ("DELETE FROM knowledge_sources WHERE id = %s", kb["source_id"]),
            ("DELETE FROM skill_versions WHERE id = %s", vid),
        ):
            with pytest.raises(psycopg.errors.ForeignKeyViolation), conn.transaction():
                conn.execute(sql, (arg,))
        # Account deletion cascades through the runs
        conn.execute("DELETE FROM accounts WHERE id = %s", (account.account_id,))
        left = conn.execute(
            "SELECT count(*) FROM knowledge_resolution_runs WHERE account_id = %s", (account.account_id,)
        ).fetchone()
        assert left == (0,)


# --- pinned and selected wiki builds are verified against the account's builds ------------------------------------


def _builds(account, other_account):
    """A source with a usable build, a failed build and a second revision; a usable build of another source of
    the same account; and a usable build in another account."""
    from tests.integration.knowledge_quality.wikibuilds import actor_of, make_build

    kb = knowledge_base(account, "product/billing", BILLING)
    other = knowledge_base(account, "platform/ops", OPS)
    foreign = knowledge_base(other_account, "product/billing", BILLING)
    mine = actor_of(account)
    rev = uuid.UUID(kb["revision_id"])
    return kb, {
        "usable": make_build(mine, uuid.UUID(kb["source_id"]), rev, []),
        "failed": make_build(mine, uuid.UUID(kb["source_id"]), rev, [], status="failed", activate=False),
        "other_source": make_build(mine, uuid.UUID(other["source_id"]), uuid.UUID(other["revision_id"]), []),
        "other_account": make_build(
            actor_of(other_account), uuid.UUID(foreign["source_id"]), uuid.UUID(foreign["revision_id"]), []
        ),
    }


def test_a_pinned_build_resolves_only_as_a_usable_build_of_that_source_in_this_account(
    client, account, other_account
):
    kb, builds = _builds(account, other_account)
    pins = [{"source_id": kb["source_id"], "build_id": str(builds["usable"])}]
    vid = skill_version(client, account, {"mode": "pinned", "requirements": [requirement(pinned=pins)]})
    (req,) = discover(client, account, vid).json()["requirements"]
    assert req["status"] == "pinned_resolved", req
    (pin,) = req["pins"]
    assert (pin["resolved"], pin["resolved_build_id"], pin["resolved_source_id"]) == (
        True,
        str(builds["usable"]),
        kb["source_id"],
    )
    assert [c["source_id"] for c in req["candidates"]] == [kb["source_id"]]
    expected_note = {
        "failed": "is failed with check failed",
        "other_source": "another knowledge source",
        "other_account": "no wiki build with id",
        "not-a-uuid": "is not a wiki build id",
    }
    for case, words in expected_note.items():
        build = str(builds[case]) if case in builds else case
        vid = skill_version(
            client,
            account,
            {
                "mode": "pinned",
                "requirements": [requirement(pinned=[{"source_name": kb["name"], "build_id": build}])],
            },
        )
        (req,) = discover(client, account, vid).json()["requirements"]
        (pin,) = req["pins"]
        assert (req["status"], pin["resolved"], pin["resolved_build_id"]) == (
            "pinned_missing",
            False,
            None,
        ), case
        assert words in pin["note"] and words in req["note"], (case, pin["note"])
        assert req["candidates"] == [], case


def test_a_run_records_a_selected_build_of_the_selected_source_and_refuses_any_other(
    client, account, other_account
):
    kb, builds = _builds(account, other_account)
    _, vid, out = _discovered(client, account)
    fp = out["discovery_fingerprint"]
    r = record(
        client,
        account,
        run_body(vid, fp, selected=[{"source_id": kb["source_id"], "build_id": str(builds["usable"])}]),
    )
    assert r.status_code == 201, r.text
    assert r.json()["selected"] == [
        {
            "source_id": kb["source_id"],
            "source_name": kb["name"],
            "revision_id": kb["revision_id"],
            "build_id": str(builds["usable"]),
        }
    ]
    newer = knowledge_base(account, "product/billing", BILLING + "profile: faq\n")  # a second revision
    assert newer["revision_id"] != kb["revision_id"]
    # the build's own revision is the default, not the (newer) active one
    r = record(
        client,
        account,
        run_body(vid, fp, selected=[{"source_id": kb["source_id"], "build_id": str(builds["usable"])}]),
    )
    assert r.status_code == 201 and r.json()["selected"][0]["revision_id"] == kb["revision_id"], r.text
    refused = {
        "failed": "is failed with check failed",
        "other_source": "another knowledge source",
        "other_account": "unknown wiki build in this account",
    }
    for case, words in refused.items():
        r = record(
            client,
            account,
            run_body(vid, fp, selected=[{"source_id": kb["source_id"], "build_id": str(builds[case])}]),
        )
        assert r.status_code == 400, (case, r.text)
        (err,) = [e for e in r.json()["errors"] if e["field"] == "selected[0].build_id"]
        assert words in err["message"], (case, err)
    r = record(
        client,
        account,
        run_body(
            vid,
            fp,
            selected=[
                {
                    "source_id": kb["source_id"],
                    "revision_id": newer["revision_id"],
                    "build_id": str(builds["usable"]),
                }
            ],
        ),
    )
    assert r.status_code == 400 and "compiled revision" in r.text, r.text
    r = record(
        client, account, run_body(vid, fp, selected=[{"source_id": kb["source_id"], "build_id": "nope"}])
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "selected[0].build_id", r.text
