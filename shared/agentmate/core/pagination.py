"""Offset pagination shared by every list: ``limit`` 1..100 (out of range is a 400, never replaced)."""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from fastapi import Depends, Query
from pydantic import BaseModel

T = TypeVar("T")

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class PageParams(BaseModel):
    limit: int = DEFAULT_LIMIT
    offset: int = 0


async def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size, 1..100")] = DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, description="Items to skip")] = 0,
) -> PageParams:
    return PageParams(limit=limit, offset=offset)


PageDep = Annotated[PageParams, Depends(page_params)]


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int
