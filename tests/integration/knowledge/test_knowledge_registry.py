"""The knowledge registry over REST (spec/001 "Knowledge"): register/upsert, snapshots, git sync from the loopback
git server, revisions, documents, the K0 catalog with its domain roster, delete, and manifest errors naming the
field. The corpus is tests/fixtures/knowledge_registry (English and Chinese packages, include/exclude rules, a
binary file, two same-named packages under different domains)."""

from __future__ import annotations

import psycopg
import pytest

from agentmate.packages.identity import package_hash, sha256_hex

from .corpus import loopback_git, package, repository, snapshot

RW = "knowledge:rw"


def register(client, h, path, **kw):
    body = {"type": "local", "repository_url": "file:///kb", "package_path": path, **kw}
    r = client.post("/api/knowledge/sources", json=body, headers=h)
    assert r.status_code in (200, 201), r.text
    return r.json()


def push(client, h, source_id, files, expect=(201,)):
    r = client.post(f"/api/knowledge/sources/{source_id}/snapshots", json={"files": files}, headers=h)
    assert r.status_code in expect, r.text
    return r.json()


def problem_fields(r) -> list[str]:
    return [e["field"] for e in r.json().get("errors", [])]


# -- sources -----------------------------------------------------------------------------------------------------


def test_registering_derives_name_and_domain_and_upserts_by_name(client, account):
    h = account.headers(RW)
    # Given a new package path, the name joins every segment and the domain is the first one
    first = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "product/faq"},
        headers=h,
    )
    assert first.status_code == 201, first.text
    src = first.json()
    assert (src["name"], src["domain"], src["status"], src["sync_mode"]) == (
        "product-faq",
        "product",
        "pending",
        "client_push",
    )
    # When the same package is registered again with a default_ref, it is the same source (200), updated
    again = client.post(
        "/api/knowledge/sources",
        json={
            "type": "local",
            "repository_url": "file:///kb",
            "package_path": "product/faq",
            "default_ref": "v2",
        },
        headers=h,
    )
    assert (
        again.status_code == 200 and again.json()["id"] == src["id"] and again.json()["default_ref"] == "v2"
    )
    # Then a name pointed at a different package is a 409 naming name
    taken = client.post(
        "/api/knowledge/sources",
        json={
            "name": "product-faq",
            "type": "local",
            "repository_url": "file:///other",
            "package_path": "x/faq",
        },
        headers=h,
    )
    assert taken.status_code == 409 and problem_fields(taken) == ["name"]
    # And a single-segment path has no domain; the client can never send one
    flat = register(client, h, "handbook")
    assert (flat["name"], flat["domain"]) == ("handbook", None)
    sent = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "a/b", "domain": "mine"},
        headers=h,
    )
    assert sent.status_code == 400 and problem_fields(sent) == ["domain"]
    assert "derived" in sent.text
    listed = client.get("/api/knowledge/sources", headers=h).json()
    assert (listed["total"], [s["name"] for s in listed["items"]]) == (2, ["handbook", "product-faq"])


def test_two_same_named_packages_under_different_domains_stay_apart(client, account):
    h = account.headers(RW)
    product = register(client, h, "product/guide")
    support = register(client, h, "support/guide")
    assert {(product["name"], product["domain"]), (support["name"], support["domain"])} == {
        ("product-guide", "product"),
        ("support-guide", "support"),
    }
    push(client, h, product["id"], snapshot("product/guide"))
    push(client, h, support["id"], snapshot("support/guide"))
    # Both cards carry the manifest name Guide; the exact domain filter picks one, the roster counts both
    cat = client.get("/api/knowledge/catalog", headers=h).json()
    by_id = sorted([product, support], key=lambda s: s["id"])  # equal names: the source id breaks the tie
    assert [(c["name"], c["source_id"]) for c in cat["items"]] == [("Guide", s["id"]) for s in by_id]
    assert cat["domains"] == [
        {"domain": "product", "collections": 1},
        {"domain": "support", "collections": 1},
    ]
    only = client.get("/api/knowledge/catalog", params={"domain": "support"}, headers=h).json()
    assert [c["source_id"] for c in only["items"]] == [support["id"]] and only["total"] == 1
    assert only["domains"] == cat["domains"]  # the roster ignores the filters
    assert client.get("/api/knowledge/catalog", params={"domain": "Support"}, headers=h).json()["items"] == []


# -- snapshots, revisions and documents --------------------------------------------------------------------------


