"""SQL of wiki lint (migrations/0081): what the rules read from a build and the current revision, and the runs."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict, cast
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged
from agentmate.knowledge.manifest import MANIFEST_PATH
from agentmate.knowledge.quality import lint
from agentmate.knowledge.quality.frontmatter import read as read_frontmatter
from agentmate.knowledge.quality.schemas import LintFinding, LintRun

CONSTRAINTS = constraints(
    {
        "knowledge_lint_runs_source_fkey": ("source_id", "no such knowledge source in this account"),
        "knowledge_lint_runs_build_fkey": ("source_id", "the build does not belong to this source"),
        "knowledge_lint_runs_revision_fkey": ("source_id", "the revision does not belong to this source"),
        "knowledge_lint_runs_counts_check": ("findings_total", "counts must be consistent"),
        "knowledge_lint_runs_id_account_key": ("id", "already exists"),
        "knowledge_lint_findings_run_fkey": ("run_id", "no such lint run"),
        "knowledge_lint_findings_run_ordinal_key": ("ordinal", "already exists"),
        "knowledge_lint_findings_rule_check": ("rule", "unknown lint rule"),
        "knowledge_lint_findings_severity_check": ("severity", "must be warning or info"),
    }
)

RUN_COLUMNS = (
    "id, source_id, build_id, revision_id, pages_examined, documents_examined, findings_total, "
    "findings_warning, findings_info, started_at, finished_at"
)


class SourcePointers(TypedDict):
    id: UUID
    active_build_id: UUID | None
    active_revision_id: UUID | None


def source_pointers(conn: Conn, *, account_id: UUID, source_id: UUID) -> SourcePointers | None:
    row = conn.execute(
        "SELECT id, active_build_id, active_revision_id FROM knowledge_sources WHERE account_id = %(account_id)s AND id = %(source_id)s",
        {"account_id": account_id, "source_id": source_id},
    ).fetchone()
    return cast(SourcePointers | None, row)


def pages(conn: Conn, *, account_id: UUID, build_id: UUID) -> list[lint.Page]:
    rows = conn.execute(
        "SELECT path, kind, content FROM knowledge_pages WHERE account_id = %(account_id)s AND build_id = %(build_id)s ORDER BY path",
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    return [lint.Page(r["path"], r["kind"], *read_frontmatter(r["content"])) for r in rows]


def links(conn: Conn, *, account_id: UUID, build_id: UUID) -> list[lint.Link]:
    rows = conn.execute(
        """SELECT src.path AS source_path, COALESCE(tgt.path, l.target_path) AS target_path, l.link_type
           FROM knowledge_page_links l
           JOIN knowledge_pages src ON src.id = l.source_page_id AND src.account_id = l.account_id
           LEFT JOIN knowledge_pages tgt ON tgt.id = l.target_page_id AND tgt.account_id = l.account_id
           WHERE l.account_id = %(account_id)s AND l.build_id = %(build_id)s ORDER BY src.path, l.ordinal""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    return [lint.Link(r["source_path"], r["target_path"], r["link_type"]) for r in rows]


