"""An account, whole, out and back in (issue 25 §4): an export job writes every covered table into an archive,
an import job loads it into an empty account in one transaction with every id remapped, and a re-index job
builds the imported memories' retrieval projection. Archives are client input on import: hostile ones are a 4xx.
"""

from __future__ import annotations

import io
import json
import os
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import agentmate.portability.jobs  # noqa: F401  (registers the kinds)
from agentmate.core.db import Database
from agentmate.jobs import wakeup
from agentmate.jobs.worker import Worker
from agentmate.packages.service import Actor
from agentmate.portability import storage
from agentmate.portability.archive import DROPPED, MANIFEST, STOPPED, TABLES, Table
from agentmate.portability.service import REINDEX_KIND

BASE = "http://127.0.0.1:26001"


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database(os.environ["DATABASE_URL"], max_size=4)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def woken() -> Iterator[list[str]]:
    sent: list[str] = []
    previous = wakeup.set_waker(lambda job_id, delay: sent.append(str(job_id)))
    try:
        yield sent
    finally:
        wakeup.set_waker(previous)


@pytest.fixture
def folder(tmp_path) -> Iterator[storage.FolderStore]:
    store = storage.FolderStore(tmp_path / "archives", "s" * 40, ttl_s=900)
    previous = storage.set_store(store)
    try:
        yield store
    finally:
        storage.set_store(previous)


def _ok(r: Any, status: int = 201) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def _populate(client: Any, account: Any) -> None:
    """One or more rows in every covered table, with every kind of reference between them."""
    h = account.jwt_headers
    _ok(client.post("/api/todos", json={"title": "Ship it", "tags": ["work"]}, headers=h))
    _ok(client.post("/api/notes", json={"title": "Idea", "content": "line one\nline two"}, headers=h))
    _ok(
        client.post(
            "/api/reports", json={"title": "Weekly", "content": "# All good", "source": "bot"}, headers=h
        )
    )
    _ok(client.post("/api/bookmarks", json={"url": "https://example.com/a", "title": "A"}, headers=h))
    _ok(
        client.post(
            "/api/expenses", json={"amount": "12.50", "currency": "EUR", "description": "lunch"}, headers=h
        )
    )
    event = _ok(
        client.post(
            "/api/memory/events",
            json={"event_type": "decision", "idempotency_key": "e1", "payload": {"why": "cheaper"}},
            headers=h,
        )
    )
    old = _ok(
        client.post(
            "/api/memory/entries",
            json={
                "memory_type": "semantic",
                "title": "Deploys",
                "content": "Deploys go through the blue-green pipeline.",
                "evidence": [
                    {"source_type": "url", "source_id": "https://wiki/deploys", "excerpt": "blue-green"}
                ],
                "source_event_id": event["id"],
            },
            headers=h,
        )
    )
    new = _ok(
        client.post(
            "/api/memory/entries",
            json={
                "memory_type": "semantic",
                "content": "Deploys go through the canary pipeline now.",
                "evidence": [{"source_type": "event", "source_id": event["id"], "excerpt": "canary"}],
            },
            headers=h,
        )
    )
    _ok(
        client.post(
            f"/api/memory/entries/{new['id']}/supersede", json={"superseded_id": old["id"]}, headers=h
        ),
        200,
    )
    _ok(client.post(f"/api/memory/entries/{new['id']}/feedback", json={"signal": "useful"}, headers=h), 201)
    _populate_packages(client, h)
    _populate_knowledge(client, account)
    session = _ok(client.post("/api/memory/working/sessions", json={"title": "chat"}, headers=h))
    items = [
        {"item_type": "message", "role": "user", "content": "hello", "idempotency_key": "i1"},
        {"item_type": "draft", "content": "a draft", "metadata": {"n": 1}, "idempotency_key": "i2"},
    ]
    _ok(client.post(f"/api/memory/working/sessions/{session['id']}/items", json={"items": items}, headers=h))


SKILL = """---
name: greeter
description: Greet whoever asks
---

# Instructions

Say hello.
"""


