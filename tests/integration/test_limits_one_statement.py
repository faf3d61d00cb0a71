"""The rate check folded into the credential lookup (issue 26 §5): a REST request sends one statement before its
tenant transaction, which checks the credential against the database and admits the request by its account's
limits; every credential that statement refuses is neither counted against the rate nor given a lease."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentmate.core.dberrors import ParamsCursor
from tests.integration import test_oauth_resource
from tests.integration.test_limits import SEARCH, TODOS, _assert_refused, _leases
from tests.integration.test_oauth_resource import ISSUER, grant

oauth_on = test_oauth_resource.oauth_on  # the fixture that turns OAuth on for one test


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement the application's pool connections send, in order (their cursors are ``ParamsCursor``;
    ``conn.execute`` goes through one too)."""
    sent: list[str] = []
    original = ParamsCursor.execute

    def execute(self: ParamsCursor, query: Any, params: Any = None, **kwargs: Any) -> Any:
        sent.append(query if isinstance(query, str) else repr(query))
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(ParamsCursor, "execute", execute)
    yield sent


def _before_tenant(sent: list[str]) -> list[str]:
    """The statements sent before the first tenant transaction began (``BEGIN`` + the tenant setting)."""
    begin = next(i for i, s in enumerate(sent) if "set_config('app.account_id'" in s)
    return sent[:begin]


def _rate_ahead(owner_url: str, account: Any) -> float | None:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM tat - now()) FROM account_rate WHERE account_id = %(a)s",
            {"a": account.account_id},
        ).fetchone()
    return None if row is None else float(row[0])


@pytest.mark.parametrize("credential", ["api_key", "jwt"])
def test_a_request_sends_one_statement_before_its_tenant_transaction(
    client, account, owner_url, set_limits, statements, credential
):
    # Given an account under a request rate, and a key used once (its last_used_at now fresh)
    headers = account.headers("todos:r") if credential == "api_key" else account.jwt_headers
    todo = client.post(TODOS, json={"title": "t"}, headers=account.headers("todos:rw")).json()
    set_limits(requests_per_minute=600, request_burst=100)
    assert client.get(f"{TODOS}/{todo['id']}", headers=headers).status_code == 200
    with psycopg.connect(owner_url) as conn:
        conn.execute("DELETE FROM account_rate WHERE account_id = %(a)s", {"a": account.account_id})
    statements.clear()
    # When it reads a todo
    r = client.get(f"{TODOS}/{todo['id']}", headers=headers)
    # Then one statement checked the credential and admitted the request before the tenant transaction
    assert r.status_code == 200, r.text
    before = _before_tenant(statements)
    assert len(before) == 1, before
    assert "_admit(" in before[0]
    # And the rate counted it (its state, wiped before, is back)
    assert _rate_ahead(owner_url, account) is not None


def test_an_oauth_token_sends_one_statement_too_and_is_stamped_in_it(
    client, account, owner_url, set_limits, oauth_on, statements
):
    headers = grant(account, f"{ISSUER}/api", "todos:r")
    set_limits(requests_per_minute=600, request_burst=100)
    statements.clear()
    r = client.get(TODOS, headers=headers)
    assert r.status_code == 200, r.text
    before = _before_tenant(statements)
    assert len(before) == 1, before
    assert "auth_oauth_token_admit(" in before[0]
    # The grant's last_used_at was stamped by that same statement (it was never used before)
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT last_used_at IS NOT NULL FROM oauth_grants WHERE account_id = %(a)s",
            {"a": account.account_id},
        ).fetchone()
    assert row == (True,)
    assert _rate_ahead(owner_url, account) is not None


def test_a_stale_key_is_stamped_in_the_same_statement(client, account, owner_url, set_limits, statements):
    h = account.headers("todos:r")
    set_limits(requests_per_minute=600, request_burst=100)
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE api_keys SET last_used_at = NULL WHERE account_id = %(a)s", {"a": account.account_id}
        )
    statements.clear()
    assert client.get(TODOS, headers=h).status_code == 200
    assert len(_before_tenant(statements)) == 1
    with psycopg.connect(owner_url) as conn:
        stamped = conn.execute(
            "SELECT count(*) FROM api_keys WHERE account_id = %(a)s AND last_used_at > now() - interval '1 minute'",
            {"a": account.account_id},
        ).fetchone()
    assert stamped == (1,)


def _expire_keys(owner_url: str, account: Any) -> None:
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE account_id = %(a)s",
            {"a": account.account_id},
        )


def _suspend(owner_url: str, account: Any) -> None:
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE accounts SET suspended_at = now() WHERE id = %(a)s", {"a": account.account_id})


def _sign_out_everywhere(owner_url: str, account: Any) -> None:
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE users SET credentials_epoch = credentials_epoch + 1 WHERE account_id = %(a)s",
            {"a": account.account_id},
        )


