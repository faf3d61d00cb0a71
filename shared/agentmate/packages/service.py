"""Use cases of the package ingest, shared by every registry (no skills or knowledge rules here).

Connection-level functions (``register_source``, ``ingest_package``) run inside the caller's tenant transaction;
``push_snapshot`` and ``sync_source`` own their transactions because a sync must not hold one open while it
downloads, and a failed sync must record ``status='error'`` in a transaction of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, DomainError, FieldError, NotFound, ValidationFailed, invalid
from agentmate.core.limits import service as limits
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.packages.identity import (
    NAME_RE,
    derive_domain,
    derive_name,
    package_hash,
    package_path_problem,
    prepare_raw,
    prepare_snapshot,
)
from agentmate.packages.limits import GIT_LIMITS, SNAPSHOT_LIMITS, PackageLimits
from agentmate.packages.policy import NetPolicy
from agentmate.packages.schemas import (
    Fetched,
    FileInput,
    Ingested,
    Package,
    Revision,
    Source,
    SourceInput,
    Upserted,
)
from agentmate.packages.store import PackageStore

log = logging.getLogger(__name__)
T = TypeVar("T")

Select = Callable[[Package], Package]
"""A registry's file selection/validation before hashing (e.g. a manifest's include/exclude); may raise."""
OnRevision = Callable[[Conn, Ingested], T]
"""A registry's own writes for the ingested revision, in the ingest transaction (a raise rolls it all back)."""


@dataclass(frozen=True, slots=True)
class Actor:
    """Who writes: the account (tenant) and, for the audit columns, the user and API key."""

    account_id: UUID
    user_id: UUID | None = None
    key_id: UUID | None = None

    @classmethod
    def of(cls, principal: Principal) -> Actor:
        return cls(principal.account_id, principal.user_id, principal.key_id)


@dataclass(frozen=True, slots=True)
class IngestOutcome(Generic[T]):
    ingested: Ingested
    extra: T | None


def subset(package: Package, keep: Callable[[str], bool]) -> Package:
    """The package restricted to the paths ``keep`` accepts, with its hash recomputed."""
    files = tuple(f for f in package.files if keep(f.path))
    if not files:
        raise invalid("package", "no file of the package is selected")
    return Package(
        files=files,
        package_hash=package_hash((f.path, f.sha256, f.size_bytes) for f in files),
        total_bytes=sum(f.size_bytes for f in files),
    )


def register_source(
    conn: Conn, store: PackageStore, actor: Actor, data: SourceInput, policy: NetPolicy
) -> Upserted:
    """Register or upsert by name. The name defaults to the package_path segments joined by '-'; domain is
    derived. Re-registering a name with the same type, repository and path updates ``default_ref``; pointing a
    taken name at a different package is a 409 (register it under an explicit distinct name)."""
    problems: list[FieldError] = []
    path_problem = package_path_problem(data.package_path)
    if path_problem:
        problems.append(FieldError("package_path", path_problem))
    name = data.name if data.name is not None else derive_name(data.package_path)
    if name is None:
        problems.append(FieldError("name", "required when package_path is empty"))
    elif not NAME_RE.match(name):
        field = "name" if data.name is not None else "package_path"
        problems.append(
            FieldError(
                field,
                "the name must be 1-128 letters, digits, '.', '_' or '-', starting "
                f"with a letter or digit (got {name!r})",
            )
        )
    if data.type == "git":
        url_problem = policy.url_problem(data.repository_url)
        if url_problem:
            problems.append(FieldError("repository_url", url_problem))
    if problems:
        raise ValidationFailed(problems)
    assert name is not None
    store.lock_name(conn, account_id=actor.account_id, name=name)
    existing = store.source_by_name(conn, account_id=actor.account_id, name=name)
    if existing is None:
        limits.require_room(conn, "sources", get_limit_settings().max_sources)
        source = store.insert_source(
            conn,
            account_id=actor.account_id,
            user_id=actor.user_id,
            key_id=actor.key_id,
            name=name,
            data=data,
            domain=derive_domain(data.package_path),
        )
        return Upserted(source, created=True)
    same = (existing.type, existing.repository_url, existing.package_path) == (
        data.type,
        data.repository_url,
        data.package_path,
    )
    if not same:
        raise Conflict(
            f"the source name {name!r} is taken by a different package; register this package under "
            "an explicit distinct name",
            errors=[FieldError("name", "taken by a different package")],
        )
    if existing.default_ref != data.default_ref and data.default_ref is not None:
        existing = store.update_default_ref(
            conn, account_id=actor.account_id, source_id=existing.id, default_ref=data.default_ref
        )
    return Upserted(existing, created=False)


def list_sources(db: TenantTransactions, store: PackageStore, actor: Actor, page: PageParams) -> Page[Source]:
    with db.tenant(actor.account_id) as conn:
        items, total = store.list_sources(
            conn, account_id=actor.account_id, limit=page.limit, offset=page.offset
        )
    return Page[Source](items=items, total=total, limit=page.limit, offset=page.offset)


def get_source(
    db: TenantTransactions, store: PackageStore, actor: Actor, source_id: UUID, *, what: str
) -> Source:
    """One source of the account; ``what`` names it in the 404 (``skill source``, ``knowledge source``)."""
    with db.tenant(actor.account_id) as conn:
        source = store.get_source(conn, account_id=actor.account_id, source_id=source_id)
    if source is None:
        raise NotFound(what)
    return source