def _populate_packages(client: Any, h: dict[str, str]) -> None:
    """A skill published from a package (source, revision, files, version, compiled card) with a log, and a
    knowledge source with a pushed revision and its documents."""
    source = _ok(
        client.post(
            "/api/skills/sources",
            json={
                "name": "greeter",
                "type": "local",
                "repository_url": "file:///s",
                "package_path": "t/greeter",
            },
            headers=h,
        )
    )
    published = _ok(
        client.post(
            f"/api/skills/sources/{source['id']}/snapshots",
            json={"files": [{"path": "SKILL.md", "content": SKILL}], "activate": True},
            headers=h,
        )
    )
    log = {
        "skill_name": "greeter",
        "outcome": "success",
        "trigger_text": "say hi",
        "skill_version_id": published["version"]["id"],
    }
    _ok(client.post("/api/skills/logs", json=log, headers=h))
    kb = _ok(
        client.post(
            "/api/knowledge/sources",
            json={"type": "local", "repository_url": "file:///kb", "package_path": "billing"},
            headers=h,
        )
    )
    files = [
        {"path": "KNOWLEDGE.yaml", "content": "name: billing\ndescription: Billing reference\n"},
        {"path": "docs/refunds.md", "content": "# Refunds\n\nRefunds take five business days.\n"},
    ]
    _ok(client.post(f"/api/knowledge/sources/{kb['id']}/snapshots", json={"files": files}, headers=h))


def _populate_knowledge(client: Any, account: Any) -> None:
    """A compiled wiki (the compiler against the fake chat provider: profile, build, pages, citations, links, the
    build's log, and the review activation queues), a lint run with its findings, a validation signal, and a
    resolution run selecting a knowledge base (its echoed references name the base's ids)."""
    from tests.fakes.chat_provider import FakeChatProvider
    from tests.integration.knowledge.k4 import knowledge_base, record_run_selecting
    from tests.integration.wiki.corpus import compile_now, documents, enqueue, make_source, push

    actor = Actor(uuid.UUID(account.account_id), uuid.UUID(account.user_id))
    with FakeChatProvider() as fake:
        wiki = make_source(actor, "wiki", documents(3))
        assert compile_now(actor, fake, wiki).status == "succeeded"
        push(
            actor, wiki, {**documents(3), "docs/unused.md": "# Unused\n\nNo page cites this.\n"}
        )  # lint finds it
        assert enqueue(actor, fake, wiki).queued  # a build still queued when the account is exported
    h = account.jwt_headers
    _ok(client.post("/api/knowledge/wiki/lint", json={"source_id": str(wiki)}, headers=h))
    signal = {"source_id": str(wiki), "signal": "answer_adopted", "page_path": "wiki/overview.md"}
    _ok(client.post("/api/knowledge/validation/signals", json=signal, headers=h))
    base = knowledge_base(account, "billing-faq", "name: Billing FAQ\ncapabilities: [billing]\n")
    run = record_run_selecting(client, account, base["source_id"])
    assert run["selected"][0]["source_id"] == base["source_id"]


# Tables the round trip covers but this test does not fill (a compile failure, a quality run, a review's
# findings: no reviewer runs here): in the archive and the comparison all the same.
NOT_POPULATED = ["skill_compile_failures", "skill_quality_runs", "knowledge_review_findings"]


def _canonical(owner_url: str, account_id: Any) -> dict[str, list[str]]:
    """Every covered table of an account with ids replaced by what they point at (the row's own content), so two
    accounts holding the same data under other ids compare equal."""
    labels: dict[str, str] = {}
    fetched: dict[str, list[dict[str, Any]]] = {}
    with psycopg.connect(owner_url, row_factory=dict_row) as conn:
        for table in TABLES:
            fetched[table.name] = [
                r["r"]
                for r in conn.execute(
                    f"SELECT to_jsonb(t) AS r FROM {table.name} t WHERE account_id = %s ORDER BY {table.order}",
                    (account_id,),
                )
            ]
    for table in TABLES:  # first every row's label, its late references left out
        for row in fetched[table.name]:
            _label(table, row, labels)
    return {t.name: sorted(_label(t, r, labels, late=True) for r in fetched[t.name]) for t in TABLES}