def test_a_snapshot_keeps_the_selected_documents_and_the_manifest_in_the_identity(client, account):
    h = account.headers(RW)
    src = register(client, h, "product/faq")
    # When the English package is pushed (includes docs/** and images/**, excludes docs/drafts/**)
    out = push(client, h, src["id"], snapshot("product/faq"))
    files = package("product/faq")
    kept = ["KNOWLEDGE.yaml", "docs/billing.md", "docs/refunds.md", "images/logo.png"]
    expected = package_hash((p, sha256_hex(files[p]), len(files[p])) for p in kept)
    # Then the revision's identity covers the manifest and the selected documents only
    assert out["created"] is True and out["revision"]["package_hash"] == expected
    assert out["revision"]["file_count"] == 4 and out["revision"]["origin"] == "snapshot"
    assert out["source"]["active_revision_id"] == out["revision"]["id"] and out["source"]["status"] == "ready"
    assert (
        out["manifest"]["capabilities"] == ["billing", "refunds"]
        and out["manifest"]["citation_policy"] == "required"
    )
    rev = out["revision"]["id"]
    # And the documents are listed in path order, without bodies and without the manifest
    r = client.get(f"/api/knowledge/revisions/{rev}/documents", headers=h)
    assert r.status_code == 200
    docs = r.json()
    assert [d["path"] for d in docs["items"]] == kept[1:] and docs["total"] == 3
    assert all("content" not in d for d in docs["items"])
    logo = docs["items"][2]
    assert (logo["is_text"], logo["size_bytes"], logo["sha256"]) == (
        False,
        len(files["images/logo.png"]),
        sha256_hex(files["images/logo.png"]),
    )
    # And one document comes with its text snapshot, privately; a binary one with no text
    one = client.get(f"/api/knowledge/revisions/{rev}/documents/{docs['items'][0]['id']}", headers=h)
    assert one.status_code == 200 and one.headers["cache-control"] == "private, no-store"
    assert one.json()["content"] == files["docs/billing.md"].decode()
    assert (
        client.get(f"/api/knowledge/revisions/{rev}/documents/{logo['id']}", headers=h).json()["content"]
        is None
    )
    # And pages are stable
    page = client.get(
        f"/api/knowledge/revisions/{rev}/documents", params={"limit": 2, "offset": 2}, headers=h
    ).json()
    assert [d["path"] for d in page["items"]] == ["images/logo.png"] and page["total"] == 3
    assert (
        client.get(f"/api/knowledge/revisions/{rev}/documents", params={"limit": 0}, headers=h).status_code
        == 400
    )


def test_the_manifest_row_is_never_a_document(client, account, owner_url):
    h = account.headers(RW)
    src = register(client, h, "product/faq")
    rev = push(client, h, src["id"], snapshot("product/faq"))["revision"]["id"]
    with psycopg.connect(owner_url) as conn:
        manifest_id = conn.execute(
            "SELECT id FROM knowledge_documents WHERE revision_id = %s AND path = %s", (rev, "KNOWLEDGE.yaml")
        ).fetchone()[0]
    assert client.get(f"/api/knowledge/revisions/{rev}/documents/{manifest_id}", headers=h).status_code == 404


def test_a_chinese_package_round_trips_and_folds_its_language(client, account):
    h = account.headers(RW)
    src = register(client, h, "support/faq")
    out = push(client, h, src["id"], snapshot("support/faq"))
    docs = client.get(f"/api/knowledge/revisions/{out['revision']['id']}/documents", headers=h).json()[
        "items"
    ]
    assert sorted(d["path"] for d in docs) == sorted(["发票/开票.md", "退款.md"])
    refund = next(d for d in docs if d["path"] == "退款.md")
    body = client.get(
        f"/api/knowledge/revisions/{out['revision']['id']}/documents/{refund['id']}", headers=h
    ).json()
    assert body["content"] == package("support/faq")["退款.md"].decode("utf-8")
    # The card folds the singular language into languages, and the filter matches Chinese text
    cards = client.get("/api/knowledge/catalog", params={"query": "客服"}, headers=h).json()["items"]
    assert len(cards) == 1
    card = cards[0]
    assert (card["name"], card["language"], card["languages"]) == ("客服常见问题", "zh", ["zh"])
    assert card["capabilities"] == ["refunds", "发票"] and card["citation_policy"] == "optional"


