"""Per-account limits (issue 25 §1) over REST and MCP: the request rate and concurrent expensive requests answer
429 with ``Retry-After`` and a body naming the limit, the state is shared through Postgres (a lease taken by
another process counts), one account's limit never touches another's, and ``GET /api/auth/usage`` reports the
stored volume against the quotas."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client

from agentmate.core.db import get_database
from agentmate.core.limits import service as limits
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.principal import Principal
from agentmate.mcp import registry
from agentmate.mcp.app import build_servers
from agentmate.mcp.context import acting_as

TODOS = "/api/todos"
SEARCH = "/api/todos/search"


def _account_id(account: Any) -> uuid.UUID:
    return uuid.UUID(account.account_id)


def _leases(owner_url: str, account: Any) -> int:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM account_leases WHERE account_id = %(a)s", {"a": account.account_id}
        ).fetchone()
    assert row is not None
    return int(row[0])


def _assert_refused(r: Any, limit: str) -> dict[str, Any]:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    retry_after = int(r.headers["Retry-After"])
    body: dict[str, Any] = r.json()
    assert retry_after >= 1
    assert body["limit"] == limit
    assert body["retry_after"] == retry_after
    assert limit in body["detail"]
    return body


# --- request rate -----------------------------------------------------------------------------------------------


def test_requests_past_the_burst_are_refused_with_retry_after_naming_the_rate_limit(
    client, account, set_limits
):
    # Given one request a minute with a burst of three
    h = account.headers("todos:r")  # minting a key is a request too: before the limit is set
    set_limits(requests_per_minute=1, request_burst=3)
    # When the account sends four requests at once
    answers = [client.get(TODOS, headers=h) for _ in range(4)]
    # Then the burst passes and the fourth is refused, naming the limit and its value
    assert [r.status_code for r in answers[:3]] == [200, 200, 200]
    body = _assert_refused(answers[3], "requests_per_minute")
    assert body["limit_value"] == 1
    # And the refusal waits at most the one request interval the rate gives back
    assert int(answers[3].headers["Retry-After"]) <= 60


def test_one_accounts_rate_limit_leaves_another_account_untouched(client, account, other_account, set_limits):
    h, other = account.headers("todos:r"), other_account.headers("todos:r")
    set_limits(requests_per_minute=1, request_burst=1)
    assert client.get(TODOS, headers=h).status_code == 200
    _assert_refused(client.get(TODOS, headers=h), "requests_per_minute")
    # The other account still has its own burst
    assert client.get(TODOS, headers=other).status_code == 200


def test_every_credential_of_an_account_shares_its_rate(client, account, set_limits):
    read, write = account.headers("todos:r"), account.headers("todos:rw")
    set_limits(requests_per_minute=1, request_burst=2)
    assert client.get(TODOS, headers=read).status_code == 200
    assert client.get(TODOS, headers=account.jwt_headers).status_code == 200
    _assert_refused(client.get(TODOS, headers=write), "requests_per_minute")


def test_a_refused_request_is_not_counted_and_changes_nothing(client, account, owner_url, set_limits):
    # Given an account at its burst
    h = account.headers("todos:rw")
    set_limits(requests_per_minute=1, request_burst=1)
    assert client.post(TODOS, json={"title": "first"}, headers=h).status_code == 201
    # When a create is refused
    _assert_refused(client.post(TODOS, json={"title": "second"}, headers=h), "requests_per_minute")
    # Then nothing was written, and the rate's state moved only for the admitted request
    with psycopg.connect(owner_url) as conn:
        titles = [
            r[0]
            for r in conn.execute(
                "SELECT title FROM todos WHERE account_id = %(a)s", {"a": account.account_id}
            )
        ]
        ahead = conn.execute(
            "SELECT extract(epoch FROM tat - now()) FROM account_rate WHERE account_id = %(a)s",
            {"a": account.account_id},
        ).fetchone()
    assert titles == ["first"]
    assert ahead is not None and float(ahead[0]) <= 60  # one interval of 60 s, not two


def _refused_once(client: Any, account: Any, set_limits: Any) -> dict[str, str]:
    """A key of ``account`` whose second request the rate refused (one a minute, burst one)."""
    h: dict[str, str] = account.headers("todos:r")
    set_limits(requests_per_minute=1, request_burst=1)
    assert client.get(TODOS, headers=h).status_code == 200
    _assert_refused(client.get(TODOS, headers=h), "requests_per_minute")
    return h


def test_once_refused_an_account_is_refused_by_this_process_without_asking_postgres(
    client, account, owner_url, set_limits
):
    # Given an account refused by the rate (its next admission a minute away)
    h = _refused_once(client, account, set_limits)
    # When the shared state is wiped (were it asked, it would admit)
    with psycopg.connect(owner_url) as conn:
        conn.execute("DELETE FROM account_rate WHERE account_id = %(a)s", {"a": account.account_id})
    # Then this process still refuses, from what it saw, and the wiped state stays untouched
    _assert_refused(client.get(TODOS, headers=h), "requests_per_minute")
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM account_rate WHERE account_id = %(a)s", {"a": account.account_id}
        )
        assert rows.fetchone() == (0,)


def test_a_credential_seen_refused_is_refused_before_it_is_authenticated_again(
    client, account, owner_url, set_limits
):
    # Given a key whose account the rate refused (a minute to wait)
    h = _refused_once(client, account, set_limits)
    # When the key is deleted behind the process's back
    with psycopg.connect(owner_url) as conn:
        conn.execute("DELETE FROM api_keys WHERE account_id = %(a)s", {"a": account.account_id})
    # Then the same credential is still answered the same 429, on any route: it is not looked up again
    _assert_refused(client.get(TODOS, headers=h), "requests_per_minute")
    _assert_refused(client.get("/api/notes", headers=h), "requests_per_minute")
    # And another credential is authenticated as usual (a JWT of the account is refused by the account's rate)
    assert client.get(TODOS, headers={"X-Api-Key": "ak_" + "0" * 64}).status_code == 401
    _assert_refused(client.get(TODOS, headers=account.jwt_headers), "requests_per_minute")


def test_a_rate_of_zero_turns_the_limit_off(client, account, owner_url, set_limits):
    set_limits(requests_per_minute=0, request_burst=1)
    h = account.headers("todos:r")
    assert [client.get(TODOS, headers=h).status_code for _ in range(3)] == [200, 200, 200]
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM account_rate WHERE account_id = %(a)s", {"a": account.account_id}
        )
        assert rows.fetchone() == (0,)


# --- concurrent expensive requests ------------------------------------------------------------------------------


def test_an_expensive_request_is_refused_while_the_accounts_slots_are_held_elsewhere(
    client, account, other_account, owner_url, set_limits
):
    # Given one slot, held by a search of this account in flight in another process (a lease in Postgres)
    settings = set_limits(concurrent_expensive=1)
    db = get_database()
    held = limits.admit(db, settings, _account_id(account), expensive=True)
    assert held is not None
    h = account.headers("todos:r")
    # When the account searches
    r = client.get(SEARCH, params={"q": "x"}, headers=h)
    # Then it is refused naming the concurrency limit, while a cheap route and another account still pass
    body = _assert_refused(r, "concurrent_expensive_requests")
    assert body["limit_value"] == 1
    assert client.get(TODOS, headers=h).status_code == 200
    assert client.get(SEARCH, params={"q": "x"}, headers=other_account.headers("todos:r")).status_code == 200
    # And once the other search ends, the account searches again
    limits.release(db, _account_id(account), held)
    assert client.get(SEARCH, params={"q": "x"}, headers=h).status_code == 200
    assert _leases(owner_url, account) == 0


def test_an_expensive_request_releases_its_slot_when_it_ends_even_when_it_fails(
    client, account, owner_url, set_limits
):
    set_limits(concurrent_expensive=1)
    h = account.headers("todos:r")
    for _ in range(3):
        assert client.get(SEARCH, params={"q": "x"}, headers=h).status_code == 200
    # A search that fails validation after admission (limit out of range) frees its slot too
    assert client.get(SEARCH, params={"q": "x", "limit": 1000}, headers=h).status_code == 400
    assert client.get(SEARCH, params={"q": "x"}, headers=h).status_code == 200
    assert _leases(owner_url, account) == 0


def test_a_lease_whose_holder_died_expires_by_itself(client, account, owner_url, set_limits):
    # Given a slot held by a process that died: its lease has run out
    settings = set_limits(concurrent_expensive=1)
    assert limits.admit(get_database(), settings, _account_id(account), expensive=True) is not None
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE account_leases SET expires_at = now() - interval '1 second' WHERE account_id = %(a)s",
            {"a": account.account_id},
        )
    # Then the account's next search takes the slot (and the dead lease is cleared)
    assert client.get(SEARCH, params={"q": "x"}, headers=account.headers("todos:r")).status_code == 200
    assert _leases(owner_url, account) == 0


@pytest.mark.parametrize(
    ("path", "expensive"),
    [
        ("/api/memory/search", True),
        ("/api/context/pack", True),
        ("/api/knowledge/sources/3f1e/sync", True),
        ("/api/skills/search/", True),
        ("/api/memory/entries", False),
        ("/api/todos/research", False),
    ],
)
def test_expensive_routes_are_searches_packs_and_syncs(path, expensive):
    assert limits.is_expensive_path(path) is expensive


# --- MCP --------------------------------------------------------------------------------------------------------

SERVERS = build_servers(registry.load())


def _principal(account: Any) -> Principal:
    return Principal(
        account_id=_account_id(account), user_id=uuid.UUID(account.user_id), via="jwt", role="member"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_mcp_a_refusal_is_a_tool_error_naming_the_limit_and_the_wait(
    account, set_limits, anyio_backend
):
    set_limits(requests_per_minute=1, request_burst=1)
    with anyio.fail_after(30), acting_as(_principal(account)):
        async with Client(SERVERS["/mcp/todos"]) as mcp:
            first = await mcp.call_tool("todo_list", {})
            second = await mcp.call_tool("todo_list", {})
    assert not first.is_error
    assert second.is_error
    text = second.content[0].text
    assert "requests_per_minute" in text and "retry in" in text


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_mcp_an_expensive_tool_takes_and_releases_a_slot(
    account, owner_url, set_limits, anyio_backend
):
    settings = set_limits(concurrent_expensive=1)
    held = limits.admit(get_database(), settings, _account_id(account), expensive=True)
    assert held is not None
    with anyio.fail_after(30), acting_as(_principal(account)):
        async with Client(SERVERS["/mcp/todos"]) as mcp:
            refused = await mcp.call_tool("todo_search", {"q": "x"})
            limits.release(get_database(), _account_id(account), held)
            admitted = await mcp.call_tool("todo_search", {"q": "x"})
    assert refused.is_error and "concurrent_expensive_requests" in refused.content[0].text
    assert not admitted.is_error, admitted.content
    assert _leases(owner_url, account) == 0


# --- usage ------------------------------------------------------------------------------------------------------


def _remember(client: Any, h: dict[str, str], content: str) -> None:
    body = {
        "memory_type": "semantic",
        "content": content,
        "evidence": [{"source_type": "test", "source_id": "t"}],
    }
    r = client.post("/api/memory/entries", json=body, headers=h)
    assert r.status_code == 201, r.text


def test_usage_reports_the_stored_volume_against_the_quotas_and_the_request_limits(
    client, account, set_limits
):
    set_limits(max_memories=50, max_sources=0)
    h = account.headers("memory:rw")
    _remember(client, h, "usage counts me")
    r = client.post("/api/memory/working/sessions", json={}, headers=account.headers("memory:rw"))
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    item = {"item_type": "message", "role": "user", "content": "hi", "idempotency_key": "k1"}
    r = client.post(
        f"/api/memory/working/sessions/{sid}/items",
        json={"items": [item, {**item, "idempotency_key": "k2"}]},
        headers=h,
    )
    assert r.status_code in (200, 201), r.text

    r = client.get("/api/auth/usage", headers=account.headers("todos:r"))

    assert r.status_code == 200, r.text
    usage = r.json()
    assert usage["memories"] == {"used": 1, "limit": 50}
    assert usage["working_items"]["used"] == 2
    assert usage["sources"] == {"used": 0, "limit": None}
    assert usage["package_bytes"]["used"] == 0
    assert usage["builds_per_day"]["used"] == 0
    assert usage["rate"]["concurrent_expensive"] == get_limit_settings().concurrent_expensive


def test_usage_counts_only_the_callers_account(client, account, other_account):
    h = other_account.headers("memory:rw")
    _remember(client, h, "not yours")
    assert client.get("/api/auth/usage", headers=account.jwt_headers).json()["memories"]["used"] == 0
    assert client.get("/api/auth/usage", headers=h).json()["memories"]["used"] == 1


# --- quotas -----------------------------------------------------------------------------------------------------


def _source(client: Any, h: dict[str, str], path: str, *, kind: str = "knowledge") -> Any:
    body = {"type": "local", "repository_url": "file:///kb", "package_path": path}
    return client.post(f"/api/{kind}/sources", json=body, headers=h)


def test_the_sources_quota_counts_knowledge_and_skill_sources_and_names_itself(client, account, set_limits):
    # Given a quota of two sources
    kh, sh = account.headers("knowledge:rw"), account.headers("skills:rw")
    set_limits(max_sources=2)
    assert _source(client, kh, "team/one").status_code == 201
    assert _source(client, sh, "team/two", kind="skills").status_code == 201
    # When a third is registered, over either route
    for r in (_source(client, kh, "team/three"), _source(client, sh, "team/four", kind="skills")):
        # Then it is refused naming the quota, its value and what the account holds
        assert r.status_code == 409, r.text
        body = r.json()
        assert (body["limit"], body["limit_value"], body["used"]) == ("max_sources", 2, 2)
        assert "LIMIT_MAX_SOURCES" in body["detail"]
    # And re-registering an existing source (an upsert that stores nothing new) is never refused
    again = _source(client, kh, "team/one")
    assert again.status_code == 200, again.text
    assert client.get("/api/auth/usage", headers=kh).json()["sources"] == {"used": 2, "limit": 2}


def test_a_quota_of_zero_is_no_quota(client, account, set_limits):
    kh = account.headers("knowledge:rw")
    set_limits(max_sources=0)
    assert [_source(client, kh, f"team/s{i}").status_code for i in range(3)] == [201, 201, 201]
