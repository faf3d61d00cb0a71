"""Knowledge K1 on the shared package ingest: manifest-driven selection, identity, replay, documents, isolation."""

from __future__ import annotations

import base64
from uuid import UUID

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict, NotFound, ValidationFailed
from agentmate.core.pagination import PageParams
from agentmate.knowledge.sources import service
from agentmate.knowledge.sources.schemas import KnowledgeSnapshotPush, KnowledgeSyncRequest
from agentmate.packages.identity import package_hash, sha256_hex
from agentmate.packages.schemas import FileInput, SourceInput
from agentmate.packages.service import Actor

P = PageParams(limit=10)
MANIFEST = "name: Product FAQ\ncapabilities: [billing]\ninclude: ['docs/**']\nexclude: ['docs/drafts/**']\n"


@pytest.fixture
def actor(account) -> Actor:
    return Actor(UUID(account.account_id), UUID(account.user_id))


@pytest.fixture
def other(other_account) -> Actor:
    return Actor(UUID(other_account.account_id), UUID(other_account.user_id))


def _source(actor, path="product/faq", **kw):
    data = SourceInput(**{"type": "local", "repository_url": "file:///kb", "package_path": path, **kw})
    return service.register_source(get_database(), actor, data).source


def _push(actor, source_id, files):
    files = [
        FileInput(path=p, **c) if isinstance(c, dict) else FileInput(path=p, content=c)
        for p, c in files.items()
    ]
    return service.push_snapshot(get_database(), actor, source_id, KnowledgeSnapshotPush(files=files))


FILES = {
    "KNOWLEDGE.yaml": MANIFEST,
    "docs/a.md": "# A\n",
    "docs/drafts/wip.md": "wip\n",
    "notes.txt": "n\n",
    "docs/img.png": {"content_base64": base64.b64encode(b"\x89PNG\0").decode()},
}


def test_the_manifest_selects_documents_and_always_enters_the_identity(actor):
    src = _source(actor)
    assert (src.name, src.domain) == ("product-faq", "product")
    out = _push(actor, src.id, FILES)
    expected = package_hash(
        [
            ("KNOWLEDGE.yaml", sha256_hex(MANIFEST.encode()), len(MANIFEST.encode())),
            ("docs/a.md", sha256_hex(b"# A\n"), 4),
            ("docs/img.png", sha256_hex(b"\x89PNG\0"), 5),
        ]
    )
    assert out.revision.package_hash == expected
    assert out.manifest.capabilities == ["billing"]
    db = get_database()
    docs = service.list_documents(db, actor, out.revision.id, P).items
    assert (len(docs), [d.path for d in docs]) == (2, ["docs/a.md", "docs/img.png"])
    one = service.get_document(db, actor, out.revision.id, docs[0].id)
    assert one.content == "# A\n"
    assert service.manifest_of(db, actor, out.revision.id).name == "Product FAQ"
    # Files the manifest leaves out do not change the identity: a replay returns the same revision
    changed_unselected = {**FILES, "docs/drafts/wip.md": "other wip\n", "notes.txt": "other\n"}
    replay = _push(actor, src.id, changed_unselected)
    assert (replay.created, replay.revision.id) == (False, out.revision.id)


def test_replaying_a_package_hash_retargets_the_active_revision(actor):
    src = _source(actor, path="kb/retarget")
    first = _push(actor, src.id, FILES)
    second = _push(actor, src.id, {**FILES, "docs/a.md": "# A v2\n"})
    assert second.source.active_revision_id == second.revision.id != first.revision.id
    again = _push(actor, src.id, FILES)
    assert (again.created, again.source.active_revision_id) == (False, first.revision.id)
    revisions = service.list_revisions(get_database(), actor, src.id, P)
    assert (revisions.total, {r.id for r in revisions.items}) == (2, {first.revision.id, second.revision.id})


def test_a_missing_or_invalid_manifest_is_refused_and_writes_nothing(actor, owner_url):
    src = _source(actor, path="kb/bad")
    with pytest.raises(ValidationFailed) as err:
        _push(actor, src.id, {"docs/a.md": "x"})
    assert err.value.errors[0].field == "KNOWLEDGE.yaml"
    with pytest.raises(ValidationFailed) as err:
        _push(actor, src.id, {"KNOWLEDGE.yaml": "description: nameless\n", "docs/a.md": "x"})
    assert err.value.errors[0].field == "KNOWLEDGE.yaml.name"
    with psycopg.connect(owner_url) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM knowledge_source_revisions WHERE source_id = %s", (src.id,)
            ).fetchone()[0]
            == 0
        )


