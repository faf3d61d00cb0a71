"""Offset pagination shared by every list: ``limit`` 1..100 (out of range is a 400, never replaced; the REST
query parameters are ``api.deps.PageDep``)."""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class PageParams(BaseModel):
    limit: int = DEFAULT_LIMIT
    offset: int = 0


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int
