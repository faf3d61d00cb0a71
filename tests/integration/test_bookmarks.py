"""Bookmarks through the HTTP API: CRUD, URL validation, read_at, filters, summaries without content, tenancy."""

from __future__ import annotations

import uuid

SUMMARY_KEYS = {
    "id",
    "url",
    "title",
    "summary",
    "tags",
    "source",
    "is_read",
    "read_at",
    "created_at",
    "updated_at",
}


def test_bookmark_crud_round_trip_and_patch_changes_every_field(client, account):
    # Given a key with bookmarks:rw
    h = account.headers("bookmarks:rw")
    # When a bookmark is created with only a URL
    r = client.post("/api/bookmarks", json={"url": " https://example.com/a?b=1 "}, headers=h)
    assert r.status_code == 201, r.text
    bm = r.json()
    # Then it is stored trimmed with unread defaults
    assert bm["url"] == "https://example.com/a?b=1" and bm["is_read"] is False and bm["read_at"] is None
    assert (bm["title"], bm["summary"], bm["content"], bm["tags"], bm["source"]) == ("", "", "", [], None)
    assert set(bm) == SUMMARY_KEYS | {"content"}
    assert client.get(f"/api/bookmarks/{bm['id']}", headers=h).json() == bm
    # And PATCH can change every field, content and source included
    change = {
        "url": "http://example.org/",
        "title": "Ex",
        "summary": "s",
        "content": "page text",
        "tags": ["Read-Later"],
        "source": "crawler",
    }
    r = client.patch(f"/api/bookmarks/{bm['id']}", json=change, headers=h)
    assert r.status_code == 200, r.text
    assert {k: r.json()[k] for k in change} == {**change, "tags": ["read-later"]}
    r = client.patch(f"/api/bookmarks/{bm['id']}", json={"source": None}, headers=h)
    assert r.json()["source"] is None and r.json()["content"] == "page text"
    assert client.delete(f"/api/bookmarks/{bm['id']}", headers=h).status_code == 204
    assert client.get(f"/api/bookmarks/{bm['id']}", headers=h).status_code == 404
    assert client.delete(f"/api/bookmarks/{bm['id']}", headers=h).status_code == 404


def test_read_at_follows_is_read_on_create_and_update(client, account):
    h = account.headers("bookmarks:rw")
    # Created as read: read_at is stamped
    read = client.post("/api/bookmarks", json={"url": "https://a.example", "is_read": True}, headers=h).json()
    assert read["is_read"] is True and read["read_at"] is not None
    # Marking it read again keeps the original read_at
    again = client.patch(f"/api/bookmarks/{read['id']}", json={"is_read": True}, headers=h).json()
    assert again["read_at"] == read["read_at"]
    # Other changes leave it alone
    assert (
        client.patch(f"/api/bookmarks/{read['id']}", json={"title": "x"}, headers=h).json()["read_at"]
        == read["read_at"]
    )
    # Unread clears it, and read again stamps a new one
    unread = client.patch(f"/api/bookmarks/{read['id']}", json={"is_read": False}, headers=h).json()
    assert unread["is_read"] is False and unread["read_at"] is None
    reread = client.patch(f"/api/bookmarks/{read['id']}", json={"is_read": True}, headers=h).json()
    assert reread["read_at"] is not None and reread["read_at"] >= read["read_at"]
    # Created unread: no read_at
    fresh = client.post(
        "/api/bookmarks", json={"url": "https://b.example", "is_read": False}, headers=h
    ).json()
    assert fresh["read_at"] is None


