"""Offset pagination shared by every list: ``limit`` 1..100 (out of range is a 400, never replaced; the REST
query parameters are ``api.deps.PageDep``).

Pages are bounded by bytes as well as by count: a page stops before the item that would take its items past
``PAGE_BYTES`` of JSON (it always holds at least one), so no list answer can pass Lambda's 6 MB response limit
(a Lambda response escapes the body once more, up to twice its size). ``total`` is unchanged: continue at
``offset + len(items)``. docs/agent-integration.md §2.2 says so; lists that omit bodies rarely reach it.
"""

from __future__ import annotations

import json
from typing import Generic, TypeVar

from pydantic import BaseModel, model_validator

T = TypeVar("T")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
MAX_OFFSET = 2**63 - 1  # Postgres OFFSET is a bigint
PAGE_BYTES = 2 * 1024 * 1024


class PageParams(BaseModel):
    limit: int = DEFAULT_LIMIT
    offset: int = 0


class Page(BaseModel, Generic[T]):
    """One page of a list. ``items`` may be fewer than ``limit`` before the end when the page reached
    ``PAGE_BYTES`` (2 MiB) of JSON: continue at ``offset + len(items)`` while that is below ``total``."""

    items: list[T]
    total: int
    limit: int
    offset: int

    @model_validator(mode="after")
    def _bounded_by_bytes(self) -> Page[T]:
        size = 0
        for index, item in enumerate(self.items):
            size += _json_size(item)
            if size > PAGE_BYTES and index > 0:
                self.items = self.items[:index]
                break
        return self


def _json_size(item: object) -> int:
    if isinstance(item, BaseModel):
        return len(item.model_dump_json().encode())
    return len(json.dumps(item, default=str, ensure_ascii=False).encode())
