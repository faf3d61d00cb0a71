"""Reports through the HTTP API: CRUD, format, source labels, summaries without content, /sources, tenancy."""

from __future__ import annotations

import uuid

SUMMARY_KEYS = {"id", "title", "format", "tags", "source", "source_key_id", "created_at", "updated_at"}


def test_report_crud_round_trip_records_the_creating_key(client, account):
    # Given a key with reports:rw
    h = account.headers("reports:rw")
    key_id = client.get("/api/auth/me", headers=h).json()["key_id"]
    # When a report is created with messy tags and a padded source
    r = client.post(
        "/api/reports",
        json={"title": "Weekly", "content": "# Done\n", "tags": ["Ops", " ops"], "source": "  digest-skill "},
        headers=h,
    )
    assert r.status_code == 201, r.text
    report = r.json()
    # Then defaults and normalisation apply, and the creating key is recorded
    assert report["format"] == "md" and report["tags"] == ["ops"] and report["source"] == "digest-skill"
    assert report["source_key_id"] == key_id and report["content"] == "# Done\n"
    assert set(report) == SUMMARY_KEYS | {"content"}
    # And it reads back, PATCH may change the format and clear the source, and it deletes
    assert client.get(f"/api/reports/{report['id']}", headers=h).json() == report
    r = client.patch(
        f"/api/reports/{report['id']}",
        json={"format": "html", "content": "<p>x</p>", "source": None},
        headers=h,
    )
    assert r.status_code == 200, r.text
    assert (r.json()["format"], r.json()["content"], r.json()["source"]) == ("html", "<p>x</p>", None)
    assert r.json()["title"] == "Weekly" and r.json()["source_key_id"] == key_id
    assert client.delete(f"/api/reports/{report['id']}", headers=h).status_code == 204
    assert client.get(f"/api/reports/{report['id']}", headers=h).status_code == 404
    assert client.delete(f"/api/reports/{report['id']}", headers=h).status_code == 404


def test_a_jwt_created_report_has_no_source_key(client, account):
    r = client.post("/api/reports", json={"title": "by hand"}, headers=account.jwt_headers)
    assert r.status_code == 201 and r.json()["source_key_id"] is None and r.json()["source"] is None


def test_list_omits_content_and_filters_by_tag_source_and_text(client, account):
    h = account.headers("reports:rw")
    client.post(
        "/api/reports",
        json={"title": "Disk usage", "content": "volume FULL", "tags": ["Infra"], "source": "monitor"},
        headers=h,
    )
    client.post(
        "/api/reports",
        json={"title": "Sales", "content": "up 10%", "tags": ["biz", "weekly"], "source": "crm-bot"},
        headers=h,
    )
    client.post("/api/reports", json={"title": "Full moon", "content": "", "tags": ["weekly"]}, headers=h)

    def titles(**params):
        r = client.get("/api/reports", params=params, headers=h)
        assert r.status_code == 200, r.text
        assert all(set(item) == SUMMARY_KEYS for item in r.json()["items"])
        return [item["title"] for item in r.json()["items"]]

    assert titles() == ["Full moon", "Sales", "Disk usage"]
    assert titles(tag=" INFRA ") == ["Disk usage"]
    assert titles(tags="Weekly,BIZ") == ["Sales"]
    assert titles(source="crm-bot") == ["Sales"]
    assert titles(source="CRM-BOT") == []
    assert titles(q="full") == ["Full moon", "Disk usage"]
    assert titles(q="10%") == ["Sales"]
    assert titles(q="  ", tag="", source="") == ["Full moon", "Sales", "Disk usage"]
    assert titles(q="full", tag="weekly") == ["Full moon"]


def test_sources_lists_labels_with_counts_most_used_first(client, account, other_account):
    h = account.headers("reports:rw")
    for source in ("alpha", "beta", "beta", None, "beta", "alpha", "gamma"):
        client.post("/api/reports", json={"title": "r", "source": source}, headers=h)
    client.post("/api/reports", json={"title": "theirs", "source": "zeta"}, headers=other_account.jwt_headers)
    r = client.get("/api/reports/sources", headers=account.headers("reports:r"))
    assert r.status_code == 200, r.text
    assert r.json()["items"] == [
        {"source": "beta", "count": 3},
        {"source": "alpha", "count": 2},
        {"source": "gamma", "count": 1},
    ]
    assert r.json()["total"] == 3
    r = client.get("/api/reports/sources", params={"limit": 1, "offset": 1}, headers=h)
    assert r.json()["items"] == [{"source": "alpha", "count": 2}] and r.json()["total"] == 3


def test_validation_lists_every_bad_field_with_allowed_values(client, account):
    h = account.headers("reports:rw")
    r = client.post(
        "/api/reports",
        json={"title": "", "format": "pdf", "source": "s" * 256, "tags": [1], "public": True},
        headers=h,
    )
    assert r.status_code == 400
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert set(errors) == {"title", "format", "source", "tags[0]", "public"}
    assert errors["format"]["allowed"] == ["md", "html"]
    assert errors["public"]["message"].startswith("unknown field")
    report = client.post("/api/reports", json={"title": "t"}, headers=h).json()
    r = client.patch(
        f"/api/reports/{report['id']}", json={"format": None, "title": None, "source_key_id": None}, headers=h
    )
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == [
        "title",
        "format",
        "source_key_id",
    ]
    r = client.patch(f"/api/reports/{report['id']}", json={"format": None, "title": None}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["title", "format"]


def test_ids_scopes_and_tenancy(client, account, other_account):
    h = account.headers("reports:rw")
    report = client.post("/api/reports", json={"title": "private", "source": "bot"}, headers=h).json()
    assert client.get("/api/reports/not-a-uuid", headers=h).status_code == 400
    assert client.get(f"/api/reports/{uuid.uuid4()}", headers=h).status_code == 404
    assert client.patch(f"/api/reports/{uuid.uuid4()}", json={"title": "x"}, headers=h).status_code == 404
    ro = account.headers("reports:r")
    assert client.get(f"/api/reports/{report['id']}", headers=ro).status_code == 200
    assert client.post("/api/reports", json={"title": "x"}, headers=ro).status_code == 403
    assert client.get("/api/reports", headers=account.headers("notes:r")).status_code == 403
    # Reports are never readable across accounts, and no public listing exists
    oh = other_account.headers("reports:r")
    assert client.get(f"/api/reports/{report['id']}", headers=oh).status_code == 404
    assert client.get("/api/reports", headers=oh).json()["total"] == 0
    assert client.get("/api/reports/sources", headers=oh).json()["items"] == []
    assert client.get("/api/public/reports").status_code == 404


def test_idempotency_key_replays_and_conflicts(client, account):
    h = {**account.headers("reports:rw"), "Idempotency-Key": "report-1"}
    first = client.post("/api/reports", json={"title": "once"}, headers=h)
    again = client.post("/api/reports", json={"title": "once"}, headers=h)
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and again.json() == first.json()
    assert client.post("/api/reports", json={"title": "once", "format": "html"}, headers=h).status_code == 409
    assert client.get("/api/reports", headers=h).json()["total"] == 1