def test_url_must_be_an_absolute_http_url(client, account):
    h = account.headers("bookmarks:rw")
    for bad in (
        "example.com",
        "ftp://example.com/x",
        "https://",
        "javascript:alert(1)",
        "http://a b.com",
        "https://example.com/" + "a" * 2048,
        "http://example.com:99999/",
        "",
    ):
        r = client.post("/api/bookmarks", json={"url": bad}, headers=h)
        assert r.status_code == 400, bad
        assert [e["field"] for e in r.json()["errors"]] == ["url"], bad
    assert client.post("/api/bookmarks", json={"url": "HTTPS://[::1]:8443/p#f"}, headers=h).status_code == 201
    bm = client.post("/api/bookmarks", json={"url": "https://ok.example"}, headers=h).json()
    r = client.patch(f"/api/bookmarks/{bm['id']}", json={"url": "mailto:me@example.com"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["url"]


def test_validation_lists_every_bad_field(client, account):
    h = account.headers("bookmarks:rw")
    r = client.post(
        "/api/bookmarks",
        json={"title": "t" * 501, "is_read": "maybe", "source": "s" * 256, "read_at": "2026-01-01T00:00:00Z"},
        headers=h,
    )
    assert r.status_code == 400
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert set(errors) == {"url", "title", "is_read", "source", "read_at"}
    assert errors["url"]["message"] == "field required"
    assert errors["read_at"]["message"].startswith("unknown field")
    bm = client.post("/api/bookmarks", json={"url": "https://x.example"}, headers=h).json()
    r = client.patch(
        f"/api/bookmarks/{bm['id']}", json={"url": None, "is_read": None, "content": None}, headers=h
    )
    assert r.status_code == 400
    assert [e["field"] for e in r.json()["errors"]] == ["url", "content", "is_read"]


def test_list_omits_content_and_filters_by_tags_read_state_source_and_text(client, account):
    h = account.headers("bookmarks:rw")
    client.post(
        "/api/bookmarks",
        json={
            "url": "https://docs.python.org/3/",
            "title": "Python docs",
            "tags": ["Dev", "ref"],
            "source": "agent-a",
            "content": "big",
        },
        headers=h,
    )
    client.post(
        "/api/bookmarks",
        json={
            "url": "https://news.example/item?id=1",
            "summary": "About PYTHON 4",
            "tags": ["news"],
            "is_read": True,
        },
        headers=h,
    )
    client.post(
        "/api/bookmarks",
        json={"url": "https://blog.example/rust", "title": "Rust 100%", "tags": ["dev"], "source": "agent-b"},
        headers=h,
    )

    def urls(**params):
        r = client.get("/api/bookmarks", params=params, headers=h)
        assert r.status_code == 200, r.text
        assert all(set(item) == SUMMARY_KEYS for item in r.json()["items"])
        return [item["url"].split("/")[2] for item in r.json()["items"]]

    assert urls() == ["blog.example", "news.example", "docs.python.org"]
    assert urls(tag="DEV") == ["blog.example", "docs.python.org"]
    assert urls(tags=" dev , REF") == ["docs.python.org"]
    assert urls(tag="dev", tags="ref") == ["docs.python.org"]
    assert urls(is_read="true") == ["news.example"]
    assert urls(is_read="false", tag="dev") == ["blog.example", "docs.python.org"]
    assert urls(is_read="") == ["blog.example", "news.example", "docs.python.org"]
    assert urls(source="agent-b") == ["blog.example"]
    assert urls(q="python") == ["news.example", "docs.python.org"]  # summary, and title/url
    assert urls(q="ITEM?ID") == ["news.example"]  # url
    assert urls(q="100%") == ["blog.example"]
    assert urls(q="_") == []
    r = client.get("/api/bookmarks", params={"is_read": "maybe"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["is_read"]


def test_ids_scopes_and_tenancy(client, account, other_account):
    h = account.headers("bookmarks:rw")
    bm = client.post("/api/bookmarks", json={"url": "https://mine.example"}, headers=h).json()
    assert client.get("/api/bookmarks/not-a-uuid", headers=h).status_code == 400
    assert client.get(f"/api/bookmarks/{uuid.uuid4()}", headers=h).status_code == 404
    assert client.patch(f"/api/bookmarks/{uuid.uuid4()}", json={"title": "x"}, headers=h).status_code == 404
    ro = account.headers("bookmarks:r")
    assert client.get(f"/api/bookmarks/{bm['id']}", headers=ro).status_code == 200
    assert client.patch(f"/api/bookmarks/{bm['id']}", json={"is_read": True}, headers=ro).status_code == 403
    oh = other_account.headers("bookmarks:rw")
    assert client.get(f"/api/bookmarks/{bm['id']}", headers=oh).status_code == 404
    assert client.patch(f"/api/bookmarks/{bm['id']}", json={"is_read": True}, headers=oh).status_code == 404
    assert client.get("/api/bookmarks", headers=oh).json()["total"] == 0


def test_idempotency_key_replays_and_conflicts(client, account):
    h = {**account.headers("bookmarks:rw"), "Idempotency-Key": "bm-1"}
    first = client.post("/api/bookmarks", json={"url": "https://once.example"}, headers=h)
    again = client.post("/api/bookmarks", json={"url": "https://once.example"}, headers=h)
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and again.json() == first.json()
    assert client.post("/api/bookmarks", json={"url": "https://twice.example"}, headers=h).status_code == 409
    assert client.get("/api/bookmarks", headers=h).json()["total"] == 1
