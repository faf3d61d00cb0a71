"""Hostile archives (issue 20, items 3 and 4): member names that are not UTF-8, and extended tar headers that
would make the interpreter's tarfile stall (CVE-2024-6232) or read without bound. Sync-path tests serve the
tarball from the loopback forge; the rest call read_tar on the bytes."""

from __future__ import annotations

import io
import random
import stat
import tarfile
import uuid

import pytest
from dulwich.objects import Blob, Commit, Tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmate.core.errors import DomainError, TooLarge, ValidationFailed
from agentmate.packages import service
from agentmate.packages.archive import MAX_EXTENDED_HEADER, check_pax
from agentmate.packages.git import PackageRefused, read_tar
from agentmate.packages.limits import PackageLimits, SyncLimits
from agentmate.packages.net import Deadline
from agentmate.packages.policy import Exhausted, Upstream
from tests.integration.packages.gitserver import (
    GitServer,
    github_tar,
    gz_tar,
    pax_records,
    tar_entry,
)
from tests.integration.packages.test_packages_git import _register_git, _revision_count, _source_row, fetcher


@pytest.fixture(scope="module")
def server():
    srv = GitServer().start()
    yield srv
    srv.stop()


def _serve(server: GitServer, build) -> tuple[str, str]:
    """Serve ``build(top, sha)`` as the forge archive of a fresh commit id; returns (repository URL, sha)."""
    sha = (uuid.uuid4().hex * 2)[:40]
    server.archives[("acme/archive", sha)] = build(f"archive-{sha}", sha)
    return server.url("github.test", "acme/archive"), sha


def _sync_fails(db, store, actor, server, owner_url, build, error, match):
    url, sha = _serve(server, build)
    src = _register_git(db, store, actor, url, path="pkg")
    with pytest.raises(error, match=match) as err:
        service.sync_source(db, store, actor, src.id, fetcher(), ref=sha)
    status, last_error, _, active = _source_row(owner_url, src.id)
    assert (status, active) == ("error", None)
    assert last_error == err.value.detail
    assert _revision_count(owner_url, src.id) == 0
    return err.value


def _read(body: bytes, **limits) -> list[tuple[str, bytes]]:
    return read_tar(io.BytesIO(body), "pkg", PackageLimits(), SyncLimits(**limits), Deadline(60))


class Counting(io.RawIOBase):
    """A source that counts the compressed bytes read from it."""

    def __init__(self, data: bytes) -> None:
        self._data, self.consumed = io.BytesIO(data), 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        out = self._data.read(size)
        self.consumed += len(out)
        return out


# --- item 4: extended headers are bounded before tarfile parses them ------------------------------------------


def test_the_290_byte_tarball_of_120000_pax_digits_is_a_413_through_sync(db, store, actor, server, owner_url):
    # Given the issue's tarball: a pax header of 120,000 digits (tarfile on 3.11/3.12 parses it in ~17 s)
    def build(top: str, sha: str) -> bytes:
        return gz_tar(
            tar_entry(b"pax", b"x", b"1" * 120_000), tar_entry(f"{top}/pkg/a.md".encode(), b"0", b"a")
        )

    assert len(build("x", "y")) < 400
    # Then the sync is refused naming the limit, and nothing is written
    err = _sync_fails(
        db,
        store,
        actor,
        server,
        owner_url,
        build,
        TooLarge,
        f"extended header at offset 0 is 120000 bytes; the limit is {MAX_EXTENDED_HEADER}",
    )
    assert isinstance(err, DomainError)


def test_an_oversized_pax_header_is_refused_before_its_data_is_read():
    # Random digits do not compress, so the header's data is most of the compressed stream
    rng = random.Random(7)
    digits = "".join(rng.choice("0123456789") for _ in range(120_000)).encode()
    body = gz_tar(tar_entry(b"x/pax", b"x", digits), tar_entry(b"x/pkg/a.md", b"0", b"a"))
    source = Counting(body)
    with pytest.raises(Exhausted, match="is 120000 bytes; the limit is 65536"):
        read_tar(source, "pkg", PackageLimits(), SyncLimits(), Deadline(60))
    # The refusal came from the 512-byte header alone: most of the archive was never read, let alone parsed
    assert source.consumed < len(body) // 2


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"1" * 60_000, "a run of more than 256 digits"),  # under the size bound, still quadratic to tarfile
        (pax_records([(b"comment", b"7" * 300)]), "a run of more than 256 digits"),
        (b"0" * 20 + b"36 path=x/pkg/aaaaaaaaaaaaaaaaaa.md\n", "length of 1 to 20 digits"),
        (b"30 path=x/pkg/a.md\n", "length does not match"),
        (b"12 pathx/pk\n", "keyword=value"),
        (pax_records([(b"path", b"x/pkg/a.md")]) + b"junk", "must start with a length"),
        (pax_records([(b"path", b"x/pkg/a.md")]) + b"\0junk", "bytes after the last record"),
        (pax_records([(b"size", b"-600")]), "size must be a decimal number"),
        (pax_records([(b"GNU.sparse.size", b"10")]), "sparse files are not supported"),
    ],
)
def test_malformed_pax_headers_are_refused_as_the_package(data, match):
    body = gz_tar(tar_entry(b"x/", b"5"), tar_entry(b"x/h", b"x", data), tar_entry(b"x/pkg/a.md", b"0", b"a"))
    with pytest.raises(PackageRefused, match=match) as err:
        _read(body)
    assert err.value.errors[0].field == "package"


