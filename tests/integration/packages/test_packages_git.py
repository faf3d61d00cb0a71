"""Git sync against a real smart-HTTP server and forge-like archive endpoints on loopback."""

from __future__ import annotations

import io
import itertools
import tarfile
import uuid

import psycopg
import pytest

from agentmate.core.errors import DomainError, ServiceUnavailable, TooLarge, ValidationFailed
from agentmate.packages import service
from agentmate.packages.git import GitFetcher
from agentmate.packages.identity import package_hash, sha256_hex
from agentmate.packages.limits import PackageLimits, PackageSettings, SyncLimits
from agentmate.packages.net import Deadline, SafeHttp
from agentmate.packages.policy import NetPolicy, Refused
from agentmate.packages.schemas import SourceInput
from tests.integration.packages.conftest import TABLES
from tests.integration.packages.gitserver import GitServer, commit_tree, make_tar

NAMES = {
    "git.test": "127.0.0.1",
    "github.test": "127.0.0.1",
    "codeload.test": "127.0.0.1",
    "evil.test": "127.0.0.1",
    "private.test": "10.0.0.5",
    "metadata.test": "169.254.169.254",
    "mixed.test": "127.0.0.1,10.0.0.5",
    "mapped.test": "::ffff:10.0.0.5",
}
PACKAGE = {
    "skills/web/SKILL.md": b"---\nname: web\n---\nBody\n",
    "skills/web/refs/a.md": b"# A\n",
    "skills/web/img/logo.png": b"\x89PNG\r\n\x1a\n\x00\x01",
    "skills/other/SKILL.md": b"other\n",
    "README.md": b"repo readme\n",
}


def resolver(host: str, port: int) -> list[str]:
    if host not in NAMES:
        raise OSError("unknown host")
    return NAMES[host].split(",")


def make_policy(**kw) -> NetPolicy:
    base = dict(
        allowed_hosts=(
            "git.test:*",
            "github.test:*",
            "codeload.test:*",
            "private.test:*",
            "metadata.test:*",
            "mixed.test:*",
            "mapped.test:*",
        ),
        allowed_schemes=("http",),
        allowed_private_networks=("127.0.0.1/32", "169.254.0.0/16"),
        resolver=resolver,
    )
    return NetPolicy(**{**base, **kw})


SETTINGS = PackageSettings(archive_providers={"github.test": "github"}, git_tokens={})


@pytest.fixture(scope="module")
def server():
    srv = GitServer().start()
    srv.main_sha = commit_tree(srv.repo("acme/skills"), PACKAGE)
    repo = srv.repo("acme/skills")
    srv.tag_sha = srv.main_sha
    repo.refs[b"refs/tags/v1"] = repo.refs[b"refs/heads/main"]
    yield srv
    srv.stop()


def fetcher(**kw) -> GitFetcher:
    return GitFetcher(kw.pop("policy", make_policy()), kw.pop("settings", SETTINGS), **kw)


def _kept(fetched) -> dict[str, bytes]:
    return dict(fetched.files)


EXPECTED = {
    "SKILL.md": PACKAGE["skills/web/SKILL.md"],
    "refs/a.md": PACKAGE["skills/web/refs/a.md"],
    "img/logo.png": PACKAGE["skills/web/img/logo.png"],
}


def test_smart_http_resolves_the_ref_and_keeps_only_the_package_path(server):
    # When a non-forge host is synced, dulwich fetches the commit over smart HTTP
    fetched = fetcher().fetch(server.url("git.test", "acme/skills"), "skills/web", "main")
    assert fetched.commit_sha == server.main_sha
    assert _kept(fetched) == EXPECTED


def test_forge_archive_is_fetched_through_the_codeload_redirect(server):
    server.requests.clear()
    fetched = fetcher().fetch(server.url("github.test", "acme/skills"), "skills/web", "v1")
    assert fetched.commit_sha == server.main_sha
    assert _kept(fetched) == EXPECTED
    hosts = [(h.split(":")[0], p) for h, p, _ in server.requests]
    assert ("github.test", f"/acme/skills/archive/{server.main_sha}.tar.gz") in hosts
    assert ("codeload.test", f"/acme/skills/tar.gz/{server.main_sha}") in hosts


