"""SQL of the wiki compiler tables (migrations/0071): profile versions, builds, pages, citations, links, events."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal, TypedDict, cast
from uuid import UUID

from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged
from agentmate.knowledge.manifest import MANIFEST_PATH
from agentmate.knowledge.wiki.profiles import Profile, ProfileSettings

CONSTRAINTS = constraints(
    {
        "knowledge_profile_versions_id_account_key": ("profile_version_id", "must be unique"),
        "knowledge_profile_versions_name_version_key": ("profile", "version already exists"),
        "knowledge_profile_versions_settings_key": ("profile", "settings already recorded"),
        "knowledge_profile_versions_name_check": ("profile", "must be 1..64 characters"),
        "knowledge_profile_versions_policy_check": (
            "citation_policy",
            "must be required, preferred or optional",
        ),
        "knowledge_profile_versions_limits_check": ("profile", "limits out of range"),
        "knowledge_builds_id_account_key": ("build_id", "must be unique"),
        "knowledge_builds_id_source_account_key": ("build_id", "must be unique"),
        "knowledge_builds_source_fkey": ("source_id", "no such knowledge source in this account"),
        "knowledge_builds_revision_fkey": ("source_revision_id", "not a revision of this source"),
        "knowledge_builds_profile_fkey": ("profile_version_id", "no such profile version"),
        "knowledge_builds_parent_fkey": ("parent_build_id", "not a build of this source"),
        "knowledge_builds_mode_check": ("mode", "must be full or incremental"),
        "knowledge_builds_status_check": ("status", "not a build status"),
        "knowledge_builds_check_status_check": ("check_status", "not a check status"),
        "knowledge_builds_review_status_check": ("review_status", "not a review status"),
        "knowledge_builds_independence_check": ("reviewer_independence", "not an independence class"),
        "knowledge_builds_hash_check": ("raw_package_hash", "must be 64 lowercase hex characters"),
        "knowledge_builds_counts_check": ("build", "counts must not be negative"),
        "knowledge_builds_json_check": ("build", "malformed JSON column"),
        "knowledge_builds_incremental_parent_check": ("mode", "incremental needs a parent build"),
        "knowledge_pages_id_account_key": ("page", "must be unique"),
        "knowledge_pages_id_build_account_key": ("page", "must be unique"),
        "knowledge_pages_build_path_key": ("path", "a page with this path already exists in the build"),
        "knowledge_pages_build_fkey": ("build_id", "no such build"),
        "knowledge_pages_derived_fkey": ("derived_from_build_id", "no such build"),
        "knowledge_pages_path_check": ("path", "must be 1..512 characters"),
        "knowledge_pages_hash_check": ("content_hash", "must be 64 lowercase hex characters"),
        "knowledge_page_citations_page_fkey": ("page", "no such page"),
        "knowledge_page_citations_document_fkey": ("document_id", "no such document"),
        "knowledge_page_citations_page_ordinal_key": ("citations", "duplicate ordinal"),
        "knowledge_page_links_source_fkey": ("page", "no such page"),
        "knowledge_page_links_target_fkey": ("target", "no such page in the build"),
        "knowledge_page_links_source_ordinal_key": ("links", "duplicate ordinal"),
        "knowledge_build_events_build_fkey": ("build_id", "no such build"),
        "knowledge_build_events_sequence_key": ("sequence_no", "already used"),
        "knowledge_build_events_payload_check": ("payload", "must be an object"),
        "knowledge_sources_active_build_fkey": ("build_id", "not a build of this source"),
        "knowledge_sources_indexed_build_fkey": ("build_id", "not a build of this source"),
    }
)

# -- rows (what the services read; the queries below name exactly these columns) ---------------------------------


class WikiSourceRow(TypedDict):
    id: UUID
    name: str
    active_revision_id: UUID | None
    active_build_id: UUID | None
    indexed_build_id: UUID | None
    wiki_indexed_at: datetime | None
    domain: str | None
    package_hash: str | None  # of the active revision (NULL: none yet)
    manifest: dict[str, Any] | None


class WikiDocumentRow(TypedDict):
    id: UUID
    path: str
    sha256: str
    is_text: bool
    content: str | None


class BuildRow(TypedDict):
    """A knowledge_builds row (migrations/0071), every column."""

    id: UUID
    account_id: UUID
    user_id: UUID | None
    key_id: UUID | None
    source_id: UUID
    source_revision_id: UUID
    raw_package_hash: str
    profile_version_id: UUID
    compiler_version: str
    prompt_version: str
    model: str
    reviewer_model: str | None
    reviewer_independence: str
    parent_build_id: UUID | None
    mode: str
    status: str
    check_status: str
    check_failures: list[dict[str, Any]]
    review_status: str
    activate_on_success: bool
    forced: bool
    job_id: UUID | None
    attempts: int
    attempt_usage: list[dict[str, Any]]
    pages_written: int
    pages_reused: int
    input_tokens: int
    output_tokens: int
    cost_micros: int
    cost_priced: bool
    impact: dict[str, Any] | None
    error: str | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class BuildView(BuildRow):
    """A build with its profile's name and version and whether it is its source's active build."""

    profile_name: str
    profile_version: int
    is_active: bool


class EventRow(TypedDict):
    sequence_no: int
    event_type: str
    page_path: str | None
    detail: str
    payload: dict[str, Any]
    created_at: datetime


class PageMetaRow(TypedDict):
    path: str
    kind: str
    title: str
    content_hash: str
    chars: int
    derived_from_build_id: UUID | None
    citation_count: int
    link_count: int


class PageRow(PageMetaRow):
    id: UUID
    build_id: UUID
    content: str


# -- profiles ------------------------------------------------------------------------------------------------


def ensure_profile(conn: Conn, *, account_id: UUID, name: str, settings: ProfileSettings) -> Profile:
    """The account's version of ``name`` with exactly these settings, recorded as the next version if new."""
    digest = settings.settings_hash()
    sql = "SELECT * FROM knowledge_profile_versions WHERE account_id = %(a)s AND name = %(n)s AND settings_hash = %(hash)s"
    row = conn.execute(sql, {"a": account_id, "n": name, "hash": digest}).fetchone()
    if row is None:
        conn.execute(
            """INSERT INTO knowledge_profile_versions (account_id, name, version, allowed_page_kinds,
                   allowed_link_types, citation_policy, max_pages, max_page_chars, max_build_tokens,
                   max_page_count_drift, settings_hash)
               SELECT %(a)s, %(n)s, coalesce(max(version), 0) + 1, %(kinds)s, %(types)s, %(policy)s, %(pages)s,
                      %(chars)s, %(tokens)s, %(drift)s, %(hash)s
                 FROM knowledge_profile_versions WHERE account_id = %(a)s AND name = %(n)s
               ON CONFLICT DO NOTHING""",
            {
                "a": account_id,
                "n": name,
                "kinds": list(settings.allowed_page_kinds),
                "types": list(settings.allowed_link_types),
                "policy": settings.citation_policy,
                "pages": settings.max_pages,
                "chars": settings.max_page_chars,
                "tokens": settings.max_build_tokens,
                "drift": settings.max_page_count_drift,
                "hash": digest,
            },
        )
        row = conn.execute(sql, {"a": account_id, "n": name, "hash": digest}).fetchone()
    assert row is not None
    return Profile.from_row(row)


