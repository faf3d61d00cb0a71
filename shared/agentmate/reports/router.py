from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Query, Response

from agentmate.api.deps import DbDep, IdempotencyKey, PageDep, ReportsRead, ReportsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.api.routing import CONTENT_BODY_LIMIT, max_body
from agentmate.core.pagination import Page
from agentmate.core.text import tag_filter
from agentmate.reports import service
from agentmate.reports.schemas import Report, ReportCreate, ReportSource, ReportSummary, ReportUpdate

router = Router(prefix="/api/reports", tags=["reports"], responses=PROBLEM_RESPONSES)


@router.post("", status_code=201, response_model=Report, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def create_report(
    body: ReportCreate, principal: ReportsWrite, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Create a report (format md or html). Send an `Idempotency-Key` header to make retries safe."""
    result = service.create(db, principal, body, idempotency_key)
    return created(result)


@router.get("", response_model=Page[ReportSummary])
def list_reports(
    principal: ReportsRead,
    db: DbDep,
    page: PageDep,
    tag: Annotated[str | None, Query(description="Exact tag (normalised)")] = None,
    tags: Annotated[str | None, Query(description="Comma-separated tags; all must match")] = None,
    source: Annotated[str | None, Query(description="Exact source label")] = None,
    q: Annotated[str | None, Query(description="Case-insensitive substring of title or content")] = None,
) -> Page[ReportSummary]:
    """List reports newest first, without their content (GET /api/reports/{id} returns the content)."""
    return service.search(db, principal, page, tags=tag_filter(tag, tags), source=source, q=q)


@router.get("/sources", response_model=Page[ReportSource])
def list_report_sources(principal: ReportsRead, db: DbDep, page: PageDep) -> Page[ReportSource]:
    """Sources that wrote this account's reports, with report counts, most used first (unlabelled reports omitted)."""
    return service.list_sources(db, principal, page)


@router.get("/{report_id}", response_model=Report)
def get_report(report_id: UUID, principal: ReportsRead, db: DbDep) -> Report:
    """Get one report with its content."""
    return service.get(db, principal, report_id)


@router.patch("/{report_id}", response_model=Report, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def update_report(report_id: UUID, body: ReportUpdate, principal: ReportsWrite, db: DbDep) -> Report:
    """Change the fields sent (title, content, format, tags, source); others stay as they are."""
    return service.update(db, principal, report_id, body)


@router.delete("/{report_id}", status_code=204, response_class=Response)
def delete_report(report_id: UUID, principal: ReportsWrite, db: DbDep) -> Response:
    """Delete a report; 404 if it does not exist."""
    service.delete(db, principal, report_id)
    return Response(status_code=204)
