"""Driver errors are translated by constraint name (core.dberrors): every constraint a client can break is
declared by its repository with the field it guards, and a broken reference names the right field."""

from __future__ import annotations

import importlib
import os
import pkgutil
import uuid

import psycopg
import pytest

import agentmate
from agentmate.core import dberrors
from agentmate.core.db import Database
from agentmate.core.errors import Unauthorized, ValidationFailed
from agentmate.core.principal import Principal
from agentmate.memory.schemas import EventCreate

# Tables whose rows no request writes field by field (the idempotency store, the retrieval projection written by
# the domains' own services): a violation there is a bug to log, not a field to name.
INTERNAL_TABLES = {"idempotency_keys", "retrieval_documents"}
# Tables the packages tests create from the package-table template (migrations/0050) for themselves.
TEST_TABLE_PREFIXES = ("pkgtest_",)


def _import_repositories() -> None:
    for info in pkgutil.walk_packages(agentmate.__path__, "agentmate."):
        if info.name.endswith("repository"):  # repository and <part>_repository modules
            importlib.import_module(info.name)


def test_every_constraint_a_request_can_break_is_declared_by_its_repository():
    _import_repositories()
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        rows = conn.execute(
            """SELECT conrelid::regclass::text AS tbl, conname FROM pg_constraint
               WHERE connamespace = 'public'::regnamespace AND contype IN ('u', 'f', 'c')
               UNION
               SELECT tablename, indexname FROM pg_indexes
               WHERE schemaname = 'public' AND indexdef LIKE 'CREATE UNIQUE INDEX%%'
                 AND indexname NOT LIKE '%%_pkey'
                 AND indexname NOT IN (SELECT conname FROM pg_constraint)"""
        ).fetchall()
    missing = sorted(
        f"{table}.{name}"
        for table, name in rows
        if table not in INTERNAL_TABLES
        and not table.startswith(TEST_TABLE_PREFIXES)
        and name not in dberrors.declared()
        and not dberrors.caller_constraint(name)
        # (id, account_id[, name]) keys exist only as targets of composite foreign keys
        and not name.endswith(("_id_account_key", "_id_account_name_key"))
    )
    assert not missing, (
        f"declare these in the owning repository's CONSTRAINTS (core.dberrors.constraints): {missing}"
    )


def test_a_broken_reference_the_request_did_not_carry_is_not_blamed_on_skill_version_id(client, account):
    """Regression (issue 8, finding 2): any foreign-key failure of an event insert was reported as
    ``skill_version_id``. A key that vanished mid-request breaks memory_events_key_id_fkey: the caller is gone."""
    from agentmate.memory.service import events

    principal = Principal(
        account_id=uuid.UUID(account.account_id),
        user_id=uuid.UUID(account.user_id),
        via="api_key",
        key_id=uuid.uuid4(),
        scopes=(),
    )
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    try:
        with pytest.raises(Unauthorized) as caught:
            events.record_event(db, principal, EventCreate(event_type="note", idempotency_key="k1"))
    finally:
        db.close()
    assert not caught.value.errors


def test_a_taken_sequence_number_names_sequence_no(client, account):
    h = account.headers("memory:rw")
    body = {"event_type": "note", "session_id": "s1", "sequence_no": 1, "payload": {"a": 1}}
    assert (
        client.post("/api/memory/events", json={**body, "idempotency_key": "a"}, headers=h).status_code == 201
    )
    r = client.post("/api/memory/events", json={**body, "idempotency_key": "b"}, headers=h)
    assert r.status_code == 409
    assert r.json()["errors"] == [
        {"field": "sequence_no", "message": "is already used in this session by another event"}
    ]


def test_a_data_error_without_a_known_field_is_a_generic_400_that_leaks_nothing():
    error = dberrors.translate(
        psycopg.errors.InvalidTextRepresentation('invalid input syntax for type uuid: "x"')
    )
    assert isinstance(error, ValidationFailed) and error.errors == []
    assert error.detail == dberrors.DATA_DETAIL


def test_a_data_error_names_the_parameter_that_holds_the_nul():
    exc = psycopg.DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes")
    exc.agentmate_params = {"account_id": uuid.uuid4(), "q": "%a\x00b%", "_offset": 0}  # type: ignore[attr-defined]
    error = dberrors.translate(exc)
    assert isinstance(error, ValidationFailed)
    assert [e.as_dict() for e in error.errors] == [{"field": "q", "message": dberrors.NUL_MESSAGE}]