def profile(conn: Conn, *, account_id: UUID, profile_version_id: UUID) -> Profile:
    row = conn.execute(
        "SELECT * FROM knowledge_profile_versions WHERE account_id = %(account_id)s AND id = %(profile_version_id)s",
        {"account_id": account_id, "profile_version_id": profile_version_id},
    ).fetchone()
    assert row is not None
    return Profile.from_row(row)


# -- sources and revisions -----------------------------------------------------------------------------------


def source(conn: Conn, *, account_id: UUID, source_id: UUID, lock: bool = False) -> WikiSourceRow | None:
    row = conn.execute(
        f"""SELECT s.id, s.name, s.active_revision_id, s.active_build_id, s.indexed_build_id, s.wiki_indexed_at,
                   s.domain, r.package_hash, r.manifest
              FROM knowledge_sources s
              LEFT JOIN knowledge_source_revisions r ON r.id = s.active_revision_id AND r.account_id = s.account_id
             WHERE s.account_id = %(account_id)s AND s.id = %(source_id)s{" FOR UPDATE OF s" if lock else ""}""",
        {"account_id": account_id, "source_id": source_id},
    ).fetchone()
    return cast(WikiSourceRow | None, row)


def documents(conn: Conn, *, account_id: UUID, revision_id: UUID) -> list[dict[str, Any]]:
    """Every document of a revision (not the manifest), in path order, with text content."""
    rows = conn.execute(
        """SELECT id, path, sha256, is_text, content FROM knowledge_documents
            WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s AND path <> %(manifest_path)s ORDER BY path COLLATE "C" """,
        {"account_id": account_id, "revision_id": revision_id, "manifest_path": MANIFEST_PATH},
    ).fetchall()
    return rows  # WikiDocumentRow's columns; untyped while the compiler (its only reader) takes dict rows


