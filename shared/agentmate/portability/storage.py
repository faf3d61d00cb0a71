"""Where archives live: S3 (presigned GET and PUT URLs) or, locally, a folder served by a loopback route whose
links carry an HMAC-signed, expiring token (``/api/account/archives/{token}``).

Both stores answer the same calls; the object key is ours (``exports/<account>/<id>.zip``), never the
client's. Neither holds an archive in memory: ``put`` copies from a file in chunks, ``open`` hands back a seekable
file (the folder's own, or a temporary file S3 downloads into), and an object over the limit is refused before a
byte of it is read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Literal, Protocol

from agentmate.core.errors import NotFound, TooLarge
from agentmate.portability.settings import PortabilitySettings, get_portability_settings

Method = Literal["GET", "PUT"]
LOOPBACK_PREFIX = "/api/account/archives/"
CHUNK = 1024 * 1024


class ArchiveStore(Protocol):
    def put(self, key: str, body: BinaryIO) -> None: ...

    def open(self, key: str, max_bytes: int) -> AbstractContextManager[BinaryIO]:
        """The object as a seekable binary file, closed (and removed, if temporary) on exit; ``NotFound`` if
        absent, ``TooLarge`` over ``max_bytes``."""
        ...

    def url(self, key: str, method: Method, base_url: str) -> str:
        """A short-lived link to GET (download) or PUT (upload) the object."""
        ...


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class FolderStore:
    """The local runtime's store: files under a folder, links to the loopback route."""

    def __init__(self, root: Path, secret: str, ttl_s: int) -> None:
        self.root = root
        self._key = hmac.new(secret.encode(), b"agentmate account archive links", hashlib.sha256).digest()
        self.ttl_s = ttl_s

    def _path(self, key: str) -> Path:
        return self.root / key

    def put(self, key: str, body: BinaryIO) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        with open(tmp, "wb") as out:
            shutil.copyfileobj(body, out, CHUNK)
        os.replace(tmp, path)

    @contextmanager
    def open(self, key: str, max_bytes: int) -> Iterator[BinaryIO]:
        path = self._path(key)
        if not path.is_file():
            raise NotFound("archive not found: nothing was uploaded")
        if path.stat().st_size > max_bytes:
            raise TooLarge(f"the archive is larger than {max_bytes} bytes")
        with open(path, "rb") as file:
            yield file

    def url(self, key: str, method: Method, base_url: str) -> str:
        claims = json.dumps(
            {"k": key, "m": method, "e": int(time.time()) + self.ttl_s}, separators=(",", ":")
        )
        payload = _b64(claims.encode())
        return f"{base_url.rstrip('/')}{LOOPBACK_PREFIX}{payload}.{self._sign(payload)}"

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())

    def resolve(self, token: str, method: Method) -> str:
        """The object key a loopback token grants ``method`` on; ``NotFound`` for a bad, foreign or expired one
        (one answer for all three: a guessed token learns nothing)."""
        payload, _, signature = token.partition(".")
        if not signature or not hmac.compare_digest(signature, self._sign(payload)):
            raise NotFound("archive link not found or expired")
        try:
            claims = json.loads(_unb64(payload))
        except ValueError:
            raise NotFound("archive link not found or expired") from None
        if claims.get("m") != method or int(claims.get("e", 0)) < time.time():
            raise NotFound("archive link not found or expired")
        return str(claims["k"])


class S3Store:
    """Lambda's store: one bucket, presigned URLs."""

    def __init__(self, bucket: str, ttl_s: int, client: Any = None) -> None:
        self.bucket = bucket
        self.ttl_s = ttl_s
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3  # type: ignore[import-untyped]  # lazily: only the account function and the worker

            self._client = boto3.client("s3")
        return self._client

    def put(self, key: str, body: BinaryIO) -> None:
        self.client.upload_fileobj(body, self.bucket, key)

    @contextmanager
    def open(self, key: str, max_bytes: int) -> Iterator[BinaryIO]:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                raise NotFound("archive not found: nothing was uploaded") from None
            raise
        if int(head["ContentLength"]) > max_bytes:
            raise TooLarge(f"the archive is larger than {max_bytes} bytes")
        body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        with tempfile.TemporaryFile() as file:
            copied = _copy(body, file, max_bytes)
            if copied > max_bytes:  # the object grew since its head was read
                raise TooLarge(f"the archive is larger than {max_bytes} bytes")
            file.seek(0)
            yield file

    def url(self, key: str, method: Method, base_url: str) -> str:
        operation = "get_object" if method == "GET" else "put_object"
        return str(
            self.client.generate_presigned_url(
                operation, Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=self.ttl_s
            )
        )


def _copy(source: Any, target: BinaryIO, max_bytes: int) -> int:
    """Copy in chunks, stopping one chunk past ``max_bytes``; the bytes copied."""
    copied = 0
    while copied <= max_bytes and (chunk := source.read(CHUNK)):
        target.write(chunk)
        copied += len(chunk)
    return copied


_store: ArchiveStore | None = None
_lock = threading.Lock()


def build_store(settings: PortabilitySettings) -> ArchiveStore:
    if settings.account_archive_bucket:
        return S3Store(settings.account_archive_bucket, settings.account_archive_url_ttl_s)
    from agentmate.auth.settings import get_auth_settings

    secret = get_auth_settings().resolved_jwt_secret()
    return FolderStore(Path(settings.account_archive_dir), secret, settings.account_archive_url_ttl_s)


def get_store() -> ArchiveStore:
    global _store
    with _lock:
        if _store is None:
            _store = build_store(get_portability_settings())
        return _store


def set_store(store: ArchiveStore | None) -> ArchiveStore | None:
    """Replace the store (tests: a moto bucket, a folder of their own); returns the previous one."""
    global _store
    with _lock:
        previous, _store = _store, store
        return previous
