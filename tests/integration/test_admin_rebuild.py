"""POST /api/admin/retrieval/lexical/rebuild: admins only, across accounts through SECURITY DEFINER functions,
id-ordered batches, filters, and no re-embedding."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from agentmate.retrieval import lexical

REBUILD = "/api/admin/retrieval/lexical/rebuild"


def _make_admin(owner_url: str, account: Any) -> None:
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE users SET role = 'admin' WHERE id = %s", (account.user_id,))


def _remember(client: Any, account: Any, content: str) -> str:
    r = client.post(
        "/api/memory/entries",
        json={
            "memory_type": "semantic",
            "content": content,
            "evidence": [{"source_type": "test", "source_id": "t"}],
        },
        headers=account.headers("memory:rw"),
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _wipe_projection(owner_url: str, *accounts: Any) -> None:
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE retrieval_documents SET lexical_text = '' WHERE account_id = ANY(%s)",
            ([uuid.UUID(a.account_id) for a in accounts],),
        )


def _memory_rows(owner_url: str) -> tuple[int, int]:
    """(rows in the memory namespace of every account, how many of them have a stale lexical projection)."""
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT title, content, lexical_text FROM retrieval_documents WHERE namespace = 'memory'"
        ).fetchall()
    return len(rows), sum(1 for title, content, text in rows if lexical.projection(title, content) != text)


def _lexical_hits(client: Any, account: Any, query: str) -> list[list[str]]:
    r = client.post("/api/memory/search", json={"query": query}, headers=account.headers("memory:r"))
    return [i["channels"] for i in r.json()["items"]]


def _embedded_at(owner_url: str, account: Any) -> list[Any]:
    with psycopg.connect(owner_url) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT indexed_at FROM retrieval_documents WHERE account_id = %s ORDER BY id",
                (account.account_id,),
            )
        ]


def test_only_admins_may_rebuild(client, account):
    assert client.post(REBUILD).status_code == 401
    r = client.post(REBUILD, headers=account.jwt_headers)
    assert r.status_code == 403 and r.json()["detail"] == "admin access required"
    assert client.post(REBUILD, headers=account.headers()).status_code == 403


def test_an_admin_repairs_every_accounts_projection_without_re_embedding(
    client, account, other_account, owner_url
):
    # Given two accounts whose rows lost their lexical projection (written outside the write path)
    _remember(client, account, "Sloths descend once a week.")
    _remember(client, other_account, "Sloths swim surprisingly well.")
    before = _embedded_at(owner_url, account)
    _wipe_projection(owner_url, account, other_account)
    # (the rebuild spans every account of this worker's database: count what it will scan and repair there)
    scanned, stale = _memory_rows(owner_url)
    assert ["lexical", "vector"] not in _lexical_hits(client, account, "sloths descend week")
    # When an admin (of the first account) rebuilds the memory namespace of every account in small batches
    admin = account
    _make_admin(owner_url, admin)
    r = client.post(REBUILD, params={"namespace": "memory", "batch_size": 1}, headers=admin.jwt_headers)
    assert r.status_code == 200, r.text
    body = r.json()
    # Then both accounts' rows were re-projected, one per batch, and nothing was re-embedded
    assert stale >= 2 and (body["updated"], body["scanned"], body["batches"]) == (stale, scanned, scanned)
    assert _memory_rows(owner_url) == (scanned, 0)
    with psycopg.connect(owner_url) as conn:  # and the ranked leg's stems (migration 0084) came back with it
        stems = conn.execute(
            "SELECT search_tsv::text FROM retrieval_documents WHERE account_id = %s",
            (uuid.UUID(account.account_id),),
        ).fetchall()
    assert stems == [("'descend':2 'sloth':1 'week':5",)]
    assert _lexical_hits(client, account, "sloths descend week")[0] == ["lexical", "vector"]
    assert _lexical_hits(client, other_account, "sloths swim")[0] == ["lexical", "vector"]
    assert _embedded_at(owner_url, account) == before
    # And running it again changes nothing
    again = client.post(
        REBUILD,
        params={"namespace": "memory", "account_id": other_account.account_id},
        headers=admin.jwt_headers,
    ).json()
    assert again["updated"] == 0 and again["scanned"] == 1 and again["batch_size"] == 200


def test_filters_limit_the_rebuild_to_one_account(client, account, other_account, owner_url):
    _remember(client, account, "Geckos stick to glass.")
    _remember(client, other_account, "Geckos lick their eyes.")
    _wipe_projection(owner_url, account, other_account)
    _make_admin(owner_url, account)
    r = client.post(
        REBUILD, json={"account_id": other_account.account_id, "batch_size": 1000}, headers=account.headers()
    )
    assert (
        r.status_code == 200
        and r.json()["updated"] == 1
        and r.json()["account_id"] == other_account.account_id
    )
    with psycopg.connect(owner_url) as conn:
        rows = dict(
            conn.execute(
                "SELECT account_id::text, lexical_text FROM retrieval_documents WHERE account_id = ANY(%s)",
                ([uuid.UUID(account.account_id), uuid.UUID(other_account.account_id)],),
            ).fetchall()
        )
    assert rows[account.account_id] == "" and "geckos" in rows[other_account.account_id]


@pytest.mark.parametrize("params", [{"batch_size": 0}, {"batch_size": 1001}, {"account_id": "nope"}])
def test_bad_parameters_are_400(client, account, owner_url, params):
    _make_admin(owner_url, account)
    assert client.post(REBUILD, params=params, headers=account.jwt_headers).status_code == 400


def test_query_and_body_must_agree(client, account, owner_url):
    _make_admin(owner_url, account)
    r = client.post(
        REBUILD, params={"namespace": "memory"}, json={"namespace": "skills"}, headers=account.jwt_headers
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "namespace"
    r = client.post(REBUILD, json={"namespace": "memory", "extra": 1}, headers=account.jwt_headers)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "extra"


def test_the_database_functions_refuse_a_non_admin_even_when_called_directly(account, owner_url):
    app_url = owner_url.replace("postgresql://postgres@", "postgresql://agentmate_app@")
    with psycopg.connect(app_url) as conn:
        conn.execute("SELECT set_config('app.account_id', %s, false)", (account.account_id,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM admin_lexical_batch(%s, NULL, NULL, NULL, 10)", (account.user_id,))
