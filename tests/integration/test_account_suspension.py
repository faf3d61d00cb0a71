"""Account state (issue 8: "the account is active"): an admin suspends an account, whose JWTs and API keys are
then refused with 401 problem+json and whose users cannot log in; reactivating restores the same credentials.
MCP refusals: tests/e2e/test_mcp_credentials.py."""

from __future__ import annotations

import os
import uuid
from typing import Any

import psycopg
import pytest
from conftest import make_account

from agentmate.auth import admin as admin_cli

ME = "/api/auth/me"


def _path(account_id: str, action: str) -> str:
    return f"/api/admin/accounts/{account_id}/{action}"


@pytest.fixture
def operator(client, owner_url) -> Any:
    account = make_account(client)
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE users SET role = 'admin' WHERE id = %s", (account.user_id,))
    return account


def _refused(r) -> bool:
    return (
        r.status_code == 401
        and r.headers["content-type"].startswith("application/problem+json")
        and r.json()["detail"].startswith("account suspended")
        and "www-authenticate" in r.headers
    )


def _credential_headers(account: Any) -> list[dict[str, str]]:
    return [account.jwt_headers, account.headers(), {"Authorization": f"Bearer {account.key('todos:r')}"}]


def test_a_suspended_accounts_jwts_keys_and_logins_are_refused_until_it_is_reactivated(
    client, account, operator
):
    callers = _credential_headers(account)  # keys minted while the account is active
    assert client.post("/api/todos", json={"title": "kept"}, headers=account.headers()).status_code == 201
    # When an admin suspends the account
    r = client.post(_path(account.account_id, "suspend"), headers=operator.jwt_headers)
    assert r.status_code == 200, r.text
    assert r.json()["account_id"] == account.account_id and r.json()["suspended_at"]
    # Then each of its credentials is a 401 naming the reason, on reads and writes
    for headers in callers:
        assert _refused(client.get(ME, headers=headers)), headers
        assert _refused(client.get("/api/todos", headers=headers)), headers
        assert _refused(client.post("/api/todos", json={"title": "x"}, headers=headers)), headers
    # And its user cannot log in; the reason is told only after the right password
    login = client.post("/api/auth/login", json={"email": account.email, "password": account.password})
    assert _refused(login)
    wrong = client.post("/api/auth/login", json={"email": account.email, "password": "not the password"})
    assert wrong.status_code == 401 and wrong.json()["detail"] == "invalid email or password"
    # And other accounts are unaffected
    assert client.get(ME, headers=operator.jwt_headers).status_code == 200
    # When it is reactivated, the same credentials work again and nothing was lost
    r = client.post(_path(account.account_id, "reactivate"), headers=operator.jwt_headers)
    assert r.status_code == 200 and r.json()["suspended_at"] is None
    for headers in callers:
        assert client.get(ME, headers=headers).status_code == 200
    assert [t["title"] for t in client.get("/api/todos", headers=account.headers()).json()["items"]] == [
        "kept"
    ]


def test_suspending_twice_keeps_the_first_time(client, account, operator):
    first = client.post(_path(account.account_id, "suspend"), headers=operator.jwt_headers).json()
    again = client.post(_path(account.account_id, "suspend"), headers=operator.jwt_headers).json()
    assert again["suspended_at"] == first["suspended_at"]


def test_only_an_admin_suspends_and_never_its_own_account(client, account, other_account, operator):
    # A normal user's JWT or full-access key, and an admin's scoped key, are refused (403)
    for headers in (other_account.jwt_headers, other_account.headers(), operator.headers("manage_keys")):
        r = client.post(_path(account.account_id, "suspend"), headers=headers)
        assert r.status_code == 403, r.text
    assert client.get(ME, headers=account.jwt_headers).status_code == 200
    # The admin's own account: 409, still active
    r = client.post(_path(operator.account_id, "suspend"), headers=operator.jwt_headers)
    assert r.status_code == 409 and "own account" in r.json()["detail"]
    assert client.get(ME, headers=operator.jwt_headers).status_code == 200
    # An unknown account: 404; a malformed id: 400 naming it
    assert client.post(_path(str(uuid.uuid4()), "suspend"), headers=operator.jwt_headers).status_code == 404
    r = client.post(_path("nope", "suspend"), headers=operator.jwt_headers)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["account_id"]


def test_the_database_refuses_a_non_admin_and_the_admins_own_account(account, operator):
    """The SECURITY DEFINER function checks on its own, whatever the application does."""
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:  # the application role
        for acting, target in ((account, operator.account_id), (operator, operator.account_id)):
            with conn.transaction(), pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT set_config('app.account_id', %s, true)", (acting.account_id,))
                conn.execute(
                    "SELECT * FROM admin_set_account_suspended(%s, %s, true)", (acting.user_id, target)
                )


def test_the_operator_command_suspends_and_reactivates_by_email(client, account, owner_url, capsys):
    account.key()  # minted while active
    assert admin_cli.main(["suspend", "--email", account.email.upper(), "--database-url", owner_url]) == 0
    assert _refused(client.get(ME, headers=account.headers()))
    assert admin_cli.main(["reactivate", "--email", account.email, "--database-url", owner_url]) == 0
    assert client.get(ME, headers=account.headers()).status_code == 200
    assert admin_cli.main(["suspend", "--email", "nobody@example.com", "--database-url", owner_url]) == 1
    assert "now suspended" in capsys.readouterr().out
