"""DELETE /api/auth/account (issue 8 item 1): the tenant's every row and every vector go, counted in every tenant
table the catalog knows (tables with an account_id column) and in the vector index; the account's credentials
stop working with a 401, never a foreign-key 500; the other tenant keeps everything."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from test_tenant_isolation import DOMAINS

from functions.routes import ROUTE_GROUPS

# Tables every account can fill today (the seeds below reach each of them); a new tenant table is still counted
# after the deletion (it must hold zero rows), and belongs here once a seed reaches it.
SEEDED = {
    "users",
    "api_keys",
    "idempotency_keys",
    "todos",
    "notes",
    "reports",
    "bookmarks",
    "expenses",
    "memory_events",
    "memory_entries",
    "memory_evidence",
    "memory_feedback",
    "retrieval_documents",
    "skill_versions",
    "skill_logs",
    "working_sessions",
    "working_items",
}


def tenant_tables(owner_url: str) -> list[str]:
    with psycopg.connect(owner_url) as conn:
        return [
            r[0]
            for r in conn.execute(
                """SELECT c.relname FROM pg_class c
               JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'account_id' AND NOT a.attisdropped
               WHERE c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace ORDER BY 1"""
            )
        ]


def rows_left(owner_url: str, account_id: str) -> dict[str, int]:
    out: dict[str, int] = {}
    with psycopg.connect(owner_url) as conn:
        for table in tenant_tables(owner_url):
            out[table] = conn.execute(
                psycopg.sql.SQL("SELECT count(*) FROM {} WHERE account_id = %s").format(
                    psycopg.sql.Identifier(table)
                ),
                (account_id,),
            ).fetchone()[0]
        out["accounts"] = conn.execute(
            "SELECT count(*) FROM accounts WHERE id = %s", (account_id,)
        ).fetchone()[0]
    return out


def seed_everything(client, account) -> None:
    served = {p for prefixes in ROUTE_GROUPS.values() for p in prefixes}
    headers = account.headers()
    for domain in DOMAINS:
        if any(domain.prefix.startswith(p) for p in served):
            domain.seed(client, headers, f"del{uuid.uuid4().hex[:6]}", f"secret-{uuid.uuid4().hex[:6]}")
    r = client.post("/api/todos", json={"title": "retry-safe"}, headers={**headers, "Idempotency-Key": "k-1"})
    assert r.status_code == 201, r.text


def _delete(client, account, password: str | None = None, headers: dict[str, str] | None = None):
    return client.request(
        "DELETE",
        "/api/auth/account",
        json={"password": password or account.password},
        headers=account.jwt_headers if headers is None else headers,
    )


def test_every_tenant_table_has_a_cascading_foreign_key_to_accounts(owner_url):
    with psycopg.connect(owner_url) as conn:
        cascading = {
            r[0]
            for r in conn.execute(
                """SELECT k.conrelid::regclass::text FROM pg_constraint k
               WHERE k.contype = 'f' AND k.confrelid = 'accounts'::regclass AND k.confdeltype = 'c'"""
            )
        }
    missing = [t for t in tenant_tables(owner_url) if t not in cascading]
    assert not missing, (
        f"tenant tables without account_id REFERENCES accounts (id) ON DELETE CASCADE: {missing}"
    )


def test_deleting_the_account_leaves_no_row_and_no_vector_and_the_other_tenant_keeps_all(
    client, account, other_account, owner_url, make_retrieval, serve_retrieval
):
    retrieval = serve_retrieval(make_retrieval())
    index = retrieval.vector_index()
    seed_everything(client, account)
    seed_everything(client, other_account)
    before = rows_left(owner_url, account.account_id)
    other_before = rows_left(owner_url, other_account.account_id)
    assert not [t for t in SEEDED if before.get(t, 0) == 0], f"seeding reached none of: {before}"
    assert index.count(account.account_id) > 0 and index.count(other_account.account_id) > 0
    other_vectors = index.count(other_account.account_id)
    # When the account is deleted with its password re-entered
    r = _delete(client, account)
    # Then nothing of it is left anywhere, and the other tenant is untouched
    assert r.status_code == 204, r.text
    left = rows_left(owner_url, account.account_id)
    assert {t: n for t, n in left.items() if n} == {}
    assert index.count(account.account_id) == 0
    assert rows_left(owner_url, other_account.account_id) == other_before
    assert index.count(other_account.account_id) == other_vectors


def test_after_deletion_every_credential_of_the_account_is_a_401_never_a_500(client, account):
    key = account.headers()
    second_jwt = client.post(
        "/api/auth/login", json={"email": account.email, "password": account.password}
    ).json()
    assert _delete(client, account).status_code == 204
    for headers in (account.jwt_headers, {"Authorization": f"Bearer {second_jwt['token']}"}, key):
        for method, path, body in (
            ("GET", "/api/auth/me", None),
            ("GET", "/api/todos", None),
            ("POST", "/api/todos", {"title": "x"}),
            ("POST", "/api/auth/apikeys", {"name": "k"}),
            (
                "POST",
                "/api/memory/events",
                {"event_type": "note", "payload": {"x": 1}, "idempotency_key": "e1"},
            ),
        ):
            r = client.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (method, path, r.status_code, r.text)
            assert r.headers["content-type"].startswith("application/problem+json")
    # The email is free again: logging in fails, registering works
    assert (
        client.post(
            "/api/auth/login", json={"email": account.email, "password": account.password}
        ).status_code
        == 401
    )
    assert (
        client.post(
            "/api/auth/register", json={"email": account.email, "password": account.password}
        ).status_code
        == 201
    )


def test_a_wrong_password_deletes_nothing(client, account, owner_url):
    r = _delete(client, account, password="not the password")
    assert r.status_code == 400
    assert [e["field"] for e in r.json()["errors"]] == ["password"]
    assert rows_left(owner_url, account.account_id)["accounts"] == 1
    assert client.get("/api/auth/me", headers=account.jwt_headers).status_code == 200


@pytest.mark.parametrize("scopes", [(), ("manage_keys",)], ids=["full-access key", "manage_keys key"])
def test_an_api_key_cannot_delete_the_account(client, account, owner_url, scopes):
    # X-Api-Key alone: the route's credential (the JWT) is missing; the key as the bearer token: the wrong kind
    assert _delete(client, account, headers=account.headers(*scopes)).status_code == 401
    assert (
        _delete(client, account, headers={"Authorization": f"Bearer {account.key(*scopes)}"}).status_code
        == 403
    )
    assert rows_left(owner_url, account.account_id)["accounts"] == 1


def test_a_vector_index_failure_deletes_nothing_and_answers_503(
    client, account, owner_url, make_retrieval, serve_retrieval
):
    from agentmate.core.errors import ServiceUnavailable

    retrieval = serve_retrieval(make_retrieval())

    class Failing:
        def __getattr__(self, name):
            return getattr(retrieval.vector_index(), name)

        def delete_account(self, account_id: str) -> None:
            raise RuntimeError("index down")

    broken = serve_retrieval(make_retrieval(index=Failing()))
    with pytest.raises(ServiceUnavailable):
        broken.remove_account(uuid.UUID(account.account_id))
    r = _delete(client, account)
    assert r.status_code == 503 and r.headers["content-type"].startswith("application/problem+json")
    assert rows_left(owner_url, account.account_id)["accounts"] == 1
    assert client.get("/api/auth/me", headers=account.jwt_headers).status_code == 200