def _label(table: Table, row: dict[str, Any], labels: dict[str, str], late: bool = False) -> str:
    """The row's content: its own id, the columns an archive does not carry (``omit``) and the late references
    left out, every reference (nested ones too) replaced by the label of the row it names, and an unfinished row
    as the import settles it."""
    skip = {*DROPPED, table.id_column, *table.late, *table.omit}
    body = {k: v for k, v in row.items() if k not in skip}
    for column in table.refs:
        if column in body and body[column] is not None:
            body[column] = labels[body[column]]
    for column in table.nested:
        body[column] = _nested(body[column], labels)
    if table.settle and body.get("status") in table.settle[0]:
        body.update(table.settle[1])
    text = json.dumps(body, sort_keys=True)
    if table.id_column and not late:
        labels[row[table.id_column]] = text
    for column in table.late if late else ():
        text += f" {column}->" + (labels[row[column]] if row.get(column) else "null")
    return text


def _nested(value: Any, labels: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _nested(v, labels) for k, v in value.items()}
    if isinstance(value, list):
        return [_nested(v, labels) for v in value]
    return labels.get(value, value) if isinstance(value, str) else value


def _run(db: Database, job_id: Any) -> str:
    return Worker(db).run_one(job_id=job_id).outcome


def _export(client: Any, db: Database, account: Any) -> bytes:
    started = _ok(client.post("/api/account/exports", headers=account.jwt_headers), 202)
    assert (started["status"], started["download_url"]) == ("queued", None)
    assert _run(db, started["job_id"]) == "succeeded"
    done = _ok(client.get(f"/api/account/exports/{started['id']}", headers=account.jwt_headers), 200)
    assert done["status"] == "succeeded" and done["download_url"].startswith(BASE), done
    r = client.get(done["download_url"].removeprefix(BASE))
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    return r.content


def _import(client: Any, account: Any, archive: bytes) -> dict[str, Any]:
    opened = _ok(client.post("/api/account/imports", headers=account.jwt_headers))
    assert opened["status"] == "awaiting_upload" and opened["upload_url"].startswith(BASE)
    assert client.put(opened["upload_url"].removeprefix(BASE), content=archive).status_code == 204
    return opened


def test_an_account_exported_and_imported_into_an_empty_one_holds_the_same_data(
    client, account, owner_url, db, woken, folder
):
    # Given an account with rows in every covered table
    _populate(client, account)
    source = _canonical(owner_url, account.account_id)
    assert [t for t, rows in source.items() if not rows] == NOT_POPULATED
    # When it is exported, and the archive is imported into a fresh account
    archive = _export(client, db, account)
    target = __import__("conftest").make_account(client)
    opened = _import(client, target, archive)
    started = _ok(client.post(f"/api/account/imports/{opened['id']}/start", headers=target.jwt_headers), 202)
    assert started["status"] == "queued" and started["upload_url"] is None
    # Then starting it again is a no-op: the same job
    again = _ok(client.post(f"/api/account/imports/{opened['id']}/start", headers=target.jwt_headers), 202)
    assert again["job_id"] == started["job_id"]
    assert _run(db, started["job_id"]) == "succeeded"
    done = _ok(client.get(f"/api/account/imports/{opened['id']}", headers=target.jwt_headers), 200)
    # Then it reports the rows it loaded per table, and every table holds the same rows under new ids
    assert done["status"] == "succeeded"
    assert done["counts"] == {t: len(rows) for t, rows in source.items()}
    assert _canonical(owner_url, target.account_id) == source
    with psycopg.connect(owner_url) as conn:
        ids = {
            r[0]
            for r in conn.execute("SELECT id FROM memory_entries WHERE account_id = %s", (target.account_id,))
        }
        old = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM memory_entries WHERE account_id = %s", (account.account_id,)
            )
        }
    assert ids and not ids & old
    # And a re-index job was queued; once it ran, the imported memories are found by search
    # (woken once when queued, and again when the import ended: the worker wakes an account's next job)
    reindex = list(dict.fromkeys(woken[woken.index(started["job_id"]) + 1 :]))
    assert len(reindex) == 1
    assert _run(db, reindex[0]) == "succeeded"
    hits = _ok(
        client.post(
            "/api/memory/search", json={"query": "canary pipeline deploys"}, headers=target.jwt_headers
        ),
        200,
    )
    assert [h["entry"]["content"] for h in hits["items"]][:1] == [
        "Deploys go through the canary pipeline now."
    ]
    # And the re-index job is of the kind that says so
    job = _ok(client.get(f"/api/knowledge/jobs/{reindex[0]}", headers=target.jwt_headers), 200)
    assert job["kind"] == REINDEX_KIND
    assert job["result"] == {
        "memories": {"indexed": 2, "failed": 0},
        "skills": {"indexed": 2, "total": 2},
        "knowledge": {"indexed": 3, "total": 3},
        "wiki": {"indexed": 1, "total": 1},
    }
    # And the imported wiki is searchable, and the build that was still queued (its job is not in an archive)
    # arrived finished rather than waiting forever in front of every later compile of its source
    wiki = _ok(
        client.post("/api/knowledge/wiki/search", json={"query": "billing rule"}, headers=target.jwt_headers),
        200,
    )
    assert wiki["items"], wiki
    with psycopg.connect(owner_url) as conn:
        builds = conn.execute(
            "SELECT status, job_id, error FROM knowledge_builds WHERE account_id = %s ORDER BY queued_at",
            (target.account_id,),
        ).fetchall()
    assert builds == [("succeeded", None, None), ("failed", None, STOPPED)]