def test_replaying_a_package_hash_returns_the_revision_and_retargets_the_source(client, account):
    h = account.headers(RW)
    src = register(client, h, "product/faq")
    first = push(client, h, src["id"], snapshot("product/faq"))
    second = push(client, h, src["id"], snapshot("product/faq", **{"docs/billing.md": "# Billing v2\n"}))
    assert second["revision"]["id"] != first["revision"]["id"]
    # Files the rules leave out do not change the identity: still a replay of the second
    same = push(
        client,
        h,
        src["id"],
        snapshot("product/faq", **{"docs/billing.md": "# Billing v2\n", "notes.txt": "changed\n"}),
        expect=(200,),
    )
    assert (same["created"], same["revision"]["id"]) == (False, second["revision"]["id"])
    # Pushing the first package again replays it (200) and points the source back at it
    back = push(client, h, src["id"], snapshot("product/faq"), expect=(200,))
    assert back["revision"]["id"] == first["revision"]["id"]
    assert back["source"]["active_revision_id"] == first["revision"]["id"]
    card = client.get("/api/knowledge/catalog", headers=h).json()["items"][0]
    assert (card["revision_id"], card["package_hash"]) == (
        first["revision"]["id"],
        first["revision"]["package_hash"],
    )
    revs = client.get(f"/api/knowledge/sources/{src['id']}/revisions", headers=h).json()
    assert revs["total"] == 2 and {r["id"] for r in revs["items"]} == {
        first["revision"]["id"],
        second["revision"]["id"],
    }
    # A supplied package_hash must match
    r = client.post(
        f"/api/knowledge/sources/{src['id']}/snapshots",
        json={"files": snapshot("product/faq"), "package_hash": "0" * 64},
        headers=h,
    )
    assert r.status_code == 400 and problem_fields(r) == ["package_hash"]


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        (None, "KNOWLEDGE.yaml"),
        ("description: nameless\n", "KNOWLEDGE.yaml.name"),
        ("name: x\ncitation_policy: maybe\n", "KNOWLEDGE.yaml.citation_policy"),
        (
            "name: x\ncapabilities: [" + ", ".join(f"c{i}" for i in range(17)) + "]\n",
            "KNOWLEDGE.yaml.capabilities",
        ),
        (
            "name: x\nlanguages: " + "[" + ", ".join(f"l{i}" for i in range(17)) + "]\n",
            "KNOWLEDGE.yaml.languages",
        ),
        ("name: x\ninclude: ['/etc/**']\n", "KNOWLEDGE.yaml.include.0"),
        ("name: x\ntags: [a]\n", "KNOWLEDGE.yaml.tags"),
        ("name: [unclosed\n", "KNOWLEDGE.yaml"),
        ("- just\n- a list\n", "KNOWLEDGE.yaml"),
        ("name: &a x\nprofile: *a\n", "KNOWLEDGE.yaml"),
    ],
)
def test_a_missing_or_invalid_manifest_is_a_400_naming_the_field_and_writes_nothing(
    client, account, owner_url, manifest, field
):
    h = account.headers(RW)
    src = register(client, h, "kb/bad")
    files = [{"path": "a.md", "content": "# A\n"}]
    if manifest is not None:
        files.append({"path": "KNOWLEDGE.yaml", "content": manifest})
    r = client.post(f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h)
    assert r.status_code == 400, r.text
    assert problem_fields(r) == [field]
    if field.endswith("citation_policy"):
        assert r.json()["errors"][0]["allowed"] == ["required", "optional"]
    with psycopg.connect(owner_url) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM knowledge_source_revisions WHERE source_id = %s", (src["id"],)
            ).fetchone()[0]
            == 0
        )


def test_a_manifest_selecting_no_document_makes_a_collection_without_documents(client, account):
    h = account.headers(RW)
    src = register(client, h, "kb/empty")
    r = client.post(
        f"/api/knowledge/sources/{src['id']}/snapshots",
        json={
            "files": [
                {"path": "KNOWLEDGE.yaml", "content": "name: x\ninclude: ['docs/**']\n"},
                {"path": "other.md", "content": "x"},
            ]
        },
        headers=h,
    )
    # The manifest is always part of the package, so the revision exists with no document
    assert r.status_code == 201, r.text
    assert r.json()["revision"]["file_count"] == 1
    assert (
        client.get(f"/api/knowledge/revisions/{r.json()['revision']['id']}/documents", headers=h).json()[
            "total"
        ]
        == 0
    )


# -- catalog -----------------------------------------------------------------------------------------------------


