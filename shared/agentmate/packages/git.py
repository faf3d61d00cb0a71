"""Git sync of public packages without a git binary (no subprocess: an external process would bypass the
address checks of agentmate.packages.net).

1. Resolve the ref to an immutable commit through git's smart-HTTP ref advertisement (dulwich's client over our
   checked httpx transport; no REST API, so no REST rate limit applies).
2. Fetch the tree at that commit and keep only the package path:
   * GitHub-like hosts: ``/{owner}/{repo}/archive/{sha}.tar.gz`` (redirects to codeload; every hop re-checked);
   * GitLab-like hosts: ``/api/v4/projects/{path}/repository/archive.tar.gz?sha={sha}&path={package_path}``;
   * any other host: dulwich ``fetch_pack`` at depth 1 over smart HTTP into memory.
   Archives are read as a stream, inflated and header-checked by agentmate.packages.archive before ``tarfile``
   parses a header (no interpreter's pax parser sees an unbounded header); every member passes
   ``tarfile.data_filter`` (the ``filter="data"`` rules: no absolute paths, no escapes, no special files), and
   symlinks and hard links inside the package are refused outright, because the data filter admits links that
   stay inside the tree. Entry names that are not UTF-8 are refused on both paths (``identity.entry_name``).
3. Every byte counts against SyncLimits (download, archive bytes and members, time budget) and PackageLimits
   (files and bytes kept), so an archive bomb stops at the first limit it reaches.
"""

from __future__ import annotations

import io
import re
import ssl
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from agentmate.core.errors import DomainError, FieldError, ServiceUnavailable, TooLarge, ValidationFailed
from agentmate.packages.archive import tar_gz_members
from agentmate.packages.identity import PackageRefused, entry_name, shown_name
from agentmate.packages.limits import (
    GIT_LIMITS,
    PackageLimits,
    PackageSettings,
    SyncLimits,
    get_package_settings,
)
from agentmate.packages.net import Deadline, SafeHttp, read_capped
from agentmate.packages.policy import Exhausted, NetPolicy, OutOfTime, Refused, SyncTimedOut, Upstream
from agentmate.packages.schemas import Fetched

_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]{0,254}$")


def invalid(field: str, message: str) -> ValidationFailed:
    """A one-field 400 whose detail says what is wrong (it is also what a failed sync records)."""
    return ValidationFailed([FieldError(field, message)], f"{field}: {message}")


@dataclass(frozen=True, slots=True)
class _Repo:
    url: str  # as registered, without a trailing '/'
    host_key: str  # host[:port] used for the provider and token maps
    host: str
    path: str  # repository path without '.git'


def _repo(url: str) -> _Repo:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    host_key = f"{host}:{parts.port}" if parts.port else host
    path = parts.path.strip("/")
    path = path[:-4] if path.endswith(".git") else path
    return _Repo(url.rstrip("/"), host_key, host, path)


