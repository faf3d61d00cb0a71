"""Wiki lint use cases (spec/001 K3.7): run every rule over a source's active build against its active revision,
store the run with its findings, list and read runs. Nothing is modified and nothing is blocked."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from agentmate.core.db import TenantTransactions
from agentmate.core.errors import Conflict, NotFound
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.knowledge.quality import lint
from agentmate.knowledge.quality import lint_repository as repo
from agentmate.knowledge.quality.schemas import LintFinding, LintRun, LintRunDetail


def lint_active_wiki(db: TenantTransactions, principal: Principal, source_id: UUID) -> LintRunDetail:
    a = principal.account_id
    with db.tenant(a) as conn:
        source = repo.source_pointers(conn, account_id=a, source_id=source_id)
        if source is None:
            raise NotFound("knowledge source")
        build_id, revision_id = source["active_build_id"], source["active_revision_id"]
        if build_id is None:
            raise Conflict(
                "this source has no active wiki build to lint: compile it first (POST /api/knowledge/compile)"
            )
        if revision_id is None:
            raise Conflict("this source has no active revision: sync or push a snapshot first")
        started = datetime.now(UTC)
        pages = repo.pages(conn, account_id=a, build_id=build_id)
        documents = repo.documents(conn, account_id=a, revision_id=revision_id)
        findings = lint.run(
            pages,
            repo.links(conn, account_id=a, build_id=build_id),
            repo.citations(conn, account_id=a, build_id=build_id),
            documents,
        )
        run = repo.insert_run(
            conn,
            account_id=a,
            user_id=principal.user_id,
            key_id=principal.key_id,
            source_id=source_id,
            build_id=build_id,
            revision_id=revision_id,
            pages_examined=len(pages),
            documents_examined=len(documents),
            findings=findings,
            started_at=started,
            # Read on the same clock as started_at (the column's default, now(), is the transaction's start:
            # earlier than started_at).
            finished_at=max(datetime.now(UTC), started),
        )
    return LintRunDetail(
        run=run,
        findings=[
            LintFinding(
                rule=f.rule,
                severity=f.severity,
                page_path=f.page_path,
                related_path=f.related_path,
                detail=f.detail,
            )
            for f in findings
        ],
    )


def list_runs(
    db: TenantTransactions, principal: Principal, page: PageParams, source_id: UUID | None = None
) -> Page[LintRun]:
    with db.tenant(principal.account_id) as conn:
        items, total = repo.list_runs(
            conn, account_id=principal.account_id, source_id=source_id, limit=page.limit, offset=page.offset
        )
    return Page[LintRun](items=items, total=total, limit=page.limit, offset=page.offset)


def get_run(db: TenantTransactions, principal: Principal, run_id: UUID) -> LintRunDetail:
    a = principal.account_id
    with db.tenant(a) as conn:
        run = repo.get_run(conn, account_id=a, run_id=run_id)
        if run is None:
            raise NotFound("lint run")
        return LintRunDetail(run=run, findings=repo.run_findings(conn, account_id=a, run_id=run_id))
