"""SQL of build reviews (migrations/0082): review rows and findings, and what a review reads from its build."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.knowledge.manifest import MANIFEST_PATH
from agentmate.knowledge.quality.review import Finding, PageCitation, ReviewPage
from agentmate.knowledge.quality.schemas import Review, ReviewFinding

CONSTRAINTS = constraints(
    {
        "knowledge_build_reviews_id_account_key": ("id", "already exists"),
        "knowledge_build_reviews_build_fkey": ("build_id", "no such build in this account"),
        "knowledge_build_reviews_job_fkey": ("job_id", "no such job in this account"),
        "knowledge_build_reviews_requested_by_check": ("requested_by", "must be activation or request"),
        "knowledge_build_reviews_status_check": ("status", "unknown review status"),
        "knowledge_build_reviews_independence_check": ("reviewer_independence", "unknown independence"),
        "knowledge_build_reviews_counts_check": ("pages_examined", "counts must be consistent"),
        "knowledge_build_reviews_active_key": (
            "build_id",
            "a review of this build is already queued or running",
        ),
        "knowledge_review_findings_review_fkey": ("review_id", "no such review"),
        "knowledge_review_findings_review_ordinal_key": ("ordinal", "already exists"),
        "knowledge_review_findings_kind_check": ("kind", "unknown finding kind"),
        "knowledge_review_findings_text_check": ("claim", "must be 1..2000 characters"),
    }
)

COLUMNS = (
    "id, build_id, source_id, job_id, requested_by, status, compiler_model, reviewer_model, "
    "reviewer_prompt_version, reviewer_independence, page_limit, pages_total, pages_examined, pages_failed, "
    "findings_total, note, input_tokens, output_tokens, cost_micros, queued_at, started_at, finished_at"
)


def build(conn: Conn, *, account_id: UUID, build_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        """SELECT id, source_id, source_revision_id, status, model, review_status, reviewer_model,
                  reviewer_independence
           FROM knowledge_builds WHERE account_id = %(account_id)s AND id = %(build_id)s""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()


def insert(
    conn: Conn,
    *,
    account_id: UUID,
    user_id: UUID | None,
    key_id: UUID | None,
    build_id: UUID,
    source_id: UUID,
    requested_by: str,
    status: str,
    compiler_model: str,
    reviewer_model: str | None,
    prompt_version: str,
    independence: str,
    page_limit: int,
    note: str = "",
) -> Review:
    row = conn.execute(
        f"""INSERT INTO knowledge_build_reviews (account_id, user_id, key_id, build_id, source_id, requested_by,
                status, compiler_model, reviewer_model, reviewer_prompt_version, reviewer_independence, page_limit,
                note, finished_at)
            VALUES (%(a)s, %(u)s, %(k)s, %(build_id)s, %(source_id)s, %(requested_by)s, %(status)s, %(cm)s,
                    %(rm)s, %(pv)s, %(ind)s, %(limit)s, %(note)s,
                    CASE WHEN %(status)s IN ('queued', 'running') THEN NULL ELSE now() END)
            RETURNING {COLUMNS}""",
        {
            "a": account_id,
            "u": user_id,
            "k": key_id,
            "build_id": build_id,
            "source_id": source_id,
            "requested_by": requested_by,
            "status": status,
            "cm": compiler_model,
            "rm": reviewer_model,
            "pv": prompt_version,
            "ind": independence,
            "limit": page_limit,
            "note": note,
        },
    ).fetchone()
    assert row is not None
    return Review.model_validate(row)