def list_revisions(
    db: TenantTransactions, store: PackageStore, actor: Actor, source_id: UUID, page: PageParams, *, what: str
) -> Page[Revision]:
    """A source's revisions, newest first; a 404 naming ``what`` when the source is not the account's."""
    with db.tenant(actor.account_id) as conn:
        if store.get_source(conn, account_id=actor.account_id, source_id=source_id) is None:
            raise NotFound(what)
        items, total = store.list_revisions(
            conn, account_id=actor.account_id, source_id=source_id, limit=page.limit, offset=page.offset
        )
    return Page[Revision](items=items, total=total, limit=page.limit, offset=page.offset)


def ingest_package(
    conn: Conn,
    store: PackageStore,
    actor: Actor,
    source_id: UUID,
    package: Package,
    *,
    origin: str,
    ref: str | None = None,
    commit_sha: str | None = None,
) -> Ingested:
    """Store ``package`` as a revision of the source, or replay the revision with the same package hash; either
    way the source points at it (``active_revision_id``) and is ``ready``. Idempotent and transactional: it
    runs in the caller's transaction, so a failure leaves nothing behind."""
    source = store.get_source(conn, account_id=actor.account_id, source_id=source_id, lock=True)
    if source is None:
        raise NotFound("source")
    revision = store.revision_by_hash(
        conn, account_id=actor.account_id, source_id=source_id, package_hash=package.package_hash
    )
    created = revision is None
    if revision is None:
        limits.require_room(
            conn,
            "package_bytes",
            get_limit_settings().max_package_bytes,
            adding=package.total_bytes,
            account_id=actor.account_id,
        )
        revision = store.insert_revision(
            conn,
            account_id=actor.account_id,
            source_id=source_id,
            user_id=actor.user_id,
            key_id=actor.key_id,
            package=package,
            origin=origin,
            ref=ref,
            commit_sha=commit_sha,
        )
    source = store.mark_ready(
        conn, account_id=actor.account_id, source_id=source_id, revision_id=revision.id, commit_sha=commit_sha
    )
    return Ingested(source=source, revision=revision, created=created)


def _source_of_type(
    db: TenantTransactions, store: PackageStore, actor: Actor, source_id: UUID, kind: str
) -> Source:
    with db.tenant(actor.account_id) as conn:
        source = store.get_source(conn, account_id=actor.account_id, source_id=source_id)
    if source is None:
        raise NotFound("source")
    if source.type != kind:
        verb = "synced from git" if source.type == "git" else "pushed as snapshots"
        raise Conflict(f"this is a {source.type} source: it is {verb}")
    return source


def push_snapshot(
    db: TenantTransactions,
    store: PackageStore,
    actor: Actor,
    source_id: UUID,
    files: Sequence[FileInput],
    *,
    expected_hash: str | None = None,
    limits: PackageLimits = SNAPSHOT_LIMITS,
    select: Select | None = None,
    on_revision: OnRevision[T] | None = None,
) -> IngestOutcome[T]:
    """Validate and ingest a client-pushed snapshot of a ``local`` source. Bad input is a 4xx naming the field
    and changes nothing (the source keeps its status: the client got the error directly)."""
    _source_of_type(db, store, actor, source_id, "local")
    package = prepare_snapshot(files, limits, expected_hash)
    if select is not None:
        package = select(package)
    with db.tenant(actor.account_id) as conn:
        ingested = ingest_package(conn, store, actor, source_id, package, origin="snapshot")
        extra = on_revision(conn, ingested) if on_revision is not None else None
    return IngestOutcome(ingested, extra)


class Fetcher(Protocol):
    """What sync needs from git (``agentmate.packages.git.GitFetcher``; tests may pass their own)."""

    def fetch(self, repository_url: str, package_path: str, ref: str) -> Fetched: ...


def sync_source(
    db: TenantTransactions,
    store: PackageStore,
    actor: Actor,
    source_id: UUID,
    fetcher: Fetcher,
    *,
    ref: str | None = None,
    limits: PackageLimits = GIT_LIMITS,
    select: Select | None = None,
    on_revision: OnRevision[T] | None = None,
) -> IngestOutcome[T]:
    """Resolve ``ref`` (default: the source's default_ref, else HEAD) to a commit, fetch the package path at it
    and ingest it. Any failure marks the source ``error`` with the reason and leaves no revision; the error is
    re-raised for the caller to render."""
    source = _source_of_type(db, store, actor, source_id, "git")
    wanted = ref or source.default_ref or "HEAD"
    try:
        fetched = fetcher.fetch(source.repository_url, source.package_path, wanted)
        package = prepare_raw(fetched.files, limits)
        if select is not None:
            package = select(package)
        with db.tenant(actor.account_id) as conn:
            ingested = ingest_package(
                conn,
                store,
                actor,
                source_id,
                package,
                origin="git",
                ref=fetched.ref,
                commit_sha=fetched.commit_sha,
            )
            extra = on_revision(conn, ingested) if on_revision is not None else None
        return IngestOutcome(ingested, extra)
    except DomainError as exc:
        _record_failure(db, store, actor, source_id, exc.detail)
        raise
    except Exception:
        log.exception("package sync failed")
        _record_failure(db, store, actor, source_id, "internal error during sync")
        raise


def _record_failure(
    db: TenantTransactions, store: PackageStore, actor: Actor, source_id: UUID, message: str
) -> None:
    with db.tenant(actor.account_id) as conn:
        store.mark_error(conn, account_id=actor.account_id, source_id=source_id, message=message)