def test_a_name_repointed_to_another_package_is_a_conflict(actor):
    _source(actor, path="product/guide")
    with pytest.raises(Conflict):
        _source(actor, path="other/guide", name="product-guide")
    # two same-named packages under different domains get different derived names
    assert _source(actor, path="support/guide").name == "support-guide"


def test_another_account_sees_nothing(actor, other):
    src = _source(actor, path="secret/kb")
    rev = _push(actor, src.id, FILES).revision
    db = get_database()
    with pytest.raises(NotFound):
        service.list_documents(db, other, rev.id, P)
    with pytest.raises(NotFound):
        service.list_revisions(db, other, src.id, P)
    assert service.list_sources(db, other, P).total == 0
    docs = service.list_documents(db, actor, rev.id, P).items
    with pytest.raises(NotFound):
        service.get_document(db, other, rev.id, docs[0].id)


def test_git_sync_from_the_loopback_server_ingests_the_manifest_selection(actor, owner_url):
    from tests.integration.packages.gitserver import GitServer, commit_tree
    from tests.integration.packages.test_packages_git import SETTINGS, fetcher, make_policy

    server = GitServer().start()
    try:
        sha = commit_tree(
            server.repo("acme/kb"),
            {
                "faq/KNOWLEDGE.yaml": MANIFEST.encode(),
                "faq/docs/a.md": b"# A\n",
                "faq/docs/drafts/x.md": b"x\n",
                "other/y.md": b"y\n",
            },
        )
        url = server.url("github.test", "acme/kb")
        src = service.register_source(
            get_database(),
            actor,
            SourceInput(type="git", repository_url=url, package_path="faq"),
            make_policy(),
        ).source
        out = service.sync_source(
            get_database(), actor, src.id, KnowledgeSyncRequest(ref="main"), fetcher(settings=SETTINGS)
        )
        assert (out.revision.commit_sha, out.revision.file_count) == (sha, 2)
        # a commit whose manifest is broken fails the sync: source in error, no new revision
        commit_tree(
            server.repo("acme/kb"),
            {"faq/KNOWLEDGE.yaml": b"citation_policy: maybe\n", "faq/docs/a.md": b"# A\n"},
        )
        with pytest.raises(ValidationFailed):
            service.sync_source(
                get_database(), actor, src.id, KnowledgeSyncRequest(ref="main"), fetcher(settings=SETTINGS)
            )
        with psycopg.connect(owner_url) as conn:
            status, error = conn.execute(
                "SELECT status, last_error FROM knowledge_sources WHERE id = %s", (src.id,)
            ).fetchone()
            count = conn.execute(
                "SELECT count(*) FROM knowledge_source_revisions WHERE source_id = %s", (src.id,)
            ).fetchone()[0]
        assert (status, count) == ("error", 1)
        assert "KNOWLEDGE.yaml" in error
    finally:
        server.stop()


def test_an_unknown_manifest_key_names_the_allowed_keys(client, account):
    """Issue 23 item 7: ``title`` in KNOWLEDGE.yaml is a 400 naming the key, the fix and every allowed key (not
    pydantic's "Extra inputs are not permitted")."""
    h = account.headers("knowledge:rw")
    src = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "kb/titled"},
        headers=h,
    ).json()
    files = [
        {"path": "KNOWLEDGE.yaml", "content": "name: FAQ\ntitle: The FAQ\n"},
        {"path": "a.md", "content": "x"},
    ]
    r = client.post(f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h)
    assert r.status_code == 400, r.text
    (error,) = r.json()["errors"]
    allowed = [
        "name",
        "description",
        "profile",
        "language",
        "capabilities",
        "languages",
        "include",
        "exclude",
    ]
    assert error["field"] == "KNOWLEDGE.yaml.title"
    assert error["allowed"] == [*allowed, "citation_policy"]
    assert error["message"].startswith("unknown key (the collection's name is name); allowed keys: name, ")
    assert error["likely_meant"] == "name"  # as for every unknown field of a write model
    assert "Extra inputs" not in r.text


def test_kind_for_type_on_a_knowledge_source_gets_the_fix(client, account):
    r = client.post(
        "/api/knowledge/sources",
        json={"kind": "local", "repository_url": "file:///kb", "package_path": "kb/kind"},
        headers=account.headers("knowledge:rw"),
    )
    assert r.status_code == 400, r.text
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert errors["kind"]["likely_meant"] == "type"
    assert errors["kind"]["message"] == "unknown field (the source kind is type: git or local)"