class GitFetcher:
    """Fetches ``package_path`` of a repository at a ref (``service.Fetcher``)."""

    def __init__(
        self,
        policy: NetPolicy,
        settings: PackageSettings | None = None,
        *,
        package_limits: PackageLimits = GIT_LIMITS,
        sync_limits: SyncLimits | None = None,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        settings = settings or get_package_settings()
        self._clock = clock
        self.policy = policy
        self.providers = {k.lower(): v for k, v in settings.archive_providers.items()}
        self.tokens = {k.lower(): v for k, v in settings.git_tokens.items()}
        self.package_limits = package_limits
        self.sync_limits = sync_limits or settings.sync_limits()
        self._ssl_context = ssl_context

    def fetch(self, repository_url: str, package_path: str, ref: str) -> Fetched:
        if not _REF_RE.match(ref) or ".." in ref:
            raise invalid("ref", "must be a branch, tag, full ref name or 40-hex commit SHA")
        repo = _repo(repository_url)
        url_problem = self.policy.url_problem(repository_url)
        if url_problem:
            raise ValidationFailed(
                [FieldError("repository_url", f"refused: {url_problem}")], f"sync refused: URL {url_problem}"
            )
        deadline = (
            Deadline(self.sync_limits.budget_s, self._clock)
            if self._clock
            else Deadline(self.sync_limits.budget_s)
        )
        try:
            with SafeHttp(self.policy, deadline, self._token_map(repo), self._ssl_context) as http:
                sha = self._resolve(http, repo, ref)
                provider = self.providers.get(repo.host_key) or self.providers.get(repo.host)
                if provider == "github":
                    files = self._archive(
                        http, deadline, self._github_archive(repo, sha), package_path, strip=True
                    )
                elif provider == "gitlab":
                    files = self._archive(
                        http,
                        deadline,
                        self._gitlab_archive(repo, sha, package_path),
                        package_path,
                        strip=True,
                    )
                else:
                    files = _SmartHttp(http, repo, self).tree(sha, package_path, deadline)
        except Refused as exc:
            raise ValidationFailed(
                [FieldError("repository_url", f"refused: {exc}")], f"sync refused: {exc}"
            ) from exc
        except Exhausted as exc:
            raise (SyncTimedOut if isinstance(exc, OutOfTime) else TooLarge)(str(exc)) from exc
        except Upstream as exc:
            raise ServiceUnavailable(f"git host failed: {exc}") from exc
        if not files:
            raise invalid(
                "package_path", f"no files under {package_path or 'the repository root'!r} at {sha}"
            )
        return Fetched(commit_sha=sha, ref=ref, files=tuple(files))

    def _token_map(self, repo: _Repo) -> dict[str, str]:
        token = self.tokens.get(repo.host_key) or self.tokens.get(repo.host)
        return {repo.host: token} if token else {}

    # --- ref resolution ------------------------------------------------------------------------------------

    def _resolve(self, http: SafeHttp, repo: _Repo, ref: str) -> str:
        if _SHA_RE.match(ref):
            return ref
        refs = _SmartHttp(http, repo, self).refs()
        candidates = (
            [ref]
            if ref == "HEAD" or ref.startswith("refs/")
            else [f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}"]
        )
        for name in candidates:
            value = refs.get(name)
            if value and _SHA_RE.match(value):
                return value
        raise invalid("ref", f"no branch or tag named {ref!r} in the repository")

    # --- archives ------------------------------------------------------------------------------------------

    @staticmethod
    def _github_archive(repo: _Repo, sha: str) -> str:
        if repo.path.count("/") != 1:
            raise invalid("repository_url", "a GitHub repository URL is https://host/<owner>/<repo>")
        base = repo.url[:-4] if repo.url.endswith(".git") else repo.url
        return f"{base}/archive/{sha}.tar.gz"

    @staticmethod
    def _gitlab_archive(repo: _Repo, sha: str, package_path: str) -> str:
        scheme = urlsplit(repo.url).scheme
        netloc = urlsplit(repo.url).netloc
        project = quote(repo.path, safe="")
        query = f"sha={sha}" + (f"&path={quote(package_path, safe='')}" if package_path else "")
        return f"{scheme}://{netloc}/api/v4/projects/{project}/repository/archive.tar.gz?{query}"

    def _auth_headers(self, url: str, http: SafeHttp) -> dict[str, str]:
        token = http.token_for(url)
        if not token:
            return {}
        provider = self.providers.get(urlsplit(url).hostname or "")
        return {"PRIVATE-TOKEN": token} if provider == "gitlab" else {"Authorization": f"Bearer {token}"}

    def _archive(
        self, http: SafeHttp, deadline: Deadline, url: str, package_path: str, strip: bool
    ) -> list[tuple[str, bytes]]:
        response, _ = http.open(
            "GET", url, headers={"Accept-Encoding": "identity"}, auth=lambda u: self._auth_headers(u, http)
        )
        try:
            if response.status_code == 404:
                raise invalid("repository_url", "the host has no archive of this repository at the commit")
            if response.status_code in (401, 403):
                raise invalid(
                    "repository_url",
                    "the host refused the archive (private repository? configure an access token)",
                )
            if response.status_code != 200:
                raise Upstream(f"archive request answered {response.status_code}")
            body = _ChunkReader(
                read_capped(response, self.sync_limits.max_download_bytes, deadline, "the archive")
            )
            return read_tar(body, package_path, self.package_limits, self.sync_limits, deadline)
        finally:
            response.close()


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of chunks (what tarfile's stream mode and dulwich's protocol read)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = bytearray()  # amortised appends: a large read must not copy quadratically

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = -1 if size is None else size
        while want < 0 or len(self._buffer) < want:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._buffer += chunk
        cut = len(self._buffer) if want < 0 else min(want, len(self._buffer))
        out = bytes(self._buffer[:cut])
        del self._buffer[:cut]
        return out


def _in_package(rel: str, package_path: str) -> str | None:
    """The path relative to the package, or None when outside it."""
    if not package_path:
        return rel
    if rel.startswith(package_path + "/"):
        return rel[len(package_path) + 1 :]
    return None


class _Budget:
    """Counts what an extraction keeps and reads against the limits."""

    def __init__(self, package_limits: PackageLimits, sync_limits: SyncLimits, deadline: Deadline) -> None:
        self.p, self.s, self.deadline = package_limits, sync_limits, deadline
        self.members = self.read = self.kept_files = self.kept_bytes = 0

    def member(self, size: int) -> None:
        self.deadline.remaining()
        self.members += 1
        self.read += size
        if self.members > self.s.max_archive_members:
            raise Exhausted(
                f"the archive has more than max_archive_members={self.s.max_archive_members} entries"
            )
        if self.read > self.s.max_archive_bytes:
            raise Exhausted(f"the archive unpacks to more than max_archive_bytes={self.s.max_archive_bytes}")

    def keep(self, path: str, size: int) -> None:
        self.kept_files += 1
        self.kept_bytes += size
        if size > self.p.max_file_bytes:
            raise Exhausted(f"{path} is {size} bytes; the limit is max_file_bytes={self.p.max_file_bytes}")
        if self.kept_files > self.p.max_files:
            raise Exhausted(f"the package has more than max_files={self.p.max_files} files")
        if self.kept_bytes > self.p.max_package_bytes:
            raise Exhausted(f"the package exceeds max_package_bytes={self.p.max_package_bytes}")


def read_tar(
    fileobj: Any,
    package_path: str,
    package_limits: PackageLimits,
    sync_limits: SyncLimits,
    deadline: Deadline,
) -> list[tuple[str, bytes]]:
    """The files under ``package_path`` of a forge archive (one top folder, stripped), read as a stream whose
    every header is bounded before tarfile parses it (agentmate.packages.archive)."""
    budget = _Budget(package_limits, sync_limits, deadline)
    files: list[tuple[str, bytes]] = []
    root: str | None = None
    for entry in tar_gz_members(fileobj, sync_limits, deadline):
        member = entry.info
        budget.member(member.size)
        top, _, rest = member.name.partition("/")
        if root is None:
            root = top
        if top != root or not top:
            raise PackageRefused(
                f"archive entry {shown_name(member.name)} is outside the archive's top folder"
            )
        rel = _in_package(rest, package_path) if rest else None
        if rel is None or member.isdir():
            continue
        rel = entry_name(rel)  # refused like a git tree's name (the smart-HTTP path) when not UTF-8
        if member.issym() or member.islnk():
            raise PackageRefused(f"{shown_name(rel)}: symbolic and hard links are refused")
        if not member.isfile():
            raise PackageRefused(f"{shown_name(rel)}: only regular files are allowed")
        try:
            tarfile.data_filter(member, "/package")
        except (tarfile.FilterError, ValueError) as exc:  # ValueError: a NUL in the name
            raise PackageRefused(f"{shown_name(rel)}: {exc.__class__.__name__}") from exc
        budget.keep(rel, member.size)
        files.append((rel, entry.read()))
    return files


class _SmartHttp:
    """dulwich's smart-HTTP client with every request sent through SafeHttp."""

    def __init__(self, http: SafeHttp, repo: _Repo, fetcher: GitFetcher) -> None:
        self._http = http
        self._repo = repo
        self._fetcher = fetcher

    def _client(self) -> Any:
        from dulwich.client import AbstractHttpGitClient

        http, limits = self._http, self._fetcher.sync_limits
        token_user = (
            "oauth2" if self._fetcher.providers.get(self._repo.host) == "gitlab" else "x-access-token"
        )

        def auth(url: str) -> dict[str, str]:
            import base64

            token = http.token_for(url) or ""
            basic = base64.b64encode(f"{token_user}:{token}".encode()).decode()
            return {"Authorization": f"Basic {basic}"}

        class Client(AbstractHttpGitClient):
            def _http_request(
                self,
                url: str,
                headers: dict[str, str] | None = None,
                data: Any = None,
                raise_for_status: bool = True,
            ) -> tuple[Any, Callable[[int], bytes]]:
                from dulwich.client import HTTPUnauthorized
                from dulwich.errors import GitProtocolError, NotGitRepository

                if data is not None and not isinstance(data, bytes):
                    data = b"".join(data)
                send = {**(headers or {}), "Accept-Encoding": "identity", "Pragma": "no-cache"}
                response, final = http.open(
                    "POST" if data is not None else "GET", url, headers=send, content=data, auth=auth
                )
                if raise_for_status:
                    if response.status_code == 404:
                        response.close()
                        raise NotGitRepository()
                    if response.status_code in (401, 403):
                        response.close()
                        raise HTTPUnauthorized(response.headers.get("www-authenticate"), url)
                    if response.status_code != 200:
                        response.close()
                        raise GitProtocolError(f"unexpected http resp {response.status_code}")
                reader = _ChunkReader(
                    read_capped(response, limits.max_download_bytes, http.deadline, "the git response")
                )
                return _DulwichResponse(response, final if final != url else ""), reader.read

        # Thin packs may omit delta bases the client has; an empty client has none, so every base is sent.
        return Client(self._repo.url + "/")

    def _call(self, fn: Callable[[], Any]) -> Any:
        from dulwich.client import HTTPUnauthorized
        from dulwich.errors import GitProtocolError, NotGitRepository

        try:
            return fn()
        except NotGitRepository as exc:
            raise invalid("repository_url", "no git repository at this URL") from exc
        except HTTPUnauthorized as exc:
            raise invalid(
                "repository_url", "the host requires authentication (configure an access token)"
            ) from exc
        except GitProtocolError as exc:
            raise Upstream("the git host answered an unusable response") from exc

    def refs(self) -> dict[str, str]:
        result = self._call(lambda: self._client().get_refs(b""))
        return {k.decode(): v.decode() for k, v in result.refs.items() if v is not None}

    def tree(self, sha: str, package_path: str, deadline: Deadline) -> list[tuple[str, bytes]]:
        from dulwich.object_store import MemoryObjectStore
        from dulwich.pack import PackData, PackInflater

        store = MemoryObjectStore()
        pack = io.BytesIO()
        cap = self._fetcher.sync_limits.max_download_bytes

        def write(data: bytes) -> int:
            if pack.tell() + len(data) > cap:
                raise Exhausted(f"the git pack exceeds max_download_bytes={cap}")
            deadline.remaining()
            return pack.write(data)

        from dulwich.object_store import ObjectStoreGraphWalker

        walker = ObjectStoreGraphWalker([], lambda _sha: [])
        self._call(
            lambda: self._client().fetch_pack(
                b"", lambda refs, depth=None: [sha.encode()], walker, write, depth=1
            )
        )
        size = pack.tell()
        if size == 0:
            raise Upstream("the git host sent no objects for the commit")
        prescan_pack(pack.getvalue(), self._fetcher.sync_limits, deadline)
        pack.seek(0)
        data = PackData.from_file(pack, store.object_format, size)
        try:
            data.check()
            for obj in PackInflater.for_pack_data(data, store.get_raw):
                store.add_object(obj)
        except DomainError:
            raise
        except Exception as exc:
            raise Upstream("the git pack is invalid") from exc
        return walk_tree(
            store, sha, package_path, self._fetcher.package_limits, self._fetcher.sync_limits, deadline
        )


class _DulwichResponse:
    """The attributes dulwich reads from an HTTP response."""

    def __init__(self, response: Any, redirect_location: str) -> None:
        self._response = response
        self.status = response.status_code
        self.headers = response.headers
        self.content_type = response.headers.get("content-type")
        self.redirect_location = redirect_location

    def close(self) -> None:
        self._response.close()


def prescan_pack(pack: bytes, limits: SyncLimits, deadline: Deadline) -> None:
    """Check the sizes a pack declares before dulwich inflates it (a small pack can inflate to gigabytes).

    Each entry header declares its inflated size (for a delta: its delta size, and the delta's own header the
    result size); the zlib streams are walked with bounded output to find entry boundaries."""
    if pack[:4] != b"PACK" or len(pack) < 12:
        raise Upstream("the git host sent an invalid pack")
    count = int.from_bytes(pack[8:12], "big")
    if count > limits.max_archive_members:
        raise Exhausted(
            f"the git pack has more than max_archive_members={limits.max_archive_members} objects"
        )
    pos, total = 12, 0
    for _ in range(count):
        deadline.remaining()
        byte = pack[pos]
        kind, size, shift = (byte >> 4) & 7, byte & 15, 4
        pos += 1
        while byte & 0x80:
            byte = pack[pos]
            size |= (byte & 0x7F) << shift
            shift += 7
            pos += 1
        if kind == 6:  # ofs-delta: a variable-length offset
            while pack[pos] & 0x80:
                pos += 1
            pos += 1
        elif kind == 7:  # ref-delta: the base object's id
            pos += 20
        inflater = zlib.decompressobj()
        head = b""
        while not inflater.eof:
            if pos >= len(pack):
                raise Upstream("the git pack is truncated")
            chunk = pack[pos : pos + 65536]
            out = inflater.decompress(chunk, 65536)
            while inflater.unconsumed_tail and not inflater.eof:
                if len(head) < 32:
                    head += out[:32]
                deadline.remaining()
                out = inflater.decompress(inflater.unconsumed_tail, 65536)
            if len(head) < 32:
                head += out[:32]
            pos += len(chunk) - len(inflater.unused_data)
        if kind in (6, 7):
            size = max(size, _delta_target_size(head))
        total += size
        if total > limits.max_archive_bytes:
            raise Exhausted(
                f"the git pack inflates to more than max_archive_bytes={limits.max_archive_bytes}"
            )


def _delta_target_size(head: bytes) -> int:
    pos = 0
    for _ in range(2):  # source size, then target size (little-endian base-128)
        value, shift = 0, 0
        while pos < len(head):
            byte = head[pos]
            value |= (byte & 0x7F) << shift
            shift += 7
            pos += 1
            if not byte & 0x80:
                break
    return value


def walk_tree(
    store: Any,
    sha: str,
    package_path: str,
    package_limits: PackageLimits,
    sync_limits: SyncLimits,
    deadline: Deadline,
) -> list[tuple[str, bytes]]:
    """The regular files under ``package_path`` of the commit's tree; links and submodules are refused."""
    import stat

    commit = store[sha.encode()]
    tree = store[commit.tree]
    for segment in [s for s in package_path.split("/") if s]:
        entry = next((e for e in tree.iteritems() if e.path.decode("utf-8", "replace") == segment), None)
        if entry is None or not stat.S_ISDIR(entry.mode):
            return []
        tree = store[entry.sha]
    budget = _Budget(package_limits, sync_limits, deadline)
    files: list[tuple[str, bytes]] = []
    stack: list[tuple[str, Any]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for entry in node.iteritems():
            name = prefix + entry_name(entry.path, prefix)
            if stat.S_ISDIR(entry.mode):
                stack.append((name + "/", store[entry.sha]))
            elif stat.S_ISLNK(entry.mode):
                raise PackageRefused(f"{shown_name(name)}: symbolic links are refused")
            elif entry.mode == 0o160000:
                raise PackageRefused(f"{shown_name(name)}: submodules are not supported")
            else:
                blob = store[entry.sha]
                data = blob.as_raw_string()
                budget.member(len(data))
                budget.keep(name, len(data))
                files.append((name, data))
    return files