@pytest.mark.parametrize(
    ("entries", "error", "match"),
    [
        ([tar_entry(b"././@LongLink", b"L", b"x/pkg/" + b"a" * 70_000)], Exhausted, "is 70006 bytes"),
        (
            [
                tar_entry(b"h1", b"x", pax_records([(b"mtime", b"1")])),
                tar_entry(b"h2", b"x", pax_records([])),
            ],
            PackageRefused,
            "repeated extended headers",
        ),
        (
            [tar_entry(b"g", b"g", pax_records([(b"size", b"5")]))],
            PackageRefused,
            "a global header may not set size",
        ),
        (
            [tar_entry(b"g", b"g", pax_records([(b"k%d" % i, b"v") for i in range(65)]))],
            PackageRefused,
            "more than 64 global records",
        ),
        ([tar_entry(b"x/pkg/s", b"S", b"")], PackageRefused, "sparse files"),
        ([tar_entry(b"x/pkg/n", b"0", size=b"\xff" * 12)], PackageRefused, "negative size"),
    ],
)
def test_extended_header_abuse_is_refused(entries, error, match):
    body = gz_tar(tar_entry(b"x/", b"5"), *entries, tar_entry(b"x/pkg/a.md", b"0", b"a"))
    with pytest.raises(error, match=match):
        _read(body)


def test_a_truncated_extended_header_is_an_upstream_failure_not_a_parse():
    raw = tar_entry(b"x/", b"5") + tar_entry(b"x/h", b"x", b"1" * 5000)[:2048]
    import gzip

    with pytest.raises(Upstream, match="truncated"):
        _read(gzip.compress(raw))


def test_inflating_counts_against_max_archive_bytes_and_reading_against_the_deadline():
    body = gz_tar(tar_entry(b"x/", b"5"), tar_entry(b"x/zeros", b"0", b"\0" * 3_000_000))
    with pytest.raises(Exhausted, match="max_archive_bytes=1000000"):
        _read(body, max_archive_bytes=1_000_000)
    ticks = iter(range(0, 10_000, 1))
    with pytest.raises(Exhausted, match="sync_budget_s=5"):
        read_tar(
            io.BytesIO(body), "pkg", PackageLimits(), SyncLimits(), Deadline(5, lambda: float(next(ticks)))
        )


def test_an_extended_header_the_scan_missed_is_refused_not_parsed(monkeypatch):
    # Should the scan ever disagree with tarfile on where a header starts, tarfile still parses no extended
    # header the scan did not check (simulated by switching the scan off)
    from agentmate.packages import archive

    monkeypatch.setattr(archive.TarStream, "_scan", lambda self, upto: None)
    with pytest.raises(PackageRefused, match="extended header at offset 0 was not pre-checked"):
        _read(github_tar("top", "f" * 40, {"pkg/a.md": b"a"}))


# --- forge archives keep working ---------------------------------------------------------------------------

LONG = "pkg/refs/" + "a-rather-long-folder-name/" * 4 + "and-a-file-name-that-does-not-fit-ustar.md"


