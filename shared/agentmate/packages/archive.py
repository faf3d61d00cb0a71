"""Bounded reading of forge archives (.tar.gz) before ``tarfile`` parses them.

``tarfile`` trusts the headers it reads: a pax header is read whole whatever its declared size, and CPython's pax
parser before 3.13 is quadratic in a run of digits (CVE-2024-6232: 120,000 digits in a 290-byte tarball stall a
worker for 17 s, with no deadline checked while it runs). So the archive is inflated here, in bounded steps that
count against ``max_archive_bytes`` and the sync deadline, and every tar header is pre-scanned as it passes, before
``tarfile`` reads it. An extended header (pax ``x``/``g``/``X``, GNU ``L``/``K``) larger than 64 KiB is refused
before its data is read (413); a pax header must consist of well-formed records (a length field of at most 20
digits, ``keyword=value``, the record ending in a newline) without long digit runs, so each pax header ``tarfile``
parses is small and linear to parse whatever the interpreter. Forge archives stay readable: a ``g`` header holding
the commit id (GitHub, GitLab) and an ``x`` or ``L`` header per long name are all small.

The scan must agree with ``tarfile`` on where every header starts; in case it ever does not, a ``TarInfo``
subclass refuses any extended header ``tarfile`` is about to parse that the scan did not check (fail closed).
"""

from __future__ import annotations

import io
import re
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from agentmate.core.errors import DomainError
from agentmate.packages.identity import PackageRefused
from agentmate.packages.limits import SyncLimits
from agentmate.packages.net import Deadline
from agentmate.packages.policy import Exhausted, Upstream

BLOCK = tarfile.BLOCKSIZE
MAX_EXTENDED_HEADER = 64 * 1024  # one pax or GNU long-name header (forge ones are well under 1 KiB)
MAX_LENGTH_DIGITS = 20  # a pax record's length field
MAX_DIGIT_RUN = 256  # the pre-3.13 parser's cost grows with the square of each digit run
MAX_CHAIN = 4  # extended headers in front of one member (x, g, L, K at most once each)
MAX_GLOBAL_RECORDS = 64  # global pax records are copied into every later member
_INFLATE_CHUNK = 64 * 1024  # inflated bytes per zlib call
_READ_CHUNK = 16 * 1024  # compressed bytes per read of the source

_PAX = frozenset({tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE})
_EXTENDED = _PAX | {tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK}
_DIGITS_RE = re.compile(rb"[0-9]+")
_LENGTH_RE = re.compile(rb"[0-9]{1,%d} " % MAX_LENGTH_DIGITS)
_SIZE_RE = re.compile(rb"[0-9]{1,20}")