def revision_manifest(conn: Conn, *, account_id: UUID, revision_id: UUID) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT manifest FROM knowledge_source_revisions WHERE account_id = %(account_id)s AND id = %(revision_id)s",
        {"account_id": account_id, "revision_id": revision_id},
    ).fetchone()
    return row["manifest"] if row else None


# -- builds --------------------------------------------------------------------------------------------------

BUILD_COLUMNS = """b.*, p.name AS profile_name, p.version AS profile_version,
                   (s.active_build_id IS NOT DISTINCT FROM b.id) AS is_active"""
BUILD_FROM = """knowledge_builds b
                JOIN knowledge_profile_versions p ON p.id = b.profile_version_id AND p.account_id = b.account_id
                JOIN knowledge_sources s ON s.id = b.source_id AND s.account_id = b.account_id"""


def get_build(conn: Conn, *, account_id: UUID, build_id: UUID) -> BuildView | None:
    row = conn.execute(
        f"SELECT {BUILD_COLUMNS} FROM {BUILD_FROM} WHERE b.account_id = %(account_id)s AND b.id = %(build_id)s",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    return cast(BuildView | None, row)


def lock_build(conn: Conn, *, account_id: UUID, build_id: UUID) -> dict[str, Any] | None:
    """A BuildRow, locked; untyped while the compiler (its only reader) takes dict rows."""
    return conn.execute(
        "SELECT * FROM knowledge_builds WHERE account_id = %(account_id)s AND id = %(build_id)s FOR UPDATE",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()


def list_builds(
    conn: Conn, *, account_id: UUID, source_id: UUID | None, limit: int, offset: int
) -> tuple[list[BuildView], int]:
    where, params = ["b.account_id = %(a)s"], {"a": account_id, "s": source_id}
    if source_id is not None:
        where.append("b.source_id = %(s)s")
    rows, total = paged(
        conn,
        columns=BUILD_COLUMNS,
        table=BUILD_FROM,
        where=where,
        params=params,
        order_by="b.queued_at DESC, b.id DESC",
        limit=limit,
        offset=offset,
    )
    return cast(list[BuildView], rows), total


def matching_build(
    conn: Conn,
    *,
    account_id: UUID,
    source_id: UUID,
    revision_id: UUID,
    profile_version_id: UUID,
    model: str,
    mode: str,
    parent_build_id: UUID | None,
) -> BuildView | None:
    """A live or succeeded build with the same input identity (prior-art §4.8), newest first."""
    row = conn.execute(
        """SELECT id FROM knowledge_builds
            WHERE account_id = %(a)s AND source_id = %(s)s AND source_revision_id = %(r)s
              AND profile_version_id = %(p)s AND model = %(m)s AND mode = %(mode)s
              AND compiler_version = %(cv)s AND prompt_version = %(pv)s
              AND status IN ('queued', 'running', 'succeeded')
              AND (%(mode)s = 'full' OR parent_build_id IS NOT DISTINCT FROM %(parent)s::uuid)
            ORDER BY queued_at DESC LIMIT 1""",
        {
            "a": account_id,
            "s": source_id,
            "r": revision_id,
            "p": profile_version_id,
            "m": model,
            "mode": mode,
            "parent": parent_build_id,
            "cv": _versions()[0],
            "pv": _versions()[1],
        },
    ).fetchone()
    return get_build(conn, account_id=account_id, build_id=row["id"]) if row else None


def _versions() -> tuple[str, str]:
    from agentmate.knowledge.wiki.prompt import COMPILER_VERSION, PROMPT_VERSION

    return COMPILER_VERSION, PROMPT_VERSION


def latest_succeeded(
    conn: Conn, *, account_id: UUID, source_id: UUID, before: UUID | None = None
) -> BuildRow | None:
    """The newest succeeded build of a source (queued before ``before`` when given)."""
    row = conn.execute(
        """SELECT * FROM knowledge_builds b
            WHERE account_id = %(a)s AND source_id = %(s)s AND status = 'succeeded'
              AND (%(before)s::uuid IS NULL OR (queued_at, id) < (SELECT queued_at, id FROM knowledge_builds
                                                                  WHERE account_id = %(a)s AND id = %(before)s))
            ORDER BY queued_at DESC, id DESC LIMIT 1""",
        {"a": account_id, "s": source_id, "before": before},
    ).fetchone()
    return cast(BuildRow | None, row)


def build_row(conn: Conn, *, account_id: UUID, build_id: UUID) -> BuildRow | None:
    row = conn.execute(
        "SELECT * FROM knowledge_builds WHERE account_id = %(account_id)s AND id = %(build_id)s",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    return cast(BuildRow | None, row)


def page_count(conn: Conn, *, account_id: UUID, build_id: UUID) -> int:
    row = conn.execute(
        "SELECT count(*) AS n FROM knowledge_pages WHERE account_id = %(account_id)s AND build_id = %(build_id)s",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    return int(row["n"]) if row else 0


def insert_build(conn: Conn, *, account_id: UUID, values: dict[str, Any]) -> UUID:
    cols = ", ".join(values)
    params = ", ".join(f"%({k})s" for k in values)
    row = conn.execute(
        f"INSERT INTO knowledge_builds (account_id, {cols}) VALUES (%(_account)s, {params}) RETURNING id",
        {**values, "_account": account_id},
    ).fetchone()
    assert row is not None
    return UUID(str(row["id"]))


_JSON_COLUMNS = ("check_failures", "attempt_usage", "impact")


def update_build(
    conn: Conn,
    *,
    account_id: UUID,
    build_id: UUID,
    changes: dict[str, Any],
    expect_status: str | None = None,
    expect_attempts: int | None = None,
) -> bool:
    """Set columns of a build; with expectations, only while the build is still in that state (the outcome of a
    claim that was superseded changes nothing)."""
    values = {k: Jsonb(v) if k in _JSON_COLUMNS and v is not None else v for k, v in changes.items()}
    sets = ", ".join(f"{k} = %({k})s" for k in values)
    where = "account_id = %(_a)s AND id = %(_id)s"
    if expect_status is not None:
        where += " AND status = %(_status)s"
    if expect_attempts is not None:
        where += " AND attempts = %(_attempts)s"
    cur = conn.execute(
        f"UPDATE knowledge_builds SET {sets} WHERE {where}",
        {**values, "_a": account_id, "_id": build_id, "_status": expect_status, "_attempts": expect_attempts},
    )
    return cur.rowcount == 1


def set_job(conn: Conn, *, account_id: UUID, build_id: UUID, job_id: UUID) -> None:
    conn.execute(
        "UPDATE knowledge_builds SET job_id = %(job_id)s WHERE account_id = %(account_id)s AND id = %(build_id)s",
        {"job_id": job_id, "account_id": account_id, "build_id": build_id},
    )


def set_active_build(conn: Conn, *, account_id: UUID, source_id: UUID, build_id: UUID) -> None:
    conn.execute(
        "UPDATE knowledge_sources SET active_build_id = %(build_id)s, updated_at = now() "
        "WHERE account_id = %(account_id)s AND id = %(source_id)s",
        {"build_id": build_id, "account_id": account_id, "source_id": source_id},
    )


# -- events --------------------------------------------------------------------------------------------------


def add_events(conn: Conn, *, account_id: UUID, build_id: UUID, events: Sequence[dict[str, Any]]) -> None:
    """Append events after the build's last one (the build row is locked by the caller)."""
    if not events:
        return
    row = conn.execute(
        "SELECT coalesce(max(sequence_no), 0) AS n FROM knowledge_build_events "
        "WHERE account_id = %(account_id)s AND build_id = %(build_id)s",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    start = row["n"] if row else 0
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO knowledge_build_events (account_id, build_id, sequence_no, event_type, page_path, detail,
                   payload) VALUES (%(account_id)s, %(build_id)s, %(sequence_no)s, %(event_type)s, %(page_path)s,
                   %(detail)s, %(payload)s)""",
            [
                {
                    "account_id": account_id,
                    "build_id": build_id,
                    "sequence_no": start + i,
                    "event_type": e["event_type"],
                    "page_path": e.get("page_path"),
                    "detail": e.get("detail", ""),
                    "payload": Jsonb(e.get("payload") or {}),
                }
                for i, e in enumerate(events, start=1)
            ],
        )


def events(
    conn: Conn, *, account_id: UUID, build_id: UUID, limit: int | None = None, offset: int = 0
) -> tuple[list[EventRow], int]:
    if limit is None:
        rows = conn.execute(
            "SELECT sequence_no, event_type, page_path, detail, payload, created_at "
            "FROM knowledge_build_events WHERE account_id = %(account_id)s AND build_id = %(build_id)s "
            "ORDER BY sequence_no",
            {"account_id": account_id, "build_id": build_id},
        ).fetchall()
        return cast(list[EventRow], rows), len(rows)
    rows, total = paged(
        conn,
        columns="sequence_no, event_type, page_path, detail, payload, created_at",
        table="knowledge_build_events",
        where=["account_id = %(a)s", "build_id = %(b)s"],
        params={"a": account_id, "b": build_id},
        order_by="sequence_no",
        limit=limit,
        offset=offset,
    )
    return cast(list[EventRow], rows), total


# -- pages ---------------------------------------------------------------------------------------------------


def insert_pages(
    conn: Conn,
    *,
    account_id: UUID,
    build_id: UUID,
    pages: Sequence[dict[str, Any]],
    document_ids: dict[str, UUID],
) -> None:
    """Pages, then their citations and links (targets resolved inside the build) in three statements."""
    ids: dict[str, UUID] = {}
    for page in pages:
        row = conn.execute(
            """INSERT INTO knowledge_pages (account_id, build_id, path, kind, title, content, content_hash,
                   derived_from_build_id) VALUES (%(account_id)s, %(build_id)s, %(path)s, %(kind)s, %(title)s, %(content)s, %(content_hash)s, %(derived_from_build_id)s) RETURNING id""",
            {
                "account_id": account_id,
                "build_id": build_id,
                "path": page["path"],
                "kind": page["kind"],
                "title": page["title"],
                "content": page["content"],
                "content_hash": page["content_hash"],
                "derived_from_build_id": page.get("derived_from_build_id"),
            },
        ).fetchone()
        assert row is not None
        ids[page["path"]] = row["id"]
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO knowledge_page_citations (account_id, build_id, page_id, ordinal, document_id,
                   document_path, heading_path, claim, excerpt)
               VALUES (%(account_id)s, %(build_id)s, %(page_id)s, %(ordinal)s, %(document_id)s, %(document_path)s,
                       %(heading_path)s, %(claim)s, %(excerpt)s)""",
            [
                {
                    "account_id": account_id,
                    "build_id": build_id,
                    "page_id": ids[p["path"]],
                    "ordinal": i,
                    "document_id": document_ids.get(c.path),
                    "document_path": c.path,
                    "heading_path": c.heading_path,
                    "claim": c.claim,
                    "excerpt": c.excerpt,
                }
                for p in pages
                for i, c in enumerate(p["citations"])
            ],
        )
        cur.executemany(
            """INSERT INTO knowledge_page_links (account_id, build_id, source_page_id, ordinal, target_page_id,
                   target_path, link_type)
               VALUES (%(account_id)s, %(build_id)s, %(source_page_id)s, %(ordinal)s, %(target_page_id)s,
                       %(target_path)s, %(link_type)s)""",
            [
                {
                    "account_id": account_id,
                    "build_id": build_id,
                    "source_page_id": ids[p["path"]],
                    "ordinal": i,
                    "target_page_id": ids.get(link.target),
                    "target_path": link.target,
                    "link_type": link.type,
                }
                for p in pages
                for i, link in enumerate(p["links"])
            ],
        )


PAGE_META = """pg.path, pg.kind, pg.title, pg.content_hash, char_length(pg.content) AS chars,
    pg.derived_from_build_id,
    (SELECT count(*) FROM knowledge_page_citations c WHERE c.page_id = pg.id) AS citation_count,
    (SELECT count(*) FROM knowledge_page_links l WHERE l.source_page_id = pg.id) AS link_count"""


def list_pages(
    conn: Conn, *, account_id: UUID, build_id: UUID, limit: int, offset: int
) -> tuple[list[PageMetaRow], int]:
    rows, total = paged(
        conn,
        columns=PAGE_META,
        table="knowledge_pages pg",
        where=["pg.account_id = %(a)s", "pg.build_id = %(b)s"],
        params={"a": account_id, "b": build_id},
        order_by='pg.path COLLATE "C"',
        limit=limit,
        offset=offset,
    )
    return cast(list[PageMetaRow], rows), total


def page_hashes(conn: Conn, *, account_id: UUID, build_id: UUID) -> dict[str, str]:
    rows = conn.execute(
        "SELECT path, content_hash FROM knowledge_pages WHERE account_id = %(account_id)s AND build_id = %(build_id)s",
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    return {r["path"]: r["content_hash"] for r in rows}


def get_page(conn: Conn, *, account_id: UUID, build_id: UUID, path: str) -> PageRow | None:
    row = conn.execute(
        f"SELECT pg.id, pg.build_id, pg.content, {PAGE_META} FROM knowledge_pages pg "
        "WHERE pg.account_id = %(account_id)s AND pg.build_id = %(build_id)s AND pg.path = %(path)s",
        {"account_id": account_id, "build_id": build_id, "path": path},
    ).fetchone()
    return cast(PageRow | None, row)


class PageCitationRow(TypedDict):
    page_id: UUID
    document_id: UUID | None
    document_path: str
    heading_path: str
    claim: str
    excerpt: str


class PageLinkRow(TypedDict):
    page_id: UUID
    direction: Literal["out", "in"]
    other_path: str
    link_type: str
    exists: bool
    ordinal: int


def page_citations(conn: Conn, *, account_id: UUID, page_ids: Sequence[UUID]) -> list[PageCitationRow]:
    rows = conn.execute(
        """SELECT page_id, document_id, document_path, heading_path, claim, excerpt FROM knowledge_page_citations
            WHERE account_id = %(account_id)s AND page_id = ANY(%(page_ids)s) ORDER BY page_id, ordinal""",
        {"account_id": account_id, "page_ids": list(page_ids)},
    ).fetchall()
    return cast(list[PageCitationRow], rows)


def page_links(conn: Conn, *, account_id: UUID, page_ids: Sequence[UUID]) -> list[PageLinkRow]:
    """Both directions: ``direction`` out (this page links to ``other_path``) or in (``other_path`` links here)."""
    rows = conn.execute(
        """SELECT l.source_page_id AS page_id, 'out' AS direction, l.target_path AS other_path, l.link_type,
                  l.target_page_id IS NOT NULL AS exists, l.ordinal
             FROM knowledge_page_links l WHERE l.account_id = %(a)s AND l.source_page_id = ANY(%(ids)s)
           UNION ALL
           SELECT l.target_page_id, 'in', src.path, l.link_type, true, l.ordinal
             FROM knowledge_page_links l
             JOIN knowledge_pages src ON src.id = l.source_page_id AND src.account_id = l.account_id
            WHERE l.account_id = %(a)s AND l.target_page_id = ANY(%(ids)s)
           ORDER BY 1, 2 DESC, 3, 6""",
        {"a": account_id, "ids": list(page_ids)},
    ).fetchall()
    return cast(list[PageLinkRow], rows)


class PageLinkOut(TypedDict):
    source_page_id: UUID
    target_path: str
    link_type: str


class FullPageRow(TypedDict):
    """A page of a parent build with its citations and outbound links (what an incremental build carries over)."""

    id: UUID
    path: str
    kind: str
    title: str
    content: str
    content_hash: str
    derived_from_build_id: UUID | None
    citations: list[PageCitationRow]
    links: list[PageLinkOut]


def build_pages_full(conn: Conn, *, account_id: UUID, build_id: UUID) -> list[dict[str, Any]]:
    """Every page of a build with its citations and outbound links (the parent of an incremental build): a
    FullPageRow each, untyped while the compiler (its only reader) takes dict rows."""
    pages = conn.execute(
        """SELECT id, path, kind, title, content, content_hash, derived_from_build_id FROM knowledge_pages
            WHERE account_id = %(account_id)s AND build_id = %(build_id)s ORDER BY path COLLATE "C" """,
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    ids = [p["id"] for p in pages]
    cites: dict[UUID, list[PageCitationRow]] = {}
    for c in page_citations(conn, account_id=account_id, page_ids=ids):
        cites.setdefault(c["page_id"], []).append(c)
    links: dict[UUID, list[PageLinkOut]] = {}
    for link in conn.execute(
        """SELECT source_page_id, target_path, link_type FROM knowledge_page_links
                WHERE account_id = %(account_id)s AND build_id = %(build_id)s ORDER BY source_page_id, ordinal""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchall():
        links.setdefault(link["source_page_id"], []).append(cast(PageLinkOut, link))
    for p in pages:
        p["citations"] = cites.get(p["id"], [])
        p["links"] = links.get(p["id"], [])
    return pages