def _gnu_tar(top: str, sha: str) -> bytes:
    """The same files written in GNU format (a ``././@LongLink`` ``L`` header for the long name)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for path, data in {"pkg/SKILL.md": b"skill\n", LONG: b"long\n"}.items():
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize(
    "build",
    [
        lambda top, sha: github_tar(
            top, sha, {"pkg/SKILL.md": b"skill\n", LONG: b"long\n", "README.md": b"r\n"}
        ),
        _gnu_tar,
    ],
    ids=["git-archive-pax", "gnu-longlink"],
)
def test_forge_tarballs_with_a_global_commit_header_and_long_names_sync(
    db, store, actor, server, owner_url, build
):
    assert len(f"archive-{'0' * 40}/{LONG}") > 155  # too long for ustar's name and prefix fields
    url, sha = _serve(server, build)
    src = _register_git(db, store, actor, url, path="pkg")
    outcome = service.sync_source(db, store, actor, src.id, fetcher(), ref=sha)
    assert outcome.ingested.revision.file_count == 2
    assert _source_row(owner_url, src.id)[:3] == ("ready", None, sha)
    files = dict(_read(build("archive-x", sha)))
    assert files == {"SKILL.md": b"skill\n", LONG.removeprefix("pkg/"): b"long\n"}


def test_check_pax_reads_the_records_git_archive_writes():
    sha = "f83db5759a2b5f24e81ed91e694229bcdf9017c4"
    assert check_pax(b"52 comment=" + sha.encode() + b"\n" + b"\0" * 460, 0) == [(b"comment", sha.encode())]


# --- item 3: member names that are not UTF-8 ---------------------------------------------------------------


def _ustar_name(top: str, sha: str) -> bytes:
    return gz_tar(
        tar_entry(f"{top}/".encode(), b"5"),
        tar_entry(f"{top}/pkg/SKILL.md".encode(), b"0", b"x"),
        tar_entry(f"{top}/pkg/caf".encode() + b"\xff.md", b"0", b"y"),
    )


def _pax_name(top: str, sha: str) -> bytes:
    return gz_tar(
        tar_entry(f"{top}/".encode(), b"5"),
        tar_entry(b"h.paxheader", b"x", pax_records([(b"path", f"{top}/pkg/caf".encode() + b"\xff.md")])),
        tar_entry(b"h.data", b"0", b"y"),
    )


@pytest.mark.parametrize("build", [_ustar_name, _pax_name], ids=["ustar-name", "pax-path"])
def test_a_member_name_that_is_not_utf8_is_a_400_naming_it_escaped(
    db, store, actor, server, owner_url, build
):
    err = _sync_fails(db, store, actor, server, owner_url, build, ValidationFailed, "not valid UTF-8")
    assert err.errors[0].field == "package"
    assert err.errors[0].message == "caf\\xff.md: a file name is not valid UTF-8"


def test_both_transports_refuse_a_name_that_is_not_utf8_alike(server):
    # The smart-HTTP path reads the same name from a git tree: one shared check, one message
    repo = server.repo("acme/names")
    blob = Blob.from_string(b"y")
    inner, outer = Tree(), Tree()
    inner.add(b"caf\xff.md", 0o100644, blob.id)
    outer.add(b"pkg", stat.S_IFDIR, inner.id)
    commit = Commit()
    commit.tree = outer.id
    commit.author = commit.committer = b"T <t@example.com>"
    commit.author_time = commit.commit_time = 0
    commit.author_timezone = commit.commit_timezone = 0
    commit.message = b"names"
    for obj in (blob, inner, outer, commit):
        repo.object_store.add_object(obj)
    repo.refs[b"refs/heads/main"] = commit.id
    with pytest.raises(PackageRefused) as smart:
        fetcher().fetch(server.url("git.test", "acme/names"), "pkg", commit.id.decode())
    with pytest.raises(PackageRefused) as archive:
        _read(_ustar_name("x", ""))
    assert smart.value.errors[0].message == archive.value.errors[0].message


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"x/pkg/a\x00b.md", "ValueError"),  # a NUL (pax path): refused before any path function sees it
        (b"x/pkg/\x1b[31mred\x1b[0m.md", "control"),  # terminal escapes: refused, shown escaped
    ],
)
def test_hostile_but_decodable_names_are_refused_without_leaking_them(name, shown):
    body = gz_tar(
        tar_entry(b"x/", b"5"),
        tar_entry(b"h", b"x", pax_records([(b"path", name)])),
        tar_entry(b"d", b"0", b"y"),
    )
    try:
        files = _read(body)
    except ValidationFailed as exc:
        assert shown in exc.detail
        assert "\x00" not in exc.detail and "\x1b" not in exc.detail
    else:
        # read_tar keeps it; the validation every file passes (prepare_raw) refuses it
        from agentmate.packages.identity import prepare_raw

        with pytest.raises(ValidationFailed, match=shown) as err:
            prepare_raw(files, PackageLimits())
        assert "\x1b" not in err.value.detail


def test_through_the_route_the_archive_problems_are_problem_json_400_and_413(
    client, account, server, monkeypatch
):
    # Given a skills git source on the loopback forge (the route the issue's hostile host was reached by)
    from agentmate.packages.git import GitFetcher
    from agentmate.skills.registry import service as registry
    from tests.integration.packages.test_packages_git import SETTINGS, make_policy

    policy = make_policy()
    monkeypatch.setattr(registry, "net_policy", lambda: policy)
    monkeypatch.setattr(registry, "fetcher", lambda: GitFetcher(policy, SETTINGS))
    h = account.headers("skills:rw")

    def bomb(top: str, sha: str) -> bytes:
        return gz_tar(tar_entry(b"pax", b"x", b"1" * 120_000))

    for build, status in [(_ustar_name, 400), (bomb, 413)]:
        url, sha = _serve(server, build)
        source = client.post(
            "/api/skills/sources",
            json={"type": "git", "repository_url": url, "package_path": "pkg"},
            headers=h,
        ).json()
        # When it is synced
        r = client.post(f"/api/skills/sources/{source['id']}/sync", json={"ref": sha}, headers=h)
        # Then the answer names the archive's problem, never a 500
        assert r.status_code == status, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        problem = r.json()
        if status == 400:
            assert problem["errors"][0] == {
                "field": "package",
                "message": "caf\\xff.md: a file name is not valid UTF-8",
            }
        else:
            assert "the limit is 65536" in problem["detail"]


# --- properties: whatever the headers, a clean archive error or parsed members -----------------------------

_KEYWORDS = st.sampled_from(
    [
        b"path",
        b"size",
        b"hdrcharset",
        b"linkpath",
        b"mtime",
        b"uid",
        b"comment",
        b"GNU.sparse.map",
        b"SCHILY.xattr.user.x",
    ]
) | st.binary(min_size=1, max_size=8)
_VALUES = (
    st.binary(max_size=40)
    | st.sampled_from([b"BINARY", b"x/pkg/a.md", b"x/pkg/\xff", b"12", b"-1"])
    | st.integers(0, 400).map(lambda n: b"9" * n)
)
_PAX_DATA = (
    st.lists(st.tuples(_KEYWORDS, _VALUES), max_size=4).map(pax_records)
    | st.binary(max_size=300)
    | st.integers(0, 5000).map(lambda n: b"1" * n)
)
_NAMES = (
    st.binary(max_size=110)
    | st.sampled_from(
        [
            b"x/pkg/a.md",
            b"x/pkg/caf\xff.md",
            b"x/",
            b"y/pkg/b.md",
            b"x/pkg/../a.md",
            b"/etc/passwd",
            b"x/pkg/d/",
        ]
    )
    | st.binary(max_size=20).map(lambda b: b"x/pkg/" + b)
)
_TYPES = st.sampled_from(
    [b"0", b"\0", b"1", b"2", b"3", b"5", b"7", b"x", b"g", b"X", b"L", b"K", b"S", b"V"]
)
_SIZES = st.none() | st.integers(0, 70_000) | st.binary(min_size=12, max_size=12)


@st.composite
def _entries(draw: st.DrawFn) -> bytes:
    typeflag = draw(_TYPES)
    name = draw(_NAMES)
    if typeflag in (b"x", b"g", b"X"):
        data = draw(_PAX_DATA)
    elif typeflag in (b"L", b"K"):
        data = draw(_NAMES)
    else:
        data = draw(st.binary(max_size=40))
    return tar_entry(name, typeflag, data, size=draw(_SIZES) if draw(st.booleans()) else None)


@st.composite
def _archives(draw: st.DrawFn) -> bytes:
    entries = draw(st.lists(_entries(), max_size=6))
    if draw(st.booleans()):
        entries.insert(0, tar_entry(b"x/", b"5"))
    raw = gz_tar(*entries, end=draw(st.booleans()))
    cut = draw(st.none() | st.integers(0, len(raw)))
    return raw if cut is None else raw[:cut]


def _clean(message: str) -> None:
    message.encode("utf-8")  # storable as the source's last_error
    assert "\x00" not in message


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_archives())
def test_any_archive_is_parsed_or_refused_cleanly(body):
    try:
        files = _read(body, max_archive_bytes=1 << 20)
    except ValidationFailed as exc:
        assert exc.errors and exc.errors[0].field == "package"
        _clean(exc.detail)
    except (Exhausted, Upstream) as exc:
        _clean(str(exc))
    else:
        for name, data in files:
            name.encode("utf-8")
            assert isinstance(data, bytes)


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=120) | st.lists(st.tuples(_KEYWORDS, _VALUES), max_size=5).map(pax_records))
def test_check_pax_returns_records_or_refuses(data):
    try:
        records = check_pax(data, 0)
    except PackageRefused as exc:
        _clean(exc.detail)
    else:
        assert all(k and b"=" not in k for k, _ in records)


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(min_size=1, max_size=60))
def test_a_member_name_is_kept_exactly_or_refused_escaped(name):
    body = gz_tar(
        tar_entry(b"x/", b"5"),
        tar_entry(b"h", b"x", pax_records([(b"path", b"x/pkg/" + name)])),
        tar_entry(b"d", b"0", b"y"),
    )
    try:
        files = _read(body)
    except ValidationFailed as exc:
        _clean(exc.detail)
        assert all(c.isprintable() for c in exc.errors[0].message)
    except Upstream:
        pass  # e.g. a name tarfile cannot take at all
    else:
        kept = [n for n, _ in files]
        assert all(n.encode("utf-8") for n in kept)
        if kept:
            assert b"x/pkg/" + name.rstrip(b"/") == f"x/pkg/{kept[0]}".encode()