def test_refs_resolve_heads_tags_head_and_full_shas(server):
    url = server.url("git.test", "acme/skills")
    f = fetcher()
    assert f.fetch(url, "skills/web", "HEAD").commit_sha == server.main_sha
    assert f.fetch(url, "skills/web", "refs/heads/main").commit_sha == server.main_sha
    assert f.fetch(url, "skills/web", server.main_sha).commit_sha == server.main_sha
    with pytest.raises(ValidationFailed) as err:
        f.fetch(url, "skills/web", "no-such-branch")
    assert err.value.errors[0].field == "ref"
    with pytest.raises(ValidationFailed) as err:
        f.fetch(url, "skills/web", "../../etc")
    assert err.value.errors[0].field == "ref"


def _register_git(db, store, actor, url, path="skills/web"):
    with db.tenant(actor.account_id) as conn:
        return service.register_source(
            conn, store, actor, SourceInput(type="git", repository_url=url, package_path=path), make_policy()
        ).source


def _revision_count(owner_url, source_id) -> int:
    with psycopg.connect(owner_url) as conn:
        return conn.execute(
            f"SELECT count(*) FROM {TABLES.revisions} WHERE source_id = %s", (source_id,)
        ).fetchone()[0]


def _source_row(owner_url, source_id):
    with psycopg.connect(owner_url) as conn:
        return conn.execute(
            f"SELECT status, last_error, last_commit_sha, active_revision_id FROM {TABLES.sources}"
            " WHERE id = %s",
            (source_id,),
        ).fetchone()


def test_sync_ingests_the_commit_idempotently(db, store, actor, server, owner_url):
    src = _register_git(db, store, actor, server.url("github.test", "acme/skills"))
    first = service.sync_source(db, store, actor, src.id, fetcher(), ref="main")
    rev = first.ingested.revision
    assert first.ingested.created
    assert (rev.origin, rev.commit_sha, rev.ref, rev.file_count) == ("git", server.main_sha, "main", 3)
    assert rev.package_hash == package_hash((p, sha256_hex(b), len(b)) for p, b in EXPECTED.items())
    # The same commit over the other transport is the same package: replayed, not duplicated
    again = service.sync_source(db, store, actor, src.id, fetcher(), ref="v1")
    assert (again.ingested.created, again.ingested.revision.id) == (False, rev.id)
    assert _revision_count(owner_url, src.id) == 1
    assert _source_row(owner_url, src.id)[:3] == ("ready", None, server.main_sha)


def _hostile(server, files=None, extra=None, top=None) -> str:
    """A commit whose forge archive is replaced by a hostile tarball; returns the commit SHA."""
    sha = commit_tree(server.repo("acme/hostile"), {"pkg/SKILL.md": uuid.uuid4().hex.encode()})
    body = make_tar(top or f"hostile-{sha}", files or {}, extra=extra, comment=sha)
    server.archives[("acme/hostile", sha)] = body
    return sha


def _assert_sync_fails(db, store, actor, server, owner_url, sha, error, match, **fetch_kw):
    src = _register_git(db, store, actor, server.url("github.test", "acme/hostile"), path="pkg")
    with pytest.raises(error, match=match):
        service.sync_source(db, store, actor, src.id, fetcher(**fetch_kw), ref=sha)
    status, last_error, _, active = _source_row(owner_url, src.id)
    assert (status, active) == ("error", None)
    assert match.split("|")[0].replace("\\", "") in last_error or pytest.fail(last_error)
    assert _revision_count(owner_url, src.id) == 0


@pytest.mark.parametrize(
    ("files", "match"),
    [
        ({"pkg/SKILL.md": b"x", "pkg/link.md": ("link", "SKILL.md")}, "links are refused"),
        ({"pkg/SKILL.md": b"x", "pkg/etc": ("link", "/etc/passwd")}, "links are refused"),
        ({"pkg/SKILL.md": b"x", "pkg/hard.md": ("hardlink", "pkg/SKILL.md")}, "links are refused"),
        ({"pkg/SKILL.md": b"nul \x00 byte"}, "contains a NUL byte"),
        ({"pkg/SKILL.md": b"bad \xc3\x28 utf8"}, "not valid UTF-8"),
    ],
)
def test_hostile_archive_entries_fail_the_sync_and_write_nothing(
    db, store, actor, server, owner_url, files, match
):
    sha = _hostile(server, files)
    _assert_sync_fails(db, store, actor, server, owner_url, sha, ValidationFailed, match)


