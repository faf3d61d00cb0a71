"""A real git smart-HTTP server on loopback (dulwich's WSGI app in a thread) plus forge-like archive endpoints:
``/{owner}/{repo}/archive/{sha}.tar.gz`` answers a redirect to a codeload-like host, which serves the tarball
(one top folder ``{repo}-{sha}/`` and a pax global header, as GitHub's do). Tests may replace any archive with
hostile bytes and add arbitrary redirects."""

from __future__ import annotations

import io
import stat
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import MemoryRepo
from dulwich.server import DictBackend
from dulwich.web import make_wsgi_chain

Entry = (
    bytes | tuple[str, Any]
)  # bytes = regular file; ("link", target) = symlink; ("gitlink", sha) = submodule


def commit_tree(
    repo: MemoryRepo, files: dict[str, Entry], ref: bytes = b"refs/heads/main", message: bytes = b"commit"
) -> str:
    """Commit ``files`` (path → content) as the whole tree on ``ref``; returns the commit SHA."""

    def build(entries: dict[str, Any]) -> bytes:
        tree = Tree()
        for name, value in entries.items():
            if isinstance(value, dict):
                tree.add(name.encode(), stat.S_IFDIR, build(value))
            elif isinstance(value, tuple) and value[0] == "link":
                blob = Blob.from_string(value[1].encode())
                repo.object_store.add_object(blob)
                tree.add(name.encode(), stat.S_IFLNK, blob.id)
            elif isinstance(value, tuple) and value[0] == "gitlink":
                tree.add(name.encode(), 0o160000, value[1].encode())
            else:
                blob = Blob.from_string(value)
                repo.object_store.add_object(blob)
                tree.add(name.encode(), 0o100644, blob.id)
        repo.object_store.add_object(tree)
        return tree.id

    nested: dict[str, Any] = {}
    for path, value in files.items():
        node = nested
        *dirs, leaf = path.split("/")
        for d in dirs:
            node = node.setdefault(d, {})
        node[leaf] = value
    c = Commit()
    c.tree = build(nested)
    c.author = c.committer = b"Test <test@example.com>"
    c.author_time = c.commit_time = int(time.time())
    c.author_timezone = c.commit_timezone = 0
    c.message = message
    parent = repo.refs.as_dict().get(ref)
    c.parents = [parent] if parent else []
    repo.object_store.add_object(c)
    repo.refs[ref] = c.id
    if b"HEAD" not in repo.refs.as_dict() and ref.startswith(b"refs/heads/"):
        repo.refs.set_symbolic_ref(b"HEAD", ref)
    return c.id.decode()


def make_tar(
    top: str, files: dict[str, Entry], *, extra: list[tarfile.TarInfo] | None = None, comment: str = ""
) -> bytes:
    """A forge-like .tar.gz: a pax global header, then ``top/`` and the files under it."""
    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf,
        mode="w:gz",
        format=tarfile.PAX_FORMAT,
        pax_headers={"comment": comment} if comment else None,
    ) as tar:
        d = tarfile.TarInfo(top)
        d.type = tarfile.DIRTYPE
        tar.addfile(d)
        for path, value in files.items():
            info = tarfile.TarInfo(f"{top}/{path}")
            if isinstance(value, tuple) and value[0] == "link":
                info.type, info.linkname = tarfile.SYMTYPE, value[1]
                tar.addfile(info)
            elif isinstance(value, tuple) and value[0] == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, f"{top}/{value[1]}"
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
        for info in extra or []:
            tar.addfile(info, io.BytesIO(b"\0" * info.size) if info.isfile() else None)
    return buf.getvalue()


