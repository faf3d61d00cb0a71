"""The GET /api/notes read contract (spec/000, adapted — see docs/decisions.md).

spec/000 froze what a read-only consumer relies on: optional ``q`` (case-insensitive substring of title or
content) and ``tag`` (exact, normalised), blank values treated as absent, and every item carrying id, title,
content and tags. Our deliberate difference: the 200 body is the object ``{items, total, limit, offset}``
rather than a bare array, so pagination and advisories have somewhere to live; items are in ``items``.
Adding response fields is non-breaking; removing or retyping anything pinned here is a breaking change.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

ITEM_KEYS = {"id", "title", "content", "tags", "created_at", "updated_at"}


@pytest.fixture
def seeded(client, account):
    h = account.headers("notes:rw")
    for body in (
        {"title": "Alpha Plan", "content": "first body", "tags": ["Work", "plans"]},
        {"title": "beta", "content": "mentions ALPHA in the content", "tags": ["home"]},
        {"title": "gamma", "content": "nothing", "tags": []},
    ):
        assert client.post("/api/notes", json=body, headers=h).status_code == 201
    return account.headers("notes:r")


def _read(client, headers, **params):
    r = client.get("/api/notes", params=params, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r.json()


def test_the_body_is_an_envelope_object_with_typed_keys(client, seeded):
    body = _read(client, seeded)
    assert isinstance(body, dict)
    assert set(body) >= {"items", "total", "limit", "offset"}
    assert isinstance(body["items"], list)
    for key in ("total", "limit", "offset"):
        assert type(body[key]) is int
    assert body["total"] == 3 and body["offset"] == 0 and 1 <= body["limit"] <= 100


def test_every_item_carries_the_pinned_fields_with_their_types(client, seeded):
    items = _read(client, seeded)["items"]
    assert len(items) == 3
    for item in items:
        assert set(item) >= ITEM_KEYS
        uuid.UUID(item["id"])
        assert isinstance(item["id"], str)
        assert isinstance(item["title"], str)
        assert isinstance(item["content"], str)
        assert isinstance(item["tags"], list) and all(isinstance(t, str) for t in item["tags"])
        for stamp in ("created_at", "updated_at"):
            assert datetime.fromisoformat(item[stamp]).tzinfo is not None


def test_q_is_a_case_insensitive_substring_of_title_or_content(client, seeded):
    titles = {n["title"] for n in _read(client, seeded, q="aLpHa")["items"]}
    assert titles == {"Alpha Plan", "beta"}
    assert _read(client, seeded, q="no such text")["items"] == []


def test_tag_is_an_exact_normalised_match(client, seeded):
    assert [n["title"] for n in _read(client, seeded, tag="  WORK ")["items"]] == ["Alpha Plan"]
    assert _read(client, seeded, tag="wor")["items"] == []
    assert [n["title"] for n in _read(client, seeded, q="alpha", tag="home")["items"]] == ["beta"]


def test_blank_values_are_treated_as_absent(client, seeded):
    for params in ({"q": ""}, {"tag": ""}, {"q": "   ", "tag": " "}):
        assert _read(client, seeded, **params)["total"] == 3


def test_an_empty_result_is_an_empty_items_list(client, other_account):
    body = _read(client, other_account.headers("notes:r"))
    assert body["items"] == [] and body["total"] == 0