def test_the_archive_holds_no_credentials_and_documents_its_format(client, account, db, woken, folder):
    _populate(client, account)
    archive = zipfile.ZipFile(io.BytesIO(_export(client, db, account)))
    manifest = json.loads(archive.read(MANIFEST))
    assert (manifest["format"], manifest["version"]) == ("agentmate-account-archive", 1)
    assert set(archive.namelist()) == {MANIFEST, *(t.member for t in TABLES)}
    text = b"".join(archive.read(n) for n in archive.namelist()).decode()
    for secret in (
        account.password,
        str(account.user_id),
        str(account.account_id),
        "password_hash",
        "key_hash",
    ):
        assert secret not in text
    for member in archive.namelist():
        if member != MANIFEST:
            for line in archive.read(member).splitlines():
                assert not set(json.loads(line)) & set(DROPPED)


def test_an_import_into_an_account_with_data_is_a_409_and_loads_nothing(client, account, db, woken, folder):
    _populate(client, account)
    archive = _export(client, db, account)
    opened = _import(client, account, archive)
    r = client.post(f"/api/account/imports/{opened['id']}/start", headers=account.jwt_headers)
    assert r.status_code == 409 and "empty account" in r.json()["detail"], r.text
    assert _ok(client.get(f"/api/account/imports/{opened['id']}", headers=account.jwt_headers), 200)[
        "status"
    ] == ("awaiting_upload")


def test_an_import_is_all_or_nothing(client, account, owner_url, db, woken, folder):
    # Given an archive whose last table holds a row the database refuses (after the other tables loaded)
    _populate(client, account)
    archive = zipfile.ZipFile(io.BytesIO(_export(client, db, account)))
    members = {n: archive.read(n) for n in archive.namelist()}
    bad = json.loads(members["working/working_items.ndjson"].splitlines()[0])
    bad["item_type"] = "not-a-type"
    members["working/working_items.ndjson"] += json.dumps(bad).encode() + b"\n"
    target = __import__("conftest").make_account(client)
    opened = _import(client, target, _zip(members))
    started = _ok(client.post(f"/api/account/imports/{opened['id']}/start", headers=target.jwt_headers), 202)
    # When the job runs (every attempt)
    for _ in range(3):
        with psycopg.connect(owner_url) as conn:
            conn.execute("UPDATE jobs SET next_attempt_at = now() WHERE id = %s", (started["job_id"],))
        _run(db, started["job_id"])
    # Then it failed, and not one row of any table was written
    done = _ok(client.get(f"/api/account/imports/{opened['id']}", headers=target.jwt_headers), 200)
    assert done["status"] == "failed", done
    assert done["error"].startswith("archive: working/working_items.ndjson: item_type: "), done["error"]
    assert not any(_canonical(owner_url, target.account_id).values())


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


