"""Report tools (``/mcp/reports``): thin calls into ``agentmate.reports.service``, scopes as the REST twins."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.records import TagCount
from agentmate.core.text import Content as StoredContent
from agentmate.mcp.context import db, principal
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import (
    ClearSource,
    Deleted,
    IdempotencyKey,
    Limit,
    Offset,
    Tag,
    TagList,
    apply_clear_source,
    given,
    with_tag,
)
from agentmate.reports import schemas as s
from agentmate.reports import service
from agentmate.reports.schemas import (
    Report,
    ReportCreate,
    ReportFormat,
    ReportSource,
    ReportSummary,
    ReportUpdate,
)

tools = ToolSet(
    "reports",
    instructions=(
        "Reports (longer documents written by agents) of the account that owns the API key. Reading needs "
        "reports:r, writing reports:rw. format is md or html; source labels the agent or skill that wrote the "
        "report. Lists omit content (report_get returns it) and return {items, total, limit, offset}."
    ),
)

ReportId = Annotated[
    UUID, Field(description="The report's id (UUID), as returned by report_create or report_list")
]
Title = Annotated[s.Title, Field(description="1..500 characters, trimmed")]
Content = Annotated[
    StoredContent, Field(description="The report body in `format`, verbatim; at most 1 MiB (UTF-8)")
]
Format = Annotated[ReportFormat, Field(description="How content is written: md (default) or html")]
Tags = Annotated[s.ReportTags, Field(description="Tags; trimmed and lowercased on write, duplicates dropped")]
Source = Annotated[s.Source, Field(description="Label of the agent or skill writing it (≤255 characters)")]


@tools.tool("reports:rw", rest="POST /api/reports", title="Create a report")
def report_create(
    title: Title,
    content: Content = "",
    format: Format = "md",
    tags: Tags | None = None,
    source: Source = None,
    idempotency_key: IdempotencyKey = None,
) -> Report:
    """Create a report. format: md (default) | html; source: label of the agent or skill writing it; tags
    are trimmed and lowercased; content at most 1 MiB. Pass idempotency_key so a retry returns the original
    report. Requires reports:rw."""
    body = ReportCreate(title=title, content=content, format=format, tags=tags or [], source=source)
    return service.create(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("reports:r", rest="GET /api/reports/{report_id}", title="Get a report")
def report_get(id: ReportId) -> Report:
    """Get one report with its content. Requires reports:r."""
    return service.get(db(), principal(), id)


@tools.tool("reports:r", rest="GET /api/reports", title="List reports")
def report_list(
    tags: TagList = None,
    tag: Tag = None,
    source: Annotated[str | None, Field(description="Exact source label (see report_list_sources)")] = None,
    q: Annotated[str | None, Field(description="Case-insensitive substring of title or content")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[ReportSummary]:
    """List reports newest first WITHOUT their content (use report_get for it), optionally filtered by tags
    (a list, all must match; tag for one), exact source label and text q. Returns {items, total, limit, offset}. Requires
    reports:r."""
    return service.search(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        tags=with_tag(tag, tags),
        source=source,
        q=q,
    )


@tools.tool("reports:r", rest="GET /api/reports/sources", title="List report sources")
def report_list_sources(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[ReportSource]:
    """The source labels that wrote this account's reports, with report counts, most used first (reports
    without a source are omitted). Returns {items: [{source, count}], total, limit, offset}. Requires
    reports:r."""
    return service.list_sources(db(), principal(), PageParams(limit=limit, offset=offset))


@tools.tool(
    "reports:rw",
    rest="PATCH /api/reports/{report_id}",
    title="Update a report",
    idempotent=True,
    patch=ReportUpdate,
)
def report_update(
    id: ReportId,
    title: Title | None = None,
    content: Annotated[StoredContent | None, Field(description="Replaces the whole content")] = None,
    format: Annotated[ReportFormat | None, Field(description="md or html")] = None,
    tags: Annotated[s.ReportTags | None, Field(description="Replaces all tags (trimmed, lowercased)")] = None,
    source: Source = None,
    clear_source: ClearSource = False,
) -> Report:
    """Change the fields given (title, content, format md|html, tags, source); the others stay as they
    are. clear_source=true removes the source label. Returns the report. Requires reports:rw."""
    changes = apply_clear_source(
        given(title=title, content=content, format=format, tags=tags, source=source), clear_source
    )
    return service.update(db(), principal(), id, ReportUpdate.model_validate(changes))


@tools.tool(
    "reports:rw",
    rest="DELETE /api/reports/{report_id}",
    title="Delete a report",
    destructive=True,
    idempotent=True,
)
def report_delete(id: ReportId) -> Deleted:
    """Delete a report permanently. A second delete of the same id reports "report not found". Requires
    reports:rw."""
    service.delete(db(), principal(), id)
    return Deleted(id=id)


@tools.tool("reports:r", rest="GET /api/tags?module=reports", title="List report tags")
def reports_tags(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[TagCount]:
    """Which tags the account's reports carry, with how many reports carry each, most used first, then by tag: ask
    before filtering report_list by a tag. Returns {items: [{tag, count}], total, limit, offset}; page with limit
    (1..100) and offset. Requires reports:r."""
    return service.tags(db(), principal(), PageParams(limit=limit, offset=offset))