class _Source(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def _malformed(offset: int, why: str) -> PackageRefused:
    return PackageRefused(f"the archive's extended header at offset {offset} is malformed ({why})")


def check_pax(data: bytes, offset: int) -> list[tuple[bytes, bytes]]:
    """The records of one pax header, refused unless every record is well formed. Linear in ``len(data)``."""
    if any(run.end() - run.start() > MAX_DIGIT_RUN for run in _DIGITS_RE.finditer(data)):
        raise _malformed(offset, f"a run of more than {MAX_DIGIT_RUN} digits")
    records: list[tuple[bytes, bytes]] = []
    pos = 0
    while pos < len(data) and data[pos]:
        head = _LENGTH_RE.match(data, pos)
        if head is None:
            raise _malformed(offset, f"a record must start with a length of 1 to {MAX_LENGTH_DIGITS} digits")
        length = int(head.group()[:-1])
        end = pos + length
        if length <= len(head.group()) or end > len(data) or data[end - 1] != 0x0A:
            raise _malformed(offset, "a record's length does not match its newline")
        keyword, eq, value = data[head.end() : end - 1].partition(b"=")
        if not eq or not keyword:
            raise _malformed(offset, "a record must read keyword=value")
        records.append((keyword, value))
        pos = end
    if data[pos:].strip(b"\0"):
        raise _malformed(offset, "bytes after the last record")
    return records


class TarStream(io.RawIOBase):
    """The inflated tar stream of a .tar.gz (concatenated gzip members allowed), pre-scanned header by header.

    ``read`` hands out bytes only once every header starting in them (and an extended header's whole data) has
    been checked; ``checked`` holds the offsets of the extended headers that passed."""

    def __init__(self, source: _Source, limits: SyncLimits, deadline: Deadline) -> None:
        self._source = source
        self._max_bytes = limits.max_archive_bytes
        self._deadline = deadline
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._buffer = bytearray()  # inflated, not yet handed out
        self._base = 0  # stream offset of _buffer[0]
        self._ended = False  # no more input
        self._next_header = 0  # offset of the next header the scan expects
        self._scanning = True
        self._chain: list[bytes] = []
        self._size_override: int | None = None
        self._global_records = 0
        self.inflated = 0
        self.checked: set[int] = set()

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = (1 << 62) if size is None or size < 0 else size
        self._scan(self._base + want)
        self._fill(self._base + want)
        out = bytes(self._buffer[:want])
        del self._buffer[:want]
        self._base += len(out)
        return out

    # --- inflating ----------------------------------------------------------------------------------------

    def _fill(self, upto: int) -> bool:
        """Inflate until the buffer reaches stream offset ``upto``; False when the stream ends first."""
        while self._base + len(self._buffer) < upto:
            if self._ended:
                return False
            self._deadline.remaining()
            out = self._inflate()
            self.inflated += len(out)
            if self.inflated > self._max_bytes:
                raise Exhausted(f"the archive unpacks to more than max_archive_bytes={self._max_bytes}")
            self._buffer += out
        return True

    def _inflate(self) -> bytes:
        inflater = self._inflater
        if inflater.unconsumed_tail:
            return inflater.decompress(inflater.unconsumed_tail, _INFLATE_CHUNK)
        if inflater.eof:
            # gzip allows members back to back; zero padding or other trailing bytes end the stream
            rest = inflater.unused_data.lstrip(b"\0") or self._source.read(_READ_CHUNK).lstrip(b"\0")
            if not rest.startswith(b"\x1f\x8b"):
                self._ended = True
                return b""
            self._inflater = inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            return inflater.decompress(rest, _INFLATE_CHUNK)
        chunk = self._source.read(_READ_CHUNK)
        if not chunk:
            raise Upstream("the archive is truncated")
        return inflater.decompress(chunk, _INFLATE_CHUNK)

    def _slice(self, start: int, length: int) -> bytes:
        at = start - self._base
        return bytes(self._buffer[at : at + length])

    # --- scanning -----------------------------------------------------------------------------------------

    def _scan(self, upto: int) -> None:
        """Check every header that starts before stream offset ``upto``."""
        while self._scanning and self._next_header < upto:
            self._deadline.remaining()
            at = self._next_header
            if not self._fill(at + BLOCK):
                self._scanning = False  # tarfile reports the short read itself
                return
            try:
                info = tarfile.TarInfo.frombuf(self._slice(at, BLOCK), "utf-8", "surrogateescape")
            except tarfile.HeaderError:
                # A zero or invalid block: tarfile ends the archive here (or refuses a bad first header),
                # and reads no further header.
                self._scanning = False
                return
            self._header(at, info)

    def _header(self, at: int, info: tarfile.TarInfo) -> None:
        if info.size < 0:
            raise PackageRefused(f"the archive's header at offset {at} declares a negative size")
        if info.type == tarfile.GNUTYPE_SPARSE:
            raise PackageRefused("sparse files are not supported in archives")
        if info.type not in _EXTENDED:
            size = info.size if self._size_override is None else self._size_override
            data = info.isreg() or info.type not in tarfile.SUPPORTED_TYPES  # as tarfile skips data
            self._next_header = at + BLOCK + (_padded(size) if data else 0)
            self._chain, self._size_override = [], None
            return
        slot = tarfile.XHDTYPE if info.type == tarfile.SOLARIS_XHDTYPE else info.type
        if slot in self._chain or len(self._chain) >= MAX_CHAIN:
            raise _malformed(at, "repeated extended headers for one entry")
        self._chain.append(slot)
        if info.size > MAX_EXTENDED_HEADER:
            raise Exhausted(
                f"the archive's extended header at offset {at} is {info.size} bytes; the limit is "
                f"{MAX_EXTENDED_HEADER}"
            )
        # tarfile reads and parses the padded blocks, so the padding is checked too
        if not self._fill(at + BLOCK + _padded(info.size)):
            raise Upstream("the archive is truncated")
        if info.type in _PAX:
            self._pax(at, info, check_pax(self._slice(at + BLOCK, _padded(info.size)), at))
        self.checked.add(at)
        self._next_header = at + BLOCK + _padded(info.size)

    def _pax(self, at: int, info: tarfile.TarInfo, records: list[tuple[bytes, bytes]]) -> None:
        keywords = {k for k, _ in records}
        if any(k.startswith(b"GNU.sparse.") for k in keywords):
            raise PackageRefused("sparse files are not supported in archives")
        if info.type == tarfile.XGLTYPE:
            # A global size would change every later member's size but not where tarfile looks for headers.
            if b"size" in keywords:
                raise _malformed(at, "a global header may not set size")
            self._global_records += len(records)
            if self._global_records > MAX_GLOBAL_RECORDS:
                raise _malformed(at, f"more than {MAX_GLOBAL_RECORDS} global records")
            return
        sizes = [v for k, v in records if k == b"size"]
        if sizes:
            # tarfile takes the last one and moves to the next header by it: only a plain decimal is accepted
            if not _SIZE_RE.fullmatch(sizes[-1]):
                raise _malformed(at, "size must be a decimal number")
            self._size_override = int(sizes[-1])


def _checked_tarinfo(stream: TarStream) -> type[tarfile.TarInfo]:
    class Checked(tarfile.TarInfo):
        def _proc_member(self, tar: tarfile.TarFile) -> Any:
            if self.type in _EXTENDED and self.offset not in stream.checked:
                raise PackageRefused(
                    f"the archive's extended header at offset {self.offset} was not pre-checked"
                )
            return super()._proc_member(tar)  # type: ignore[misc]

    return Checked


@contextmanager
def _archive_errors() -> Iterator[None]:
    """tarfile's failures on hostile input (its own errors, and others such as a bad hdrcharset's
    UnicodeDecodeError) become one clean archive error; our refusals and limits pass through."""
    try:
        yield
    except (DomainError, Exhausted, Upstream):
        raise
    except Exception as exc:
        raise Upstream("the archive is not a valid .tar.gz") from exc


class Member:
    """One archive member and a bounded way to read its data."""

    def __init__(self, tar: tarfile.TarFile, info: tarfile.TarInfo) -> None:
        self._tar, self.info = tar, info

    def read(self) -> bytes:
        with _archive_errors():
            extracted = self._tar.extractfile(self.info)
            if extracted is None:
                raise PackageRefused("an unreadable archive entry")
            return extracted.read()


def tar_gz_members(source: _Source, limits: SyncLimits, deadline: Deadline) -> Iterator[Member]:
    """The members of a .tar.gz read as a stream, each header pre-checked (see the module doc)."""
    stream = TarStream(source, limits, deadline)
    with _archive_errors():
        tar = tarfile.open(
            fileobj=stream,
            mode="r|",
            tarinfo=_checked_tarinfo(stream),
            encoding="utf-8",
            errors="surrogateescape",
        )
    with tar:
        while True:
            with _archive_errors():
                info = tar.next()
            if info is None:
                return
            yield Member(tar, info)