def citations(conn: Conn, *, account_id: UUID, build_id: UUID) -> list[lint.Citation]:
    """Each citation with the hash its document had in the build's revision (None when it was not resolved)."""
    rows = conn.execute(
        """SELECT p.path AS page_path, c.document_path, d.sha256
           FROM knowledge_page_citations c
           JOIN knowledge_pages p ON p.id = c.page_id AND p.account_id = c.account_id
           LEFT JOIN knowledge_documents d ON d.id = c.document_id AND d.account_id = c.account_id
           WHERE c.account_id = %(account_id)s AND c.build_id = %(build_id)s ORDER BY p.path, c.ordinal""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    return [lint.Citation(r["page_path"], r["document_path"], r["sha256"]) for r in rows]


def documents(conn: Conn, *, account_id: UUID, revision_id: UUID) -> list[lint.Document]:
    rows = conn.execute(
        """SELECT path, sha256, is_text, (content IS NOT NULL AND btrim(content) <> '') AS has_text
           FROM knowledge_documents WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s AND path <> %(manifest_path)s""",
        {"account_id": account_id, "revision_id": revision_id, "manifest_path": MANIFEST_PATH},
    ).fetchall()
    return [lint.Document(r["path"], r["sha256"], r["is_text"], r["has_text"]) for r in rows]


def insert_run(
    conn: Conn,
    *,
    account_id: UUID,
    user_id: UUID | None,
    key_id: UUID | None,
    source_id: UUID,
    build_id: UUID,
    revision_id: UUID,
    pages_examined: int,
    documents_examined: int,
    findings: list[lint.Finding],
    started_at: datetime,
    finished_at: datetime,
) -> LintRun:
    row = conn.execute(
        f"""INSERT INTO knowledge_lint_runs (account_id, user_id, key_id, source_id, build_id, revision_id,
                pages_examined, documents_examined, findings_total, findings_warning, findings_info, started_at,
                finished_at)
            VALUES (%(a)s, %(u)s, %(k)s, %(source_id)s, %(b)s, %(r)s, %(p)s, %(d)s, %(findings_total)s,
                    %(findings_warning)s, %(findings_info)s, %(started_at)s, %(finished_at)s)
            RETURNING {RUN_COLUMNS}""",
        {
            "a": account_id,
            "u": user_id,
            "k": key_id,
            "source_id": source_id,
            "b": build_id,
            "r": revision_id,
            "p": pages_examined,
            "d": documents_examined,
            "started_at": started_at,
            "finished_at": finished_at,
            **lint.counts(findings),
        },
    ).fetchone()
    assert row is not None
    if findings:
        with conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO knowledge_lint_findings (account_id, run_id, ordinal, rule, severity, page_path,
                       related_path, detail)
                   VALUES (%(account_id)s, %(run_id)s, %(ordinal)s, %(rule)s, %(severity)s, %(page_path)s,
                           %(related_path)s, %(detail)s)""",
                [
                    {
                        "account_id": account_id,
                        "run_id": row["id"],
                        "ordinal": i,
                        "rule": f.rule,
                        "severity": f.severity,
                        "page_path": f.page_path,
                        "related_path": f.related_path,
                        "detail": f.detail,
                    }
                    for i, f in enumerate(findings)
                ],
            )
    return LintRun.model_validate(row)


def list_runs(
    conn: Conn, *, account_id: UUID, source_id: UUID | None, limit: int, offset: int
) -> tuple[list[LintRun], int]:
    where = ["account_id = %(a)s"] + (["source_id = %(source_id)s"] if source_id else [])
    rows, total = paged(
        conn,
        columns=RUN_COLUMNS,
        table="knowledge_lint_runs",
        where=where,
        params={"a": account_id, "source_id": source_id},
        order_by="finished_at DESC, id",
        limit=limit,
        offset=offset,
    )
    return [LintRun.model_validate(r) for r in rows], total


def get_run(conn: Conn, *, account_id: UUID, run_id: UUID) -> LintRun | None:
    row = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM knowledge_lint_runs WHERE account_id = %(account_id)s AND id = %(run_id)s",
        {"account_id": account_id, "run_id": run_id},
    ).fetchone()
    return LintRun.model_validate(row) if row else None


def run_findings(conn: Conn, *, account_id: UUID, run_id: UUID) -> list[LintFinding]:
    rows = conn.execute(
        """SELECT rule, severity, page_path, related_path, detail FROM knowledge_lint_findings
           WHERE account_id = %(account_id)s AND run_id = %(run_id)s ORDER BY ordinal""",
        {"account_id": account_id, "run_id": run_id},
    ).fetchall()
    return [LintFinding.model_validate(r) for r in rows]