@pytest.mark.parametrize(
    ("spoil", "use_jwt", "reason"),
    [
        (_expire_keys, False, "api key expired"),
        (_suspend, False, "account suspended"),
        (_suspend, True, "account suspended"),
        (_sign_out_everywhere, True, "token revoked"),
    ],
)
def test_a_refused_credential_is_neither_counted_nor_given_a_lease(
    client, account, owner_url, set_limits, spoil, use_jwt, reason
):
    # Given an account with one expensive slot, whose credential is then refused
    h = account.jwt_headers if use_jwt else account.headers("todos:r")
    set_limits(requests_per_minute=600, request_burst=100, concurrent_expensive=1)
    spoil(owner_url, account)
    # When it calls a cheap and an expensive route
    for path in (TODOS, SEARCH):
        r = client.get(path, params={"q": "x"}, headers=h)
        # Then it is refused for its reason, as before
        assert r.status_code == 401, r.text
        assert reason in r.json()["detail"]
    # And the account's rate never moved, and no slot is held
    assert _rate_ahead(owner_url, account) is None
    assert _leases(owner_url, account) == 0


def test_an_oauth_token_for_another_resource_is_refused_and_not_counted(
    client, account, owner_url, set_limits, oauth_on
):
    headers = grant(account, f"{ISSUER}/mcp/todos", "todos:r")
    set_limits(requests_per_minute=600, request_burst=100, concurrent_expensive=1)
    r = client.get(SEARCH, params={"q": "x"}, headers=headers)
    assert r.status_code == 401
    assert "another resource" in r.json()["detail"]
    assert _rate_ahead(owner_url, account) is None
    assert _leases(owner_url, account) == 0


def test_the_folded_statement_refuses_past_the_rate_and_releases_the_lease(
    client, account, owner_url, set_limits, statements
):
    # An expensive request takes its slot in the credential's statement and gives it back when it ends
    h = account.headers("todos:r")
    set_limits(requests_per_minute=1, request_burst=2, concurrent_expensive=1)
    assert client.get(SEARCH, params={"q": "x"}, headers=h).status_code == 200
    assert _leases(owner_url, account) == 0
    assert not any("limits_admit(" in s for s in statements)  # never a statement of its own
    # The third request is past the burst: refused by the same statement, naming the rate
    assert client.get(TODOS, headers=h).status_code == 200
    _assert_refused(client.get(TODOS, headers=h), "requests_per_minute")


def test_in_lambda_the_statement_runs_on_the_invocations_thread_and_in_a_server_on_a_worker(
    client, account, monkeypatch
):
    """A Lambda environment serves one request at a time: its credential statement needs no worker thread."""
    import threading

    from agentmate.auth import credentials
    from functions.todos.app import handler
    from tests.apigw import LambdaContext, http_event, parse_response

    threads: list[threading.Thread] = []
    original = credentials.authenticate_admitted

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(credentials, "authenticate_admitted", spy)
    h = account.headers("todos:r")
    threads.clear()
    # Through the Lambda handler: the invoking thread runs the statement, and the request is served as before
    r = parse_response(handler(http_event("GET", TODOS, headers=h), LambdaContext()))
    assert r.status_code == 200, r.body
    assert threads == [threading.current_thread()]
    # Through a server (the tests' ASGI client): a worker thread does
    assert client.get(TODOS, headers=h).status_code == 200
    assert len(threads) == 2 and threads[1] is not threading.current_thread()
    # And a refusal through the handler is the same 401 problem
    r = parse_response(
        handler(http_event("GET", TODOS, headers={"X-Api-Key": "ak_" + "0" * 64}), LambdaContext())
    )
    assert r.status_code == 401
    assert r.json()["detail"] == "invalid api key"


def _synchronous_commit(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT current_setting('synchronous_commit')").fetchone()
    assert row is not None
    return str(row[0])


def test_the_admission_commits_without_waiting_for_the_wal_and_the_setting_ends_with_it(account, set_limits):
    """The admission's bookkeeping commits asynchronously (migration 0104); the tenant transaction that follows
    on the same pooled connection, which holds what a response acknowledges, must commit durably."""
    import os

    from agentmate.auth import credentials_repository
    from agentmate.auth.security import hash_api_key
    from agentmate.core.limits import repository as limits_repo
    from agentmate.core.limits import service as limits
    from agentmate.core.limits.settings import get_limit_settings

    set_limits(requests_per_minute=600, request_burst=100)
    terms = limits.terms(get_limit_settings())
    key = account.headers("todos:r")["X-Api-Key"]
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(
            "SET synchronous_commit = on"
        )  # durable, as a deployment runs (the tests' cluster is not)
        conn.autocommit = False
        # Inside the admitting statement's own transaction, its commit is asynchronous
        with conn.transaction():
            found = credentials_repository.api_key(conn, hash_api_key(key), terms)
            assert found is not None and found[1].refused_by is None
            assert _synchronous_commit(conn) == "off"
        # and the setting ended with that transaction
        assert _synchronous_commit(conn) == "on"
        # As served (autocommit, one statement): the next statement on the connection commits durably again
        conn.commit()
        conn.autocommit = True
        limits_repo.admit(conn, account_id=found[0].account_id, terms=terms)
        assert _synchronous_commit(conn) == "on"