def test_traversal_absolute_and_device_entries_are_refused(db, store, actor, server, owner_url):
    for name in ["../escape.md", "/etc/cron.d/x"]:
        info = tarfile.TarInfo(name)
        info.size = 1
        sha = _hostile(server, {"pkg/SKILL.md": b"x"}, extra=[info])
        _assert_sync_fails(db, store, actor, server, owner_url, sha, ValidationFailed, "outside the archive")
    dev = tarfile.TarInfo("x/pkg/dev")
    dev.type = tarfile.CHRTYPE
    sha = _hostile(server, {"pkg/SKILL.md": b"x"}, extra=[dev], top="x")
    _assert_sync_fails(db, store, actor, server, owner_url, sha, ValidationFailed, "only regular files")


def test_archive_bombs_stop_at_the_first_limit(db, store, actor, server, owner_url):
    # A member outside the package still counts: the archive's unpacked bytes are bounded
    sha = _hostile(server, {"pkg/SKILL.md": b"x", "junk.bin": b"\0" * 300_000})
    _assert_sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        sha,
        TooLarge,
        "max_archive_bytes=100000",
        sync_limits=SyncLimits(max_archive_bytes=100_000),
    )
    sha = _hostile(server, {f"n{i}": b"" for i in range(50)})
    _assert_sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        sha,
        TooLarge,
        "max_archive_members=20",
        sync_limits=SyncLimits(max_archive_members=20),
    )
    sha = _hostile(server, {"pkg/SKILL.md": b"y" * 5000})
    _assert_sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        sha,
        TooLarge,
        "max_download_bytes=100",
        sync_limits=SyncLimits(max_download_bytes=100),
    )
    sha = _hostile(server, {"pkg/SKILL.md": b"y" * 5000})
    _assert_sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        sha,
        TooLarge,
        "max_file_bytes=1000",
        package_limits=PackageLimits(max_file_bytes=1000),
    )
    sha = _hostile(server, {f"pkg/{i}.md": b"x" for i in range(5)})
    _assert_sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        sha,
        TooLarge,
        "max_files=3",
        package_limits=PackageLimits(max_files=3),
    )


def test_a_sync_beyond_its_time_budget_is_refused_naming_the_limit(db, store, actor, server, owner_url):
    ticks = itertools.count(0, 4)
    sha = _hostile(server, {"pkg/SKILL.md": b"x", "pkg/b.md": b"y"})
    _assert_sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        sha,
        TooLarge,
        "sync_budget_s=10",
        sync_limits=SyncLimits(budget_s=10),
        clock=lambda: float(next(ticks)),
    )


def test_git_trees_with_links_or_submodules_are_refused(server):
    repo = server.repo("acme/links")
    url = server.url("git.test", "acme/links")
    sha = commit_tree(repo, {"pkg/SKILL.md": b"x", "pkg/l": ("link", "../../secret")})
    with pytest.raises(ValidationFailed, match="symbolic links are refused"):
        fetcher().fetch(url, "pkg", sha)
    sha = commit_tree(repo, {"pkg/SKILL.md": b"x", "pkg/sub": ("gitlink", "a" * 40)})
    with pytest.raises(ValidationFailed, match="submodules"):
        fetcher().fetch(url, "pkg", sha)


def test_a_tiny_pack_that_inflates_past_the_limit_is_refused_before_inflating(server):
    repo = server.repo("acme/packbomb")
    sha = commit_tree(repo, {"pkg/SKILL.md": b"x", "pkg/zeros.txt": b"\0" * 2_000_000})
    with pytest.raises(TooLarge, match="inflates to more than max_archive_bytes=500000"):
        fetcher(sync_limits=SyncLimits(max_archive_bytes=500_000)).fetch(
            server.url("git.test", "acme/packbomb"), "pkg", sha
        )


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("file:///etc/passwd", "scheme 'file'"),
        ("git://git.test/acme/skills", "scheme 'git'"),
        ("ssh://git.test/acme/skills", "scheme 'ssh'"),
        ("http://user:secret@git.test:{port}/acme/skills", "credentials"),
        ("http://unlisted.test:{port}/acme/skills", "allow-list"),
        ("http://private.test:{port}/acme/skills", "private or loopback"),
        ("http://mixed.test:{port}/acme/skills", "private or loopback"),
        ("http://mapped.test:{port}/acme/skills", "private or loopback"),
        ("http://metadata.test:{port}/acme/skills", "cloud metadata"),
    ],
)
def test_ssrf_refusals(server, url, match):
    with pytest.raises(ValidationFailed, match=match) as err:
        fetcher().fetch(url.format(port=server.port), "skills/web", "main")
    assert err.value.errors[0].field == "repository_url"