def unfinished(conn: Conn, *, account_id: UUID, build_id: UUID) -> Review | None:
    row = conn.execute(
        f"""SELECT {COLUMNS} FROM knowledge_build_reviews
            WHERE account_id = %(account_id)s AND build_id = %(build_id)s AND status IN ('queued', 'running')""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    return Review.model_validate(row) if row else None


def has_review(conn: Conn, *, account_id: UUID, build_id: UUID) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM knowledge_build_reviews WHERE account_id = %(account_id)s AND build_id = %(build_id)s LIMIT 1",
            {"account_id": account_id, "build_id": build_id},
        ).fetchone()
        is not None
    )


def set_job(conn: Conn, *, account_id: UUID, review_id: UUID, job_id: UUID) -> None:
    conn.execute(
        "UPDATE knowledge_build_reviews SET job_id = %(job_id)s WHERE account_id = %(account_id)s AND id = %(review_id)s",
        {"job_id": job_id, "account_id": account_id, "review_id": review_id},
    )


def get(conn: Conn, *, account_id: UUID, review_id: UUID, lock: bool = False) -> Review | None:
    row = conn.execute(
        f"SELECT {COLUMNS} FROM knowledge_build_reviews WHERE account_id = %(account_id)s AND id = %(review_id)s"
        + (" FOR UPDATE" if lock else ""),
        {"account_id": account_id, "review_id": review_id},
    ).fetchone()
    return Review.model_validate(row) if row else None


def latest(conn: Conn, *, account_id: UUID, build_id: UUID) -> Review | None:
    row = conn.execute(
        f"""SELECT {COLUMNS} FROM knowledge_build_reviews WHERE account_id = %(account_id)s AND build_id = %(build_id)s
            ORDER BY queued_at DESC, id DESC LIMIT 1""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    return Review.model_validate(row) if row else None


def latest_finished(conn: Conn, *, account_id: UUID, build_id: UUID) -> Review | None:
    row = conn.execute(
        f"""SELECT {COLUMNS} FROM knowledge_build_reviews WHERE account_id = %(account_id)s AND build_id = %(build_id)s
              AND status NOT IN ('queued', 'running')
            ORDER BY finished_at DESC, id DESC LIMIT 1""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchone()
    return Review.model_validate(row) if row else None


def set_status(
    conn: Conn, *, account_id: UUID, review_id: UUID, status: str, note: str | None = None
) -> None:
    conn.execute(
        """UPDATE knowledge_build_reviews SET status = %(s)s, note = COALESCE(%(n)s, note),
               started_at = CASE WHEN %(s)s = 'running' THEN COALESCE(started_at, now()) ELSE started_at END,
               finished_at = CASE WHEN %(s)s IN ('queued', 'running') THEN NULL ELSE now() END
           WHERE account_id = %(a)s AND id = %(r)s AND status IN ('queued', 'running')""",
        {"s": status, "n": note, "a": account_id, "r": review_id},
    )


def finish(
    conn: Conn,
    *,
    account_id: UUID,
    review: Review,
    status: str,
    note: str,
    reviewer_model: str | None,
    independence: str,
    pages_total: int,
    pages_examined: int,
    pages_failed: int,
    findings: Sequence[Finding],
    input_tokens: int,
    output_tokens: int,
    cost_micros: int,
) -> None:
    """The verdict, its findings, and the build's mirrored review status, in the caller's transaction."""
    conn.execute(
        """UPDATE knowledge_build_reviews SET status = %(s)s, note = %(n)s, reviewer_model = %(rm)s,
               reviewer_independence = %(ind)s, pages_total = %(t)s, pages_examined = %(e)s, pages_failed = %(f)s,
               findings_total = %(ft)s, input_tokens = input_tokens + %(it)s,
               output_tokens = output_tokens + %(ot)s, cost_micros = cost_micros + %(c)s,
               started_at = COALESCE(started_at, now()), finished_at = now()
           WHERE account_id = %(a)s AND id = %(r)s""",
        {
            "s": status,
            "n": note,
            "rm": reviewer_model,
            "ind": independence,
            "t": pages_total,
            "e": pages_examined,
            "f": pages_failed,
            "ft": len(findings),
            "it": input_tokens,
            "ot": output_tokens,
            "c": cost_micros,
            "a": account_id,
            "r": review.id,
        },
    )
    if findings:
        with conn.cursor() as cur:
            cur.executemany(
                """INSERT INTO knowledge_review_findings (account_id, review_id, ordinal, page_path, kind, claim,
                       detail)
                   VALUES (%(account_id)s, %(review_id)s, %(ordinal)s, %(page_path)s, %(kind)s, %(claim)s, %(detail)s)""",
                [
                    {
                        "account_id": account_id,
                        "review_id": review.id,
                        "ordinal": i,
                        "page_path": f.page_path,
                        "kind": f.kind,
                        "claim": f.claim,
                        "detail": f.detail,
                    }
                    for i, f in enumerate(findings)
                ],
            )
    mirror_on_build(
        conn,
        account_id=account_id,
        build_id=review.build_id,
        status=status,
        reviewer_model=reviewer_model,
        independence=independence,
    )


def mirror_on_build(
    conn: Conn,
    *,
    account_id: UUID,
    build_id: UUID,
    status: str,
    reviewer_model: str | None,
    independence: str,
) -> None:
    """The build carries its latest verdict and who gave it (the only columns a finished build may change)."""
    conn.execute(
        """UPDATE knowledge_builds SET review_status = %(status)s, reviewer_model = COALESCE(%(reviewer_model)s, reviewer_model),
               reviewer_independence = %(independence)s
           WHERE account_id = %(account_id)s AND id = %(build_id)s""",
        {
            "status": status,
            "reviewer_model": reviewer_model,
            "independence": independence,
            "account_id": account_id,
            "build_id": build_id,
        },
    )


def findings(conn: Conn, *, account_id: UUID, review_id: UUID) -> list[ReviewFinding]:
    rows = conn.execute(
        """SELECT page_path, kind, claim, detail FROM knowledge_review_findings
           WHERE account_id = %(account_id)s AND review_id = %(review_id)s ORDER BY ordinal""",
        {"account_id": account_id, "review_id": review_id},
    ).fetchall()
    return [ReviewFinding.model_validate(r) for r in rows]


def pages_with_citations(conn: Conn, *, account_id: UUID, build_id: UUID) -> list[ReviewPage]:
    rows = conn.execute(
        """SELECT p.path, p.kind, p.title, p.content,
                  COALESCE(json_agg(json_build_object('document_path', c.document_path, 'claim', c.claim)
                                    ORDER BY c.ordinal) FILTER (WHERE c.id IS NOT NULL), '[]') AS citations
           FROM knowledge_pages p
           LEFT JOIN knowledge_page_citations c ON c.page_id = p.id AND c.account_id = p.account_id
           WHERE p.account_id = %(account_id)s AND p.build_id = %(build_id)s
           GROUP BY p.id ORDER BY p.path""",
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    return [
        ReviewPage(
            r["path"],
            r["kind"],
            r["title"],
            r["content"],
            tuple(PageCitation(c["document_path"], c["claim"] or "") for c in r["citations"]),
        )
        for r in rows
    ]


def revision_texts(
    conn: Conn, *, account_id: UUID, revision_id: UUID, paths: Sequence[str]
) -> dict[str, str]:
    """The raw text of the cited documents in the build's own revision (what the page was compiled from)."""
    rows = conn.execute(
        """SELECT path, content FROM knowledge_documents
           WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s AND path = ANY(%(paths)s) AND path <> %(manifest_path)s AND content IS NOT NULL""",
        {
            "account_id": account_id,
            "revision_id": revision_id,
            "paths": list(paths),
            "manifest_path": MANIFEST_PATH,
        },
    ).fetchall()
    return {r["path"]: r["content"] for r in rows}
