"""The migration runner against brand-new databases: every migration applies from empty, a second run is a
no-op, an edited applied file is refused, and a new file is applied forward."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from agentmate.core import migrate


@pytest.fixture
def empty_database(owner_base: str) -> Iterator[str]:
    """A new, empty database (cloned from template0), dropped afterwards. Yields its owner URL."""
    name = f"agentmate_migr_{uuid.uuid4().hex[:10]}"
    admin = f"{owner_base}/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # type: ignore[arg-type]
    try:
        yield f"{owner_base}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def _applied(url: str) -> list[tuple[int, str, str]]:
    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT version, name, checksum FROM schema_migrations ORDER BY version"
        ).fetchall()


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        }


def test_every_migration_applies_to_an_empty_database_and_a_rerun_is_a_no_op(empty_database):
    # Given an empty database
    assert _tables(empty_database) == set()
    expected = migrate.discover()
    assert expected, "no migrations found"
    # When every migration is applied
    applied = migrate.apply_all(empty_database)
    # Then all of them ran, in order, and each is recorded with its checksum
    assert applied == [m.version for m in expected]
    assert _applied(empty_database) == [(m.version, m.name, m.checksum) for m in expected]
    assert {"accounts", "users", "api_keys", "idempotency_keys", "todos", "schema_migrations"} <= _tables(
        empty_database
    )
    # And a second run changes nothing
    with psycopg.connect(empty_database) as conn:
        before = conn.execute("SELECT version, applied_at FROM schema_migrations ORDER BY version").fetchall()
    assert migrate.apply_all(empty_database) == []
    with psycopg.connect(empty_database) as conn:
        after = conn.execute("SELECT version, applied_at FROM schema_migrations ORDER BY version").fetchall()
    assert after == before


def test_an_edited_applied_migration_is_refused(empty_database, tmp_path: Path):
    # Given a copy of the migrations, applied
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.DEFAULT_DIR, copy)
    migrate.apply_all(empty_database, copy)
    recorded = _applied(empty_database)
    # When an applied file is changed afterwards
    target = sorted(copy.glob("*.sql"))[-1]
    target.write_text(
        target.read_text(encoding="utf-8") + "\n-- edited after it was applied\n", encoding="utf-8"
    )
    # Then the runner refuses, naming the file, and records nothing new
    with pytest.raises(RuntimeError, match=target.name):
        migrate.apply_all(empty_database, copy)
    assert _applied(empty_database) == recorded


def test_a_new_migration_is_applied_forward_in_its_own_transaction(empty_database, tmp_path: Path):
    copy = tmp_path / "migrations"
    shutil.copytree(migrate.DEFAULT_DIR, copy)
    migrate.apply_all(empty_database, copy)
    # A broken new file rolls back entirely and is not recorded
    (copy / "9998_broken.sql").write_text("CREATE TABLE zz_half (id int);\nSELECT no_such_function();\n")
    with pytest.raises(psycopg.errors.UndefinedFunction):
        migrate.apply_all(empty_database, copy)
    assert "zz_half" not in _tables(empty_database)
    assert 9998 not in [v for v, _, _ in _applied(empty_database)]
    # A good new file is applied and recorded
    (copy / "9998_broken.sql").unlink()
    (copy / "9999_extra.sql").write_text("CREATE TABLE zz_extra (id int);\n")
    assert migrate.apply_all(empty_database, copy) == [9999]
    assert "zz_extra" in _tables(empty_database)


def test_a_badly_named_migration_file_is_refused(tmp_path: Path):
    (tmp_path / "0001_ok.sql").write_text("SELECT 1;")
    (tmp_path / "2_Bad-Name.sql").write_text("SELECT 1;")
    with pytest.raises(ValueError, match="NNNN_slug"):
        migrate.discover(tmp_path)


def test_0040_archives_existing_duplicate_memories_and_keeps_the_oldest(empty_database, tmp_path: Path):
    # Given a database migrated up to 0039 holding two active entries whose content differs only in whitespace
    # and Unicode form, a third with other content, and one in another scope
    copy = tmp_path / "migrations"
    copy.mkdir()
    for path in migrate.DEFAULT_DIR.glob("*.sql"):
        if int(path.name.split("_", 1)[0]) < 40:
            shutil.copy(path, copy / path.name)
    migrate.apply_all(empty_database, copy)
    with psycopg.connect(empty_database) as conn:
        account = conn.execute("INSERT INTO accounts DEFAULT VALUES RETURNING id").fetchone()[0]  # type: ignore[index]
        rows = [
            ("Café  au lait", "2026-01-01"),
            ("Cafe\u0301 au lait ", "2026-01-02"),
            ("Tea", "2026-01-03"),
            ("Café au lait", "2026-01-04"),
        ]
        ids = []
        for i, (content, created) in enumerate(rows):
            scope = "other" if i == 3 else "octo/widgets"
            ids.append(
                conn.execute(
                    """INSERT INTO memory_entries (account_id, scope_type, scope_key, memory_type, content, content_hash,
                                               created_at)
                   VALUES (%s, 'repository', %s, 'semantic', %s, 'h', %s) RETURNING id""",
                    (account, scope, content, created),
                ).fetchone()[0]
            )  # type: ignore[index]
    # When the remaining migrations are applied
    for path in migrate.DEFAULT_DIR.glob("*.sql"):
        shutil.copy(path, copy / path.name)
    migrate.apply_all(empty_database, copy)
    # Then only the younger duplicate is archived, with its reason and a closed validity window
    with psycopg.connect(empty_database) as conn:
        status = dict(
            conn.execute("SELECT id, status FROM memory_entries WHERE account_id = %s", (account,)).fetchall()
        )
        reason, valid_to = conn.execute(
            "SELECT status_reason, valid_to FROM memory_entries WHERE id = %s", (ids[1],)
        ).fetchone()  # type: ignore[misc]
    assert status == {ids[0]: "active", ids[1]: "archived", ids[2]: "active", ids[3]: "active"}
    assert "migration 0040" in reason
    assert valid_to is not None
