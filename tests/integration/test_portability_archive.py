"""The archive reader is a parser of client input (an uploaded zip): whatever the bytes, it answers rows or a domain
error (a 4xx naming the archive), never another exception (a 500 at start, an "unexpected error" in the job)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentmate.core.errors import DomainError
from agentmate.portability.archive import BY_MEMBER, MANIFEST, Bounds, open_archive, rows

BOUNDS = Bounds(max_members=8, max_member_bytes=64 * 1024, max_line_bytes=4096)
MANIFEST_OK = json.dumps({"format": "agentmate-account-archive", "version": 1})
TODOS = BY_MEMBER["todos/todos.ndjson"]


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def _read_all(data: bytes) -> list[dict[str, Any]]:
    with open_archive(data, BOUNDS) as archive:
        return list(rows(archive, TODOS, BOUNDS))


@given(st.binary(max_size=2048))
def test_any_bytes_are_rows_or_a_domain_error(data: bytes) -> None:
    try:
        _read_all(data)
    except DomainError:
        pass


@given(st.binary(max_size=2048), st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
def test_any_member_content_is_rows_or_a_domain_error(content: bytes, method: int) -> None:
    try:
        got = _read_all(_zip({MANIFEST: MANIFEST_OK.encode(), TODOS.member: content}, method))
    except DomainError:
        return
    assert all(isinstance(r, dict) for r in got)


@given(st.data())
def test_a_damaged_archive_is_rows_or_a_domain_error(data: st.DataObject) -> None:
    archive = bytearray(
        _zip({MANIFEST: MANIFEST_OK.encode(), TODOS.member: b'{"id": 1, "title": "x"}\n' * 20})
    )
    for _ in range(data.draw(st.integers(1, 4))):
        archive[data.draw(st.integers(0, len(archive) - 1))] = data.draw(st.integers(0, 255))
    try:
        _read_all(bytes(archive))
    except DomainError:
        pass


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(st.lists(st.dictionaries(st.text(min_size=1, max_size=8), json_values, max_size=4), max_size=10))
def test_rows_written_as_ndjson_are_read_back_as_written(written: list[dict[str, Any]]) -> None:
    member = b"".join(json.dumps(r).encode() + b"\n" for r in written)
    assert _read_all(_zip({MANIFEST: MANIFEST_OK.encode(), TODOS.member: member})) == written


def test_deeply_nested_json_is_a_400_not_a_recursion_error() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(DomainError):
        _read_all(_zip({MANIFEST: deep}))
    with pytest.raises(DomainError):
        _read_all(
            _zip(
                {MANIFEST: MANIFEST_OK.encode(), TODOS.member: b'{"a": ' + b"[" * 3000 + b"]" * 3000 + b"}\n"}
            )
        )