def tree_files(repo: MemoryRepo, sha: str) -> dict[str, Entry]:
    out: dict[str, Entry] = {}

    def walk(tree_id: bytes, prefix: str) -> None:
        for entry in repo.object_store[tree_id].iteritems():
            name = prefix + entry.path.decode()
            if stat.S_ISDIR(entry.mode):
                walk(entry.sha, name + "/")
            elif stat.S_ISLNK(entry.mode):
                out[name] = ("link", repo.object_store[entry.sha].data.decode())
            elif entry.mode != 0o160000:
                out[name] = repo.object_store[entry.sha].data

    walk(repo.object_store[sha.encode()].tree, "")
    return out


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class GitServer:
    port: int = 0
    repos: dict[str, MemoryRepo] = field(default_factory=dict)
    archives: dict[tuple[str, str], bytes] = field(default_factory=dict)  # (repo path, sha) → override bytes
    redirects: dict[str, str] = field(default_factory=dict)  # request path → Location
    codeload_host: str = "codeload.test"
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (Host, path, Authorization)

    def repo(self, path: str) -> MemoryRepo:
        if path not in self.repos:
            self.repos[path] = MemoryRepo()
            self._backend.repos[f"/{path}"] = self.repos[path]  # type: ignore[index]
        return self.repos[path]

    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}/{path}"

    def _archive_app(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        path = environ["PATH_INFO"]
        if path in self.redirects:
            start_response("302 Found", [("Location", self.redirects[path])])
            return iter([b""])
        parts = path.strip("/").split("/")
        if len(parts) == 4 and parts[2] == "archive" and parts[3].endswith(".tar.gz"):
            sha = parts[3][: -len(".tar.gz")]
            location = f"http://{self.codeload_host}:{self.port}/{parts[0]}/{parts[1]}/tar.gz/{sha}"
            start_response("302 Found", [("Location", location)])
            return iter([b""])
        if len(parts) == 4 and parts[2] == "tar.gz":
            repo_path, sha = f"{parts[0]}/{parts[1]}", parts[3]
            body = self.archives.get((repo_path, sha))
            if (
                body is None
                and repo_path in self.repos
                and sha.encode() in self.repos[repo_path].object_store
            ):
                body = make_tar(f"{parts[1]}-{sha}", tree_files(self.repos[repo_path], sha), comment=sha)
            if body is not None:
                start_response(
                    "200 OK", [("Content-Type", "application/x-gzip"), ("Content-Length", str(len(body)))]
                )
                return iter([body])
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return iter([b"not found"])

    def start(self) -> GitServer:
        self._backend = DictBackend({})
        git_app = make_wsgi_chain(self._backend, fallback_app=self._archive_app)

        def app(environ: dict[str, Any], start_response: Any) -> Any:
            self.requests.append(
                (environ.get("HTTP_HOST", ""), environ["PATH_INFO"], environ.get("HTTP_AUTHORIZATION", ""))
            )
            if (
                environ["PATH_INFO"] in self.redirects
                or "/archive/" in environ["PATH_INFO"]
                or "/tar.gz/" in environ["PATH_INFO"]
            ):
                return self._archive_app(environ, start_response)
            return git_app(environ, start_response)

        class _Server(WSGIServer):
            daemon_threads = True

        self._server = make_server("127.0.0.1", 0, app, server_class=_Server, handler_class=_Quiet)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# --- raw tar blocks (hostile archives need headers tarfile's writer will not produce) ------------------------


def tar_header(
    name: bytes,
    typeflag: bytes = b"0",
    size: int | bytes = 0,
    *,
    prefix: bytes = b"",
    mode: bytes = b"0000644",
) -> bytes:
    """One 512-byte ustar header with a valid checksum; ``size`` may be a raw 12-byte field."""
    size_field = size if isinstance(size, bytes) else b"%011o\0" % size
    block = bytearray(512)
    block[0 : len(name[:100])] = name[:100]
    block[100:108] = mode.ljust(8, b"\0")[:8]
    block[108:116] = b"0000000\0"
    block[116:124] = b"0000000\0"
    block[124:136] = size_field.ljust(12, b"\0")[:12]
    block[136:148] = b"14707112000\0"
    block[156:157] = typeflag[:1]
    block[257:265] = b"ustar\x0000"
    block[345 : 345 + len(prefix[:155])] = prefix[:155]
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def pax_records(records: list[tuple[bytes, bytes]]) -> bytes:
    """pax ``length keyword=value\\n`` records with correct length fields."""
    out = b""
    for keyword, value in records:
        body = b" " + keyword + b"=" + value + b"\n"
        length = len(body) + 1
        while len(str(length).encode()) + len(body) != length:
            length += 1
        out += str(length).encode() + body
    return out


def tar_entry(
    name: bytes,
    typeflag: bytes = b"0",
    data: bytes = b"",
    *,
    size: int | bytes | None = None,
    prefix: bytes = b"",
) -> bytes:
    """A header and its data padded to whole blocks (``size`` overrides the declared size)."""
    head = tar_header(name, typeflag, len(data) if size is None else size, prefix=prefix)
    return head + data + b"\0" * (-len(data) % 512)


def gz_tar(*entries: bytes, end: bool = True) -> bytes:
    """Entries concatenated, the two zero blocks that end an archive, gzip-compressed."""
    import gzip

    return gzip.compress(b"".join(entries) + (b"\0" * 1024 if end else b""), mtime=0)


def github_tar(top: str, sha: str, files: dict[str, bytes]) -> bytes:
    """A tarball laid out as ``git archive`` (GitHub, GitLab) writes it: a ``pax_global_header`` holding
    ``comment=<sha>``, the top folder, then each file; a name too long for ustar gets an ``x`` header with its
    path (named ``<hash>.paxheader`` / ``<hash>.data`` as git names them)."""
    entries = [
        tar_entry(b"pax_global_header", b"g", pax_records([(b"comment", sha.encode())])),
        tar_entry(top.encode() + b"/", b"5"),
    ]
    for i, (path, data) in enumerate(files.items()):
        full = f"{top}/{path}".encode()
        if len(full) <= 100:
            entries.append(tar_entry(full, b"0", data))
        else:
            stem = b"%040x" % i
            entries.append(tar_entry(stem + b".paxheader", b"x", pax_records([(b"path", full)])))
            entries.append(tar_entry(stem + b".data", b"0", data))
    return gz_tar(*entries)