def test_loopback_is_refused_without_the_operators_opt_in(server):
    with pytest.raises(ValidationFailed, match="private or loopback"):
        fetcher(policy=make_policy(allowed_private_networks=())).fetch(
            server.url("git.test", "acme/skills"), "skills/web", "main"
        )


@pytest.mark.parametrize(
    ("location", "match"),
    [
        ("http://evil.test:{port}/acme/skills/tar.gz/{sha}", "allow-list"),
        ("http://private.test:{port}/acme/skills/tar.gz/{sha}", "private or loopback"),
        ("http://169.254.169.254/latest/meta-data/", "allow-list"),
        ("http://metadata.test/latest/meta-data/", "allow-list|cloud metadata"),
        ("file:///etc/passwd", "scheme 'file'"),
    ],
)
def test_every_redirect_hop_is_checked_again(db, store, actor, server, owner_url, location, match):
    sha = server.main_sha
    path = f"/acme/skills/archive/{sha}.tar.gz"
    server.redirects[path] = location.format(port=server.port, sha=sha)
    try:
        src = _register_git(db, store, actor, server.url("github.test", "acme/skills"))
        with pytest.raises(ValidationFailed, match=match):
            service.sync_source(db, store, actor, src.id, fetcher(), ref="main")
        assert _source_row(owner_url, src.id)[0] == "error"
        assert _revision_count(owner_url, src.id) == 0
    finally:
        del server.redirects[path]


def test_connections_use_the_address_that_was_checked(server):
    # A name only our resolver knows: success proves the socket went to the checked address, not to a second
    # (system) lookup of the name.
    calls: list[str] = []
    answers = iter(["127.0.0.1", "10.0.0.5"])  # a rebinding DNS: public-enough first, private afterwards

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return [next(answers, "10.0.0.5")]

    policy = make_policy(allowed_hosts=("rebind.test:*",), resolver=rebinding)
    with SafeHttp(policy, Deadline(10)) as http:
        response, _ = http.open("GET", f"http://rebind.test:{server.port}/acme/skills/info/refs")
        response.read()
        assert response.status_code == 200
    # A new connection resolves again and is checked again: the rebound answer is refused, never connected to
    with SafeHttp(policy, Deadline(10)) as http, pytest.raises(Refused, match="private or loopback"):
        http.open("GET", f"http://rebind.test:{server.port}/acme/skills/info/refs")
    assert calls == ["rebind.test", "rebind.test"]


def test_an_access_token_goes_only_to_its_host(server):
    settings = PackageSettings(
        archive_providers={"github.test": "github"}, git_tokens={"github.test": "s3cret"}
    )
    server.requests.clear()
    fetcher(settings=settings).fetch(server.url("github.test", "acme/skills"), "skills/web", "main")
    sent = [(h.split(":")[0], a) for h, _, a in server.requests]
    # ls-remote carries it as basic auth (x-access-token:s3cret), the archive request as a bearer token
    assert {a for h, a in sent if h == "github.test"} == {
        "Basic eC1hY2Nlc3MtdG9rZW46czNjcmV0",
        "Bearer s3cret",
    }
    # and the redirect to the codeload host does not carry it
    assert {a for h, a in sent if h == "codeload.test"} == {""}


def test_unreachable_and_missing_repositories(server):
    with pytest.raises(ValidationFailed, match="no git repository"):
        fetcher().fetch(server.url("git.test", "acme/none"), "x", "main")
    with pytest.raises(ServiceUnavailable):
        fetcher().fetch("http://git.test:1/acme/skills", "x", "main")
    with pytest.raises(ValidationFailed) as err:
        fetcher().fetch(server.url("git.test", "acme/skills"), "no/such/path", "main")
    assert err.value.errors[0].field == "package_path"
    assert isinstance(err.value, DomainError)


def test_a_valid_tar_with_two_top_folders_is_refused():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in ("a/pkg/x.md", "b/pkg/y.md"):
            info = tarfile.TarInfo(name)
            info.size = 1
            tar.addfile(info, io.BytesIO(b"x"))
    from agentmate.packages.git import PackageRefused, read_tar

    buf.seek(0)
    with pytest.raises(PackageRefused, match="outside the archive's top folder"):
        read_tar(buf, "pkg", PackageLimits(), SyncLimits(), Deadline(10))