def test_the_catalog_lists_cards_of_active_revisions_in_stable_name_order(client, account):
    h = account.headers(RW)
    faq = register(client, h, "product/faq")
    push(client, h, faq["id"], snapshot("product/faq"))
    zh = register(client, h, "support/faq")
    push(client, h, zh["id"], snapshot("support/faq"))
    guide = register(client, h, "product/guide")
    push(client, h, guide["id"], snapshot("product/guide"))
    register(client, h, "pending/none")  # no revision: no card
    cat = client.get("/api/knowledge/catalog", headers=h)
    assert cat.status_code == 200
    body = cat.json()
    assert [c["name"] for c in body["items"]] == ["Guide", "Product FAQ", "客服常见问题"] and body[
        "total"
    ] == 3
    card = body["items"][1]
    assert card == {
        "source_id": faq["id"],
        "source_name": "product-faq",
        "revision_id": card["revision_id"],
        "name": "Product FAQ",
        "description": "Billing and refund answers for the product (100% curated)",
        "profile": "faq",
        "language": None,
        "citation_policy": "required",
        "capabilities": ["billing", "refunds"],
        "languages": ["en"],
        "domain": "product",
        "document_count": 3,
        "package_hash": card["package_hash"],
        "index_status": "not_indexed",
        "waiting_chunks": 0,
    }
    assert body["domains"] == [
        {"domain": "product", "collections": 2},
        {"domain": "support", "collections": 1},
    ]
    # Pages follow the same order
    pages = [
        client.get("/api/knowledge/catalog", params={"limit": 1, "offset": i}, headers=h).json()
        for i in range(3)
    ]
    assert [p["items"][0]["source_id"] for p in pages] == [c["source_id"] for c in body["items"]]
    # The filter is a case-insensitive substring of name or description, with LIKE wildcards taken literally
    assert [
        c["name"]
        for c in client.get("/api/knowledge/catalog", params={"query": "REFUND"}, headers=h).json()["items"]
    ] == ["Product FAQ"]
    assert [
        c["name"]
        for c in client.get("/api/knowledge/catalog", params={"query": "100%"}, headers=h).json()["items"]
    ] == ["Product FAQ"]
    assert client.get("/api/knowledge/catalog", params={"query": "_"}, headers=h).json()["total"] == 0
    assert client.get("/api/knowledge/catalog", params={"query": "  "}, headers=h).json()["total"] == 3
    assert client.get("/api/knowledge/catalog", params={"query": "x" * 201}, headers=h).status_code == 400


# -- git sync ----------------------------------------------------------------------------------------------------


@pytest.fixture
def git(monkeypatch):
    with loopback_git(monkeypatch) as server:
        yield server


