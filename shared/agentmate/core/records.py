"""The use cases shared by the record domains (todos, notes, reports, bookmarks, expenses).

``RecordService`` gives a domain its create / get / update / delete, each in one tenant transaction, from its
repository and response model; the domain's service module keeps only what is particular to it (search,
summaries, note append) and uses ``one`` and ``filters`` for those. ``tags`` is each domain's tag roster
(``GET /api/tags``, the ``<module>_tags`` MCP tools) over its repository's ``tag_counts``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, TypeVar
from uuid import UUID

from pydantic import BaseModel

from agentmate.core import idempotency, observability
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import ErrorCollector, NotFound
from agentmate.core.pagination import Page, PageParams
from agentmate.core.patch import PatchModel
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.core.text import blank_to_none, normalise_tag

M = TypeVar("M", bound=BaseModel)
Row = dict[str, Any]
NUL_MESSAGE = "must not contain NUL (U+0000) characters"


def create(
    db: TenantTransactions,
    principal: Principal,
    body: BaseModel,
    *,
    route: str,
    model: type[M],
    insert: Callable[..., Row],
    idempotency_key: str | None,
    data: dict[str, Any] | None = None,
) -> Created[M]:
    """Insert one record (at most once per ``Idempotency-Key``) and return it."""
    values = body.model_dump() if data is None else data
    with db.tenant(principal.account_id) as conn:

        def run() -> M:
            row = insert(
                conn,
                account_id=principal.account_id,
                user_id=principal.user_id,
                key_id=principal.key_id,
                data=values,
            )
            return model(**row)

        return idempotency.once(
            conn,
            account_id=principal.account_id,
            route=route,
            key=idempotency_key,
            request=body.model_dump(mode="json"),
            model=model,
            create=run,
        )


def one(
    db: TenantTransactions,
    principal: Principal,
    resource: str,
    model: type[M],
    fetch: Callable[[Conn, UUID], Row | None],
) -> M:
    """The record ``fetch(conn, account_id)`` returns (a read or an update), or 404 naming ``resource``."""
    with db.tenant(principal.account_id) as conn:
        row = fetch(conn, principal.account_id)
    if row is None:
        raise NotFound(resource)
    return model(**row)


def remove(
    db: TenantTransactions, principal: Principal, resource: str, delete: Callable[[Conn, UUID], bool]
) -> None:
    with db.tenant(principal.account_id) as conn:
        if not delete(conn, principal.account_id):
            raise NotFound(resource)


def filters(tags: list[str] | None = None, **texts: str | None) -> tuple[list[str], dict[str, str | None]]:
    """List filters: tags normalised and deduplicated, text values with blanks meaning "no filter".
    NUL in any value is a 400 naming each such field (Postgres cannot compare it)."""
    errors = ErrorCollector()
    wanted = list(dict.fromkeys(t for t in (normalise_tag(x) for x in tags or []) if t))
    if any("\x00" in t for t in wanted):
        errors.add("tags", NUL_MESSAGE)
    cleaned = {name: blank_to_none(value) for name, value in texts.items()}
    for name, value in cleaned.items():
        if value and "\x00" in value:
            errors.add(name, NUL_MESSAGE)
    errors.raise_if_any()
    return wanted, cleaned


class TagCount(BaseModel):
    """One tag of a record domain and how many of the account's records carry it."""

    tag: str
    count: int


@dataclass(frozen=True)
class RecordService(Generic[M]):
    """create / get / update / delete of one record table, and its tag roster. ``repo`` has ``insert``, ``get``,
    ``update`` and ``delete`` functions taking ``account_id=`` and the record id as ``<id_field>=``, and
    ``tag_counts(conn, *, account_id, limit, offset)``."""

    resource: str  # "note": names the record in 404s
    model: type[M]
    repo: ModuleType
    id_field: str  # "note_id"

    def create(
        self,
        db: TenantTransactions,
        principal: Principal,
        body: BaseModel,
        idempotency_key: str | None = None,
    ) -> Created[M]:
        result = create(
            db,
            principal,
            body,
            route=f"{self.resource}s.create",
            model=self.model,
            insert=self.repo.insert,
            idempotency_key=idempotency_key,
        )
        if not result.replay:  # the business metric (TodoCreated, NoteCreated, …), for REST and MCP alike
            observability.count(f"{self.resource.capitalize()}Created")
        return result

    def get(self, db: TenantTransactions, principal: Principal, record_id: UUID) -> M:
        return one(
            db,
            principal,
            self.resource,
            self.model,
            lambda conn, account_id: self.repo.get(conn, account_id=account_id, **{self.id_field: record_id}),
        )

    def update(self, db: TenantTransactions, principal: Principal, record_id: UUID, body: PatchModel) -> M:
        """Change the fields sent; the others stay as they are (null and empty rules: agentmate.core.patch)."""
        sent = body.changes()
        return one(
            db,
            principal,
            self.resource,
            self.model,
            lambda conn, account_id: self.repo.update(
                conn, account_id=account_id, changes=sent, **{self.id_field: record_id}
            ),
        )

    def delete(self, db: TenantTransactions, principal: Principal, record_id: UUID) -> None:
        remove(
            db,
            principal,
            self.resource,
            lambda conn, account_id: self.repo.delete(
                conn, account_id=account_id, **{self.id_field: record_id}
            ),
        )

    def tags(self, db: TenantTransactions, principal: Principal, page: PageParams) -> Page[TagCount]:
        """The tags of the account's records with how many records carry each, most used first, then by tag."""
        with db.tenant(principal.account_id) as conn:
            rows, total = self.repo.tag_counts(
                conn, account_id=principal.account_id, limit=page.limit, offset=page.offset
            )
        return Page[TagCount](
            items=[TagCount(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
        )