MANIFEST_OK = json.dumps({"format": "agentmate-account-archive", "version": 1}).encode()


@pytest.mark.parametrize(
    ("archive", "status", "field"),
    [
        (b"not a zip at all", 400, "archive"),
        (_zip({"todos/todos.ndjson": b""}), 400, "archive"),  # no manifest
        (_zip({MANIFEST: MANIFEST_OK, "../etc/passwd": b"x"}), 400, "archive"),
        (_zip({MANIFEST: MANIFEST_OK, "todos/extra.ndjson": b""}), 400, "archive"),
        (_zip({MANIFEST: b"{"}), 400, "archive.manifest"),
        (
            _zip({MANIFEST: json.dumps({"format": "tar", "version": 1}).encode()}),
            400,
            "archive.manifest.format",
        ),
        (
            _zip({MANIFEST: json.dumps({"format": "agentmate-account-archive", "version": 9}).encode()}),
            400,
            "archive.manifest.version",
        ),
        (_zip({MANIFEST: MANIFEST_OK, "notes/notes.ndjson": b"0" * (2 * 1024 * 1024)}), 413, None),
    ],
    ids=[
        "not-zip",
        "no-manifest",
        "path",
        "unknown-member",
        "manifest-not-json",
        "wrong-format",
        "wrong-version",
        "member-too-large",
    ],
)
def test_a_hostile_archive_is_refused_at_start_with_a_4xx_naming_the_field(
    client, account, db, woken, folder, monkeypatch, archive, status, field
):
    from agentmate.portability import settings

    monkeypatch.setattr(settings.get_portability_settings(), "account_archive_max_member_bytes", 1024 * 1024)
    opened = _import(client, account, archive)
    r = client.post(f"/api/account/imports/{opened['id']}/start", headers=account.jwt_headers)
    assert r.status_code == status, r.text
    if field:
        assert [e["field"] for e in r.json()["errors"]] == [field]
    assert woken == []


def test_a_line_longer_than_the_bound_fails_the_import_and_writes_nothing(
    client, account, owner_url, db, woken, folder, monkeypatch
):
    from agentmate.portability import settings

    monkeypatch.setattr(settings.get_portability_settings(), "account_archive_max_line_bytes", 2048)
    line = json.dumps({"id": str(uuid.uuid4()), "title": "x" * 4000}).encode()
    opened = _import(client, account, _zip({MANIFEST: MANIFEST_OK, "todos/todos.ndjson": line + b"\n"}))
    started = _ok(client.post(f"/api/account/imports/{opened['id']}/start", headers=account.jwt_headers), 202)
    _run(db, started["job_id"])
    done = _ok(client.get(f"/api/account/imports/{opened['id']}", headers=account.jwt_headers), 200)
    assert done["status"] == "failed" and "longer than 2048 bytes" in done["error"]
    assert not any(_canonical(owner_url, account.account_id).values())


def test_starting_before_the_upload_is_a_409_and_links_are_signed_and_single_purpose(client, account, folder):
    opened = _ok(client.post("/api/account/imports", headers=account.jwt_headers))
    r = client.post(f"/api/account/imports/{opened['id']}/start", headers=account.jwt_headers)
    assert r.status_code == 409 and "upload_url" in r.json()["detail"]
    path = opened["upload_url"].removeprefix(BASE)
    token = path.rsplit("/", 1)[1]
    # a PUT link does not download, a tampered token is unknown, an unknown import is a 404
    assert client.get(path).status_code == 404
    assert client.put(path[:-2] + "xx", content=b"x").status_code == 404
    assert client.put(path.replace(token, token.split(".")[0] + ".bad"), content=b"x").status_code == 404
    assert client.get(f"/api/account/imports/{uuid.uuid4()}", headers=account.jwt_headers).status_code == 404


