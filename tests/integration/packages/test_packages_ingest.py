"""Shared package ingest against real Postgres: registration, idempotent transactional ingest, reads, RLS."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from agentmate.core.errors import Conflict, NotFound, TooLarge, ValidationFailed
from agentmate.packages import service
from agentmate.packages.identity import package_hash, sha256_hex
from agentmate.packages.limits import PackageLimits
from agentmate.packages.policy import NetPolicy
from agentmate.packages.schemas import FileInput, SourceInput
from tests.integration.packages.conftest import TABLES

POLICY = NetPolicy()


def _register(db, store, actor, **kw):
    data = SourceInput(**{"type": "local", "repository_url": "file:///tmp/skills", **kw})
    with db.tenant(actor.account_id) as conn:
        return service.register_source(conn, store, actor, data, POLICY)


def _files(contents):
    return [FileInput(path=p, content=c) for p, c in contents.items()]


def test_registration_derives_name_and_domain_and_upserts_by_name(db, store, actor):
    # Given a local source registered by package_path only
    first = _register(db, store, actor, package_path="platform/retrieval")
    # Then the name joins every segment and the domain is the first one
    assert first.created
    assert (first.source.name, first.source.domain, first.source.status) == (
        "platform-retrieval",
        "platform",
        "pending",
    )
    assert first.source.sync_mode == "client_push"
    # When the same package registers again with a default ref, the same source is updated
    again = _register(db, store, actor, package_path="platform/retrieval", default_ref="main")
    assert (again.created, again.source.id, again.source.default_ref) == (False, first.source.id, "main")
    # And a flat path has no domain
    assert _register(db, store, actor, package_path="flat").source.domain is None


def test_a_name_taken_by_a_different_package_is_a_conflict(db, store, actor):
    _register(db, store, actor, package_path="product/faq")
    with pytest.raises(Conflict, match="explicit distinct name"):
        _register(db, store, actor, name="product-faq", package_path="other/faq")
    # An explicit distinct name registers the other package
    assert _register(db, store, actor, name="other-faq-2", package_path="other/faq").created


def test_registration_validation_names_every_field(db, store, actor):
    with pytest.raises(ValidationFailed) as err:
        _register(db, store, actor, package_path="../x")
    assert {e.field for e in err.value.errors} == {"package_path"}
    with pytest.raises(ValidationFailed) as err:
        _register(db, store, actor, package_path="")
    assert [e.field for e in err.value.errors] == ["name"]
    # git sources must name an allow-listed https URL without credentials
    for url, message in [
        ("file:///etc", "scheme 'file'"),
        ("git://github.com/a/b", "scheme 'git'"),
        ("ssh://github.com/a/b", "scheme 'ssh'"),
        ("http://github.com/a/b", "scheme 'http'"),
        ("https://user:pw@github.com/a/b", "credentials"),
        ("https://tok@github.com/a/b", "credentials"),
        ("https://evil.example/a/b", "allow-list"),
        ("https://github.com:8443/a/b", "allow-list"),
    ]:
        with pytest.raises(ValidationFailed) as err:
            _register(db, store, actor, type="git", repository_url=url, package_path="a")
        assert err.value.errors[0].field == "repository_url"
        assert message in err.value.errors[0].message, url


def test_snapshot_ingest_is_idempotent_by_package_hash(db, store, actor):
    src = _register(db, store, actor, package_path="team/web").source
    files = _files({"SKILL.md": "---\nname: web\n---\n", "refs/guide.md": "# Guide\n"})
    # When a snapshot is pushed
    first = service.push_snapshot(db, store, actor, src.id, files)
    rev = first.ingested.revision
    assert first.ingested.created
    assert (rev.origin, rev.file_count, rev.commit_sha) == ("snapshot", 2, None)
    assert rev.package_hash == package_hash(
        [
            ("SKILL.md", sha256_hex(b"---\nname: web\n---\n"), 18),
            ("refs/guide.md", sha256_hex(b"# Guide\n"), 8),
        ]
    )
    assert first.ingested.source.active_revision_id == rev.id
    assert first.ingested.source.status == "ready"
    # And a different package makes a second revision the source points at
    second = service.push_snapshot(db, store, actor, src.id, _files({"SKILL.md": "v2\n"}))
    assert second.ingested.created
    assert second.ingested.source.active_revision_id == second.ingested.revision.id
    # When the first package is pushed again (other order), its revision is replayed and re-targeted
    replay = service.push_snapshot(db, store, actor, src.id, list(reversed(files)))
    assert (replay.ingested.created, replay.ingested.revision.id) == (False, rev.id)
    assert replay.ingested.source.active_revision_id == rev.id
    with db.tenant(actor.account_id) as conn:
        revisions, total = store.list_revisions(
            conn, account_id=actor.account_id, source_id=src.id, limit=10, offset=0
        )
        metas, n_files = store.list_files(
            conn, account_id=actor.account_id, revision_id=rev.id, limit=10, offset=0
        )
        one = store.get_file(conn, account_id=actor.account_id, revision_id=rev.id, file_id=metas[1].id)
    assert total == 2 and {r.id for r in revisions} == {rev.id, second.ingested.revision.id}
    assert (n_files, [m.path for m in metas]) == (2, ["SKILL.md", "refs/guide.md"])
    assert not hasattr(metas[0], "content")
    assert one is not None and one.content == "# Guide\n"


def test_binary_files_store_hash_and_size_only(db, store, actor):
    src = _register(db, store, actor, package_path="bin").source
    out = service.push_snapshot(
        db,
        store,
        actor,
        src.id,
        [
            FileInput(path="SKILL.md", content="x"),
            FileInput(path="a.bin", content_base64="AAEC"),
            FileInput(path="logo.png", sha256="a" * 64, size_bytes=1000),
        ],
    )
    with db.tenant(actor.account_id) as conn:
        files = store.all_files(conn, account_id=actor.account_id, revision_id=out.ingested.revision.id)
    by_path = {f.path: f for f in files}
    assert (by_path["a.bin"].is_text, by_path["a.bin"].content, by_path["a.bin"].size_bytes) == (
        False,
        None,
        3,
    )
    assert (by_path["logo.png"].sha256, by_path["logo.png"].size_bytes) == ("a" * 64, 1000)
    assert out.ingested.revision.total_bytes == 1 + 3 + 1000


def test_a_refused_snapshot_writes_nothing(db, store, actor, owner_url):
    src = _register(db, store, actor, package_path="hostile").source
    hostile = [
        [FileInput(path="../x.md", content="x")],
        [FileInput(path="a.md", content="nul\x00")],
        [FileInput(path=f"{i}.md", content="x") for i in range(4)],
        [FileInput(path="a.md", content="x" * 100)],
    ]
    for files in hostile:
        with pytest.raises((ValidationFailed, TooLarge)):
            service.push_snapshot(
                db, store, actor, src.id, files, limits=PackageLimits(max_files=3, max_file_bytes=50)
            )
    with psycopg.connect(owner_url) as conn:
        assert (
            conn.execute(
                f"SELECT count(*) FROM {TABLES.revisions} WHERE source_id = %s", (src.id,)
            ).fetchone()[0]
            == 0
        )
        assert (
            conn.execute(f"SELECT status FROM {TABLES.sources} WHERE id = %s", (src.id,)).fetchone()[0]
            == "pending"
        )


def test_a_failing_registry_hook_rolls_the_ingest_back(db, store, actor, owner_url):
    src = _register(db, store, actor, package_path="hooked").source

    def on_revision(conn, ingested):
        raise ValidationFailed([], "registry refused the package")

    with pytest.raises(ValidationFailed):
        service.push_snapshot(db, store, actor, src.id, _files({"a.md": "x"}), on_revision=on_revision)
    with psycopg.connect(owner_url) as conn:
        assert (
            conn.execute(
                f"SELECT count(*) FROM {TABLES.files} f JOIN {TABLES.revisions} r ON r.id = f.revision_id"
                " WHERE r.source_id = %s",
                (src.id,),
            ).fetchone()[0]
            == 0
        )
    # And select() can narrow the package: the hash covers only what it keeps
    out = service.push_snapshot(
        db,
        store,
        actor,
        src.id,
        _files({"a.md": "x", "b.md": "y"}),
        select=lambda p: service.subset(p, lambda path: path == "a.md"),
        on_revision=lambda conn, ing: ing.revision.file_count,
    )
    assert out.extra == 1
    assert out.ingested.revision.package_hash == package_hash([("a.md", sha256_hex(b"x"), 1)])


def test_sources_of_other_accounts_are_invisible(db, store, actor, other_actor):
    src = _register(db, store, actor, package_path="private/pkg").source
    rev = service.push_snapshot(db, store, actor, src.id, _files({"a.md": "secret"})).ingested.revision
    with pytest.raises(NotFound):
        service.push_snapshot(db, store, other_actor, src.id, _files({"a.md": "x"}))
    with db.tenant(other_actor.account_id) as conn:
        assert store.get_source(conn, account_id=other_actor.account_id, source_id=src.id) is None
        assert store.get_revision(conn, account_id=other_actor.account_id, revision_id=rev.id) is None
        assert store.list_sources(conn, account_id=other_actor.account_id, limit=10, offset=0) == ([], 0)
        # RLS hides the rows even from a query that forgets the account filter
        assert conn.execute(f"SELECT count(*) AS n FROM {TABLES.files}").fetchone()["n"] == 0
    # And the same name in another account is a separate source
    assert _register(db, store, other_actor, package_path="private/pkg").created


def test_pushing_to_a_git_source_or_an_unknown_source_is_refused(db, store, actor):
    git = _register(
        db, store, actor, type="git", repository_url="https://github.com/acme/skills", package_path="web"
    ).source
    assert git.sync_mode == "server_pull"
    with pytest.raises(Conflict, match="synced from git"):
        service.push_snapshot(db, store, actor, git.id, _files({"a.md": "x"}))
    with pytest.raises(NotFound):
        service.push_snapshot(db, store, actor, uuid.uuid4(), _files({"a.md": "x"}))


def test_deleting_a_source_removes_its_revisions_and_files(db, store, actor, owner_url):
    src = _register(db, store, actor, package_path="gone").source
    service.push_snapshot(db, store, actor, src.id, _files({"a.md": "x"}))
    with db.tenant(actor.account_id) as conn:
        assert store.delete_source(conn, account_id=actor.account_id, source_id=src.id)
    with psycopg.connect(owner_url) as conn:
        assert (
            conn.execute(
                f"SELECT count(*) FROM {TABLES.revisions} WHERE source_id = %s", (src.id,)
            ).fetchone()[0]
            == 0
        )