def test_sync_resolves_a_ref_to_a_commit_ingests_and_replays(client, account, git, owner_url):
    h = account.headers(RW)
    # Given a git source for the English package
    r = client.post(
        "/api/knowledge/sources",
        json={
            "type": "git",
            "repository_url": git.url("git.test", "acme/kb"),
            "package_path": "product/faq",
            "default_ref": "main",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    src = r.json()
    assert src["sync_mode"] == "server_pull"
    # When it is synced
    out = client.post(f"/api/knowledge/sources/{src['id']}/sync", json={"ref": "main"}, headers=h)
    assert out.status_code == 201, out.text
    body = out.json()
    assert (body["revision"]["commit_sha"], body["revision"]["ref"], body["revision"]["origin"]) == (
        git.main_sha,
        "main",
        "git",
    )
    assert body["revision"]["file_count"] == 4 and body["source"]["last_commit_sha"] == git.main_sha
    # Then the same package as a snapshot has the same identity
    local = register(client, h, "product/faq", name="faq-local")
    pushed = push(client, h, local["id"], snapshot("product/faq"))
    assert pushed["revision"]["package_hash"] == body["revision"]["package_hash"]
    # And syncing again (no body: the default_ref) replays the revision
    again = client.post(f"/api/knowledge/sources/{src['id']}/sync", headers=h)
    assert again.status_code == 200 and again.json()["revision"]["id"] == body["revision"]["id"]
    # And a commit that changes only excluded files is still the same revision
    files = repository()
    git.commit({**files, "product/faq/docs/drafts/wip.md": b"# changed draft\n"})
    assert client.post(f"/api/knowledge/sources/{src['id']}/sync", headers=h).status_code == 200
    # And a commit with a broken manifest fails the sync naming the field: source error, no new revision
    git.commit({**files, "product/faq/KNOWLEDGE.yaml": b"name: x\ncitation_policy: maybe\n"})
    bad = client.post(f"/api/knowledge/sources/{src['id']}/sync", headers=h)
    assert bad.status_code == 400 and problem_fields(bad) == ["KNOWLEDGE.yaml.citation_policy"]
    state = client.get(f"/api/knowledge/sources/{src['id']}", headers=h).json()
    assert state["status"] == "error" and "KNOWLEDGE.yaml" in state["last_error"]
    assert state["active_revision_id"] == body["revision"]["id"]
    assert client.get(f"/api/knowledge/sources/{src['id']}/revisions", headers=h).json()["total"] == 1
    # And an unknown ref is a 400 naming ref
    unknown = client.post(f"/api/knowledge/sources/{src['id']}/sync", json={"ref": "nope"}, headers=h)
    assert unknown.status_code == 400 and problem_fields(unknown) == ["ref"]


def test_sync_and_push_each_refuse_the_other_kind_of_source(client, account, git):
    h = account.headers(RW)
    local = register(client, h, "product/faq")
    assert client.post(f"/api/knowledge/sources/{local['id']}/sync", headers=h).status_code == 409
    remote = client.post(
        "/api/knowledge/sources",
        json={"type": "git", "repository_url": git.url("git.test", "acme/kb"), "package_path": "support/faq"},
        headers=h,
    ).json()
    r = client.post(
        f"/api/knowledge/sources/{remote['id']}/snapshots", json={"files": snapshot("support/faq")}, headers=h
    )
    assert r.status_code == 409


def test_a_git_url_outside_the_allow_list_is_refused_naming_repository_url(client, account):
    h = account.headers(RW)
    r = client.post(
        "/api/knowledge/sources",
        json={"type": "git", "repository_url": "http://169.254.169.254/x", "package_path": "a/b"},
        headers=h,
    )
    assert r.status_code == 400 and problem_fields(r) == ["repository_url"]


# -- delete ------------------------------------------------------------------------------------------------------


def test_deleting_a_source_removes_its_revisions_and_documents(client, account, owner_url):
    h = account.headers(RW)
    src = register(client, h, "product/faq")
    rev = push(client, h, src["id"], snapshot("product/faq"))["revision"]["id"]
    assert client.delete(f"/api/knowledge/sources/{src['id']}", headers=h).status_code == 204
    assert client.get(f"/api/knowledge/sources/{src['id']}", headers=h).status_code == 404
    assert client.get(f"/api/knowledge/revisions/{rev}/documents", headers=h).status_code == 404
    assert client.delete(f"/api/knowledge/sources/{src['id']}", headers=h).status_code == 404
    assert client.get("/api/knowledge/catalog", headers=h).json()["total"] == 0
    with psycopg.connect(owner_url) as conn:
        assert (
            conn.execute(
                "SELECT count(*) FROM knowledge_documents WHERE revision_id = %s", (rev,)
            ).fetchone()[0]
            == 0
        )


def test_a_source_a_resolution_run_selected_cannot_be_deleted(client, account):
    from tests.integration.knowledge.k4 import record_run_selecting  # kdisc's helper: discover, then record

    h = account.headers(RW)
    src = register(client, h, "product/faq")
    push(client, h, src["id"], snapshot("product/faq"))
    record_run_selecting(client, account, src["id"])
    r = client.delete(f"/api/knowledge/sources/{src['id']}", headers=h)
    assert r.status_code == 409 and "resolution run" in r.json()["detail"]
    assert client.get(f"/api/knowledge/sources/{src['id']}", headers=h).status_code == 200


# -- scopes ------------------------------------------------------------------------------------------------------


def test_a_read_key_reads_but_cannot_register_sync_or_push(client, account):
    w = account.headers(RW)
    src = register(client, w, "product/faq")
    r = account.headers("knowledge:r")
    assert client.get("/api/knowledge/sources", headers=r).status_code == 200
    assert client.get("/api/knowledge/catalog", headers=r).status_code == 200
    for method, path, body in (
        ("POST", "/api/knowledge/sources", {"type": "local", "repository_url": "x"}),
        ("POST", f"/api/knowledge/sources/{src['id']}/snapshots", {"files": []}),
        ("POST", f"/api/knowledge/sources/{src['id']}/sync", {}),
        ("DELETE", f"/api/knowledge/sources/{src['id']}", None),
    ):
        denied = client.request(method, path, json=body, headers=r)
        assert denied.status_code == 403 and "knowledge:rw" in denied.text, (method, path)