def test_an_expired_link_is_refused(client, account, tmp_path):
    store = storage.FolderStore(tmp_path, "s" * 40, ttl_s=-1)
    previous = storage.set_store(store)
    try:
        opened = _ok(client.post("/api/account/imports", headers=account.jwt_headers))
        assert client.put(opened["upload_url"].removeprefix(BASE), content=b"x").status_code == 404
    finally:
        storage.set_store(previous)


def test_a_key_without_every_domain_scope_may_not_export(client, account):
    r = client.post("/api/account/exports", headers=account.headers("todos:rw", "notes:rw"))
    assert r.status_code == 403
    assert "memory:rw" in r.json()["required_scopes"]
    assert client.post("/api/account/exports", headers=account.headers()).status_code == 202  # full access


def test_in_lambda_the_archive_goes_to_s3_behind_presigned_links(client, account, db, woken):
    """The S3 store (moto): the export job writes the object, download_url is presigned for it, and an import
    reads what was PUT to its presigned target."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="archives")
        previous = storage.set_store(storage.S3Store("archives", ttl_s=300, client=s3))
        try:
            _ok(client.post("/api/todos", json={"title": "to s3"}, headers=account.jwt_headers))
            started = _ok(client.post("/api/account/exports", headers=account.jwt_headers), 202)
            assert _run(db, started["job_id"]) == "succeeded"
            done = _ok(client.get(f"/api/account/exports/{started['id']}", headers=account.jwt_headers), 200)
            key = f"exports/{account.account_id}/{started['id']}.zip"
            assert done["download_url"].startswith(f"https://archives.s3.amazonaws.com/{key}?")
            assert "X-Amz-Expires=300" in done["download_url"] or "Expires=" in done["download_url"]
            archive = s3.get_object(Bucket="archives", Key=key)["Body"].read()
            assert zipfile.ZipFile(io.BytesIO(archive)).read("todos/todos.ndjson").count(b"\n") == 1

            target = __import__("conftest").make_account(client)
            opened = _ok(client.post("/api/account/imports", headers=target.jwt_headers))
            assert f"imports/{target.account_id}/{opened['id']}.zip" in opened["upload_url"]
            s3.put_object(
                Bucket="archives", Key=f"imports/{target.account_id}/{opened['id']}.zip", Body=archive
            )
            started = _ok(
                client.post(f"/api/account/imports/{opened['id']}/start", headers=target.jwt_headers), 202
            )
            assert _run(db, started["job_id"]) == "succeeded"
            todos = _ok(client.get("/api/todos", headers=target.jwt_headers), 200)
            assert [t["title"] for t in todos["items"]] == ["to s3"]
        finally:
            storage.set_store(previous)


class _Recording:
    """A folder store whose opened files note the largest single read: the import reads members line by line from
    the stored file, never the archive whole."""

    def __init__(self, store: storage.FolderStore) -> None:
        self.store = store
        self.largest = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def open(self, key: str, max_bytes: int) -> Any:
        from contextlib import contextmanager

        outer = self

        class File(io.RawIOBase):
            def __init__(self, inner: Any) -> None:
                self.inner = inner

            def read(self, n: int = -1) -> bytes:
                data: bytes = self.inner.read(n)
                outer.largest = max(outer.largest, len(data))
                return data

            def seek(self, offset: int, whence: int = 0) -> int:
                return int(self.inner.seek(offset, whence))

            def tell(self) -> int:
                return int(self.inner.tell())

            def seekable(self) -> bool:
                return True

            def readable(self) -> bool:
                return True

        @contextmanager
        def opened() -> Iterator[Any]:
            with self.store.open(key, max_bytes) as inner:
                yield File(inner)

        return opened()


def test_an_import_reads_the_archive_from_its_file_in_pieces_never_whole(
    client, account, owner_url, db, woken, folder
):
    # Given an archive of 3,000 notes of incompressible text (a few MB stored), uploaded to an empty account
    rows = b"".join(
        json.dumps({"id": str(uuid.uuid4()), "title": f"n{i}", "content": os.urandom(600).hex()}).encode()
        + b"\n"
        for i in range(3000)
    )
    archive = _zip({MANIFEST: MANIFEST_OK, "notes/notes.ndjson": rows})
    opened = _import(client, account, archive)
    recording = _Recording(folder)
    storage.set_store(recording)  # type: ignore[arg-type]
    try:
        started = _ok(
            client.post(f"/api/account/imports/{opened['id']}/start", headers=account.jwt_headers), 202
        )
        # When the job loads it
        assert _run(db, started["job_id"]) == "succeeded"
    finally:
        storage.set_store(folder)
    # Then every row is in, and no single read of the stored file took more than a small part of it
    with psycopg.connect(owner_url) as conn:
        n = conn.execute("SELECT count(*) FROM notes WHERE account_id = %s", (account.account_id,)).fetchone()
    assert n == (3000,)
    assert 0 < recording.largest <= len(archive) // 4, (recording.largest, len(archive))


def test_a_loopback_upload_over_the_archive_bound_is_a_413_and_stores_nothing(
    client, account, folder, monkeypatch
):
    from agentmate.portability import settings

    monkeypatch.setattr(settings.get_portability_settings(), "account_archive_max_bytes", 4096)
    opened = _ok(client.post("/api/account/imports", headers=account.jwt_headers))
    r = client.put(opened["upload_url"].removeprefix(BASE), content=b"x" * 5000)
    assert r.status_code == 413, r.text
    assert not list(folder.root.rglob("*.zip"))


def test_every_tenant_table_is_carried_or_left_out_with_a_reason(owner_url):
    from agentmate.portability.archive import LEFT_OUT
    from tests.integration.test_driver_errors import TEST_TABLE_PREFIXES

    with psycopg.connect(owner_url) as conn:
        tenant = {
            r[0]
            for r in conn.execute(
                """SELECT c.table_name FROM information_schema.columns c
                JOIN information_schema.tables t USING (table_schema, table_name)
                WHERE c.table_schema = 'public' AND c.column_name = 'account_id' AND t.table_type = 'BASE TABLE'"""
            )
        }
    # The packages tests create their own tables from the package-table template in this database.
    tenant = {name for name in tenant if not name.startswith(TEST_TABLE_PREFIXES)}
    carried = {t.name for t in TABLES}
    assert not carried & set(LEFT_OUT)
    assert tenant == carried | set(LEFT_OUT)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "account-archive.md").read_text()
    assert [name for name in sorted(tenant) if f"`{name}`" not in doc and f"{name}.ndjson" not in doc] == []


def test_columns_an_archive_does_not_carry_are_dropped_on_import(
    client, account, owner_url, db, woken, folder
):
    # Given an archive whose knowledge source still names the build its wiki index reflected (a foreign id)
    kb = _ok(
        client.post(
            "/api/knowledge/sources",
            json={"type": "local", "repository_url": "file:///kb", "package_path": "kept"},
            headers=account.jwt_headers,
        )
    )
    archive = zipfile.ZipFile(io.BytesIO(_export(client, db, account)))
    members = {n: archive.read(n) for n in archive.namelist()}
    line = json.loads(members["knowledge/knowledge_sources.ndjson"])
    assert "indexed_build_id" not in line and "wiki_indexed_at" not in line  # never exported
    line.update(indexed_build_id=str(uuid.uuid4()), wiki_indexed_at="2026-01-01T00:00:00+00:00")
    members["knowledge/knowledge_sources.ndjson"] = json.dumps(line).encode() + b"\n"
    target = __import__("conftest").make_account(client)
    opened = _import(client, target, _zip(members))
    started = _ok(client.post(f"/api/account/imports/{opened['id']}/start", headers=target.jwt_headers), 202)
    # When it is imported
    assert _run(db, started["job_id"]) == "succeeded"
    # Then the source is in, its wiki index state as for a source never indexed
    with psycopg.connect(owner_url) as conn:
        got = conn.execute(
            "SELECT package_path, indexed_build_id, wiki_indexed_at FROM knowledge_sources WHERE account_id = %s",
            (target.account_id,),
        ).fetchall()
    assert got == [(kb["package_path"], None, None)]
