"""The tag roster (``GET /api/tags``): which tags exist in each record module, with counts, before an agent filters
a list by one; each module under its own read scope."""

from __future__ import annotations

from typing import Any

import pytest

MODULES = ("todos", "notes", "reports", "bookmarks", "expenses")
RW = tuple(f"{m}:rw" for m in MODULES)


def body(module: str, tags: list[str]) -> dict[str, Any]:
    """A minimal record of ``module`` carrying ``tags``."""
    return {
        "todos": {"title": "t", "tags": tags},
        "notes": {"title": "n", "tags": tags},
        "reports": {"title": "r", "tags": tags},
        "bookmarks": {"url": "https://example.com/b", "tags": tags},
        "expenses": {"amount": "1.00", "currency": "EUR", "tags": tags},
    }[module]


def seed(client: Any, headers: dict[str, str], module: str, *tag_lists: list[str]) -> None:
    for tags in tag_lists:
        r = client.post(f"/api/{module}", json=body(module, tags), headers=headers)
        assert r.status_code == 201, r.text


@pytest.mark.parametrize("module", MODULES)
def test_a_modules_roster_counts_each_tag_most_used_first_then_by_tag(client, account, module):
    # Given records of the module with overlapping tags (written in mixed case: stored lowercased)
    h = account.headers(*RW)
    seed(client, h, module, ["Work", "urgent"], ["work"], ["work", "home"], ["home"], [], ["alpha"])
    # When the module's roster is read with its read scope only
    r = client.get("/api/tags", params={"module": module}, headers=account.headers(f"{module}:r"))
    # Then each tag is counted once per record carrying it, most used first, ties by tag
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "private, no-store"
    assert r.json() == {
        "module": module,
        "modules": {
            module: {
                "items": [
                    {"tag": "work", "count": 3},
                    {"tag": "home", "count": 2},
                    {"tag": "alpha", "count": 1},
                    {"tag": "urgent", "count": 1},
                ],
                "total": 4,
                "limit": 20,
                "offset": 0,
            }
        },
        "skipped": [],
    }


def test_the_roster_pages_with_limit_and_offset_and_keeps_the_total(client, account):
    # Given five distinct tags on todos
    h = account.headers("todos:rw")
    seed(client, h, "todos", ["a", "b", "c"], ["a", "b"], ["a", "d", "e"])

    def page(**params: Any) -> dict[str, Any]:
        r = client.get("/api/tags", params={"module": "todos", **params}, headers=h)
        assert r.status_code == 200, r.text
        return r.json()["modules"]["todos"]

    # When it is read two at a time, and past the end
    first, second, past = page(limit=2), page(limit=2, offset=2), page(limit=2, offset=10)
    # Then the pages follow the roster's order and every page reports the same total
    assert [i["tag"] for i in first["items"]] == ["a", "b"]
    assert [i["tag"] for i in second["items"]] == ["c", "d"]
    assert (first["total"], second["total"], past["total"], past["items"]) == (5, 5, 5, [])


def test_all_returns_the_modules_the_key_may_read_and_names_the_scope_of_the_others(client, account):
    # Given tags in every module
    for module in MODULES:
        seed(client, account.headers(*RW), module, [f"{module}-tag"])
    # When a key holding todos:r and expenses:rw asks for every module (module=all is the default)
    r = client.get("/api/tags", headers=account.headers("todos:r", "expenses:rw"))
    # Then it gets those two rosters and a note naming the read scope of each of the others
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["module"] == "all"
    assert list(got["modules"]) == ["todos", "expenses"]
    assert got["modules"]["expenses"]["items"] == [{"tag": "expenses-tag", "count": 1}]
    assert [(s["module"], s["required_scope"]) for s in got["skipped"]] == [
        ("notes", "notes:r"),
        ("reports", "reports:r"),
        ("bookmarks", "bookmarks:r"),
    ]
    assert all(s["required_scope"] in s["note"] for s in got["skipped"])
    # And the account's own user (JWT) and a full-access key see every module, nothing skipped
    for headers in (account.jwt_headers, account.headers()):
        every = client.get("/api/tags", params={"module": "all"}, headers=headers).json()
        assert list(every["modules"]) == list(MODULES) and every["skipped"] == []
        assert {m: p["items"] for m, p in every["modules"].items()} == {
            m: [{"tag": f"{m}-tag", "count": 1}] for m in MODULES
        }


def test_a_key_without_all_read_scopes_sees_empty_all_rosters_as_skipped_not_as_a_403(client, account):
    # Given a key with no record scope at all
    r = client.get("/api/tags", headers=account.headers("memory:r"))
    # Then module=all answers 200 with nothing readable and every module named with its scope
    assert r.status_code == 200, r.text
    assert r.json()["modules"] == {}
    assert [s["required_scope"] for s in r.json()["skipped"]] == [f"{m}:r" for m in MODULES]


@pytest.mark.parametrize("module", MODULES)
def test_one_module_without_its_read_scope_is_a_403_naming_the_scope(client, account, module):
    others = [f"{m}:rw" for m in MODULES if m != module]
    r = client.get("/api/tags", params={"module": module}, headers=account.headers(*others))
    assert r.status_code == 403, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["required_scope"] == f"{module}:r" and f"{module}:r" in r.json()["detail"]


def test_an_unknown_module_or_page_is_a_400_naming_the_field(client, account):
    h = account.headers()
    r = client.get("/api/tags", params={"module": "skills"}, headers=h)
    assert r.status_code == 400, r.text
    [error] = r.json()["errors"]
    assert error["field"] == "module"
    assert error["allowed"] == ["all", *MODULES]
    for params, field in (({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"offset": -1}, "offset")):
        r = client.get("/api/tags", params=params, headers=h)
        assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == [field], r.text


def test_the_roster_needs_a_credential(client):
    r = client.get("/api/tags")
    assert r.status_code == 401, r.text


def test_another_accounts_tags_are_never_counted(client, account, other_account):
    # Given both accounts tag todos, partly with the same tag
    seed(client, other_account.headers("todos:rw"), "todos", ["shared", "theirs"], ["shared"])
    seed(client, account.headers("todos:rw"), "todos", ["shared", "mine"])
    # When each reads its roster
    mine = client.get("/api/tags", params={"module": "todos"}, headers=account.headers("todos:r")).json()
    theirs = client.get("/api/tags", params={"module": "todos"}, headers=other_account.jwt_headers).json()
    # Then each counts only its own records
    assert mine["modules"]["todos"]["items"] == [{"tag": "mine", "count": 1}, {"tag": "shared", "count": 1}]
    assert theirs["modules"]["todos"]["items"] == [
        {"tag": "shared", "count": 2},
        {"tag": "theirs", "count": 1},
    ]


def test_tag_changes_show_in_the_roster_at_once(client, account):
    # Given a todo tagged a, then retagged b, and a note tagged a that is deleted
    h = account.headers("todos:rw", "notes:rw")
    todo = client.post("/api/todos", json={"title": "t", "tags": ["a"]}, headers=h).json()
    note = client.post("/api/notes", json={"title": "n", "tags": ["a"]}, headers=h).json()
    assert client.patch(f"/api/todos/{todo['id']}", json={"tags": ["b"]}, headers=h).status_code == 200
    assert client.delete(f"/api/notes/{note['id']}", headers=h).status_code == 204
    # Then the rosters show the current tags only
    got = client.get("/api/tags", headers=h).json()["modules"]
    assert got["todos"]["items"] == [{"tag": "b", "count": 1}]
    assert got["notes"] == {"items": [], "total": 0, "limit": 20, "offset": 0}
