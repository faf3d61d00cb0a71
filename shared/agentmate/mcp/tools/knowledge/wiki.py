"""Wiki compiler tools on ``/mcp/knowledge`` over ``agentmate.knowledge.wiki``: the same use cases and scopes as
the REST routes. (knowledge_queue_stats reads the queue's statistics; the wiki search/index/status tools join with
wiki retrieval.)
REST twin: ``agentmate.knowledge.wiki.router``."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field

from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.jobs import QueueStats, queue_stats
from agentmate.knowledge.wiki import retrieval, service
from agentmate.knowledge.wiki.schemas import (
    ActivateResult,
    BuildDiff,
    BuildEvent,
    CompileRequest,
    CompileResult,
    PageMeta,
    WikiBuild,
    WikiIndexReport,
    WikiIndexRequest,
    WikiIndexStatus,
    WikiPage,
    WikiSearchRequest,
    WikiSearchResult,
)
from agentmate.mcp.context import db, principal
from agentmate.mcp.context import retrieval as rt
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools

BuildId = Annotated[
    UUID, Field(description="A build id (knowledge_compile's build.id, or knowledge_builds_list)")
]


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/compile",
    title="Queue a wiki compile",
    idempotent=False,
    hints=CompileRequest,
)
def knowledge_compile(
    source_id: Annotated[UUID, Field(description="The knowledge source whose active revision is compiled")],
    mode: Annotated[
        Literal["full", "incremental"],
        Field(description="full (default) or incremental: recompile only the pages a change touches"),
    ] = "full",
    force: Annotated[
        bool, Field(description="Queue even when a build with the same input identity exists")
    ] = False,
    activate: Annotated[bool, Field(description="Serve the build when it succeeds (default true)")] = True,
) -> CompileResult:
    """Queue a wiki compilation of a knowledge source's active revision. Returns at once: queued=true with a
    queued build (poll knowledge_build_get until status is succeeded or failed), or queued=false with an existing
    build of the same input identity. An incremental compile without a parent build, or over a parent from another
    model/prompt/compiler/profile, is refused naming the reason. Read warnings: check is the only gate; review is
    advisory and queued after activation (knowledge_build_review_get). Requires knowledge:rw."""
    req = CompileRequest(source_id=source_id, mode=mode, force=force, activate=activate)
    return service.compile_source(db(), principal(), req).result


@tools.tool("knowledge:r", rest="GET /api/knowledge/builds", title="List wiki builds")
def knowledge_builds_list(
    source_id: Annotated[UUID | None, Field(description="Only this source's builds")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[WikiBuild]:
    """Wiki build history, newest first, with is_active (the build the source's wiki serves). Requires
    knowledge:r."""
    return service.list_builds(db(), principal(), source_id, PageParams(limit=limit, offset=offset))


@tools.tool("knowledge:r", rest="GET /api/knowledge/builds/{build_id}", title="Read a wiki build")
def knowledge_build_get(build_id: BuildId) -> WikiBuild:
    """One build: status, provenance (revision and package hash, profile version, compiler/prompt version, model,
    reviewer independence), check verdict and failures, attempts and token spend. Requires knowledge:r."""
    return service.get_build(db(), principal(), build_id)


@tools.tool("knowledge:r", rest="GET /api/knowledge/builds/{build_id}/pages", title="List a build's pages")
def knowledge_build_pages(
    build_id: BuildId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
) -> Page[PageMeta]:
    """Page metadata of a build (path, kind, title, content hash, citation and link counts, derived_from_build_id)
    without bodies. Requires knowledge:r."""
    return service.list_pages(db(), principal(), build_id, PageParams(limit=limit, offset=offset))


@tools.tool(
    "knowledge:r", rest="GET /api/knowledge/builds/{build_id}/pages/{path:path}", title="Read a wiki page"
)
def knowledge_page_get(
    build_id: BuildId,
    path: Annotated[str, Field(min_length=1, max_length=512, description="Page path, e.g. wiki/index.md")],
) -> WikiPage:
    """One wiki page with its body, citations (document path, heading path, claim, excerpt: follow them to the
    raw documents for evidence) and inbound and outbound typed links. Requires knowledge:r."""
    return service.get_page(db(), principal(), build_id, path)


@tools.tool("knowledge:r", rest="GET /api/knowledge/builds/{build_id}/diff", title="Diff two wiki builds")
def knowledge_build_diff(
    build_id: BuildId,
    from_build_id: Annotated[
        UUID | None,
        Field(
            description="Compare against this build (REST: from); default the "
            "previous succeeded build of the source"
        ),
    ] = None,
) -> BuildDiff:
    """Pages added, removed and changed between two builds of one source, by path and content hash. Requires
    knowledge:r."""
    return service.diff(db(), principal(), build_id, from_build_id)


@tools.tool("knowledge:r", rest="GET /api/knowledge/builds/{build_id}/events", title="Read a build's log")
def knowledge_build_events(
    build_id: BuildId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
) -> Page[BuildEvent]:
    """The ordered build log (queued, attempts, pages written/carried over/rejected, check verdict). Requires
    knowledge:r."""
    return service.events(db(), principal(), build_id, PageParams(limit=limit, offset=offset))


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/builds/{build_id}/activate",
    title="Activate a wiki build",
    idempotent=True,
)
def knowledge_build_activate(build_id: BuildId) -> ActivateResult:
    """Point the source's wiki at this build (also the rollback); previous_build_id undoes it. Refused for a
    build that did not succeed or did not pass check. The wiki index follows (inline for a small build: index;
    else the wiki_index job in index_job). Requires knowledge:rw."""
    return service.activate(db(), principal(), build_id, rt())


@tools.tool("knowledge:r", rest="GET /api/knowledge/queue", title="Compile queue statistics")
def knowledge_queue_stats() -> QueueStats:
    """The account's job queue (wiki compiles and other background work): jobs waiting, running, backing off after
    a retryable failure, stalled (a worker died), and the age of the oldest waiting one, in total and per kind:
    queue wait and a stuck worker look different here. Requires knowledge:r."""
    return queue_stats(db(), principal().account_id)


@tools.tool("knowledge:r", rest="POST /api/knowledge/wiki/search", title="Search the compiled wiki")
def knowledge_wiki_search(
    query: Annotated[str, Field(min_length=1, max_length=500, description="What to look for")],
    top_k: Annotated[int, Field(ge=1, le=20, description="Pages to return, 1..20")] = 5,
    domain: Annotated[str | None, Field(min_length=1, max_length=200, description="Only this domain")] = None,
    source_ids: Annotated[list[UUID] | None, Field(max_length=16, description="Only these sources")] = None,
    min_similarity: Annotated[
        float | None, Field(ge=-1, le=1, description="Drop vector-only hits below this raw similarity")
    ] = None,
    include_content: Annotated[bool, Field(description="Return each page's body")] = False,
) -> WikiSearchResult:
    """First level of a two-level query: find synthesised wiki pages (each source's active build), then follow a
    hit's citations to the raw documents (knowledge_document_get) for evidence. stale lists sources whose index
    lags their active build (run knowledge_wiki_index). Requires knowledge:r."""
    body = WikiSearchRequest(
        query=query,
        top_k=top_k,
        domain=domain,
        source_ids=source_ids or [],
        include_content=include_content,
        min_similarity=min_similarity,
    )
    return retrieval.search(db(), rt(), principal(), body)


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/wiki/index",
    title="Index the active wiki builds",
    idempotent=True,
)
def knowledge_wiki_index(
    source_id: Annotated[
        UUID | None, Field(description="One source; omitted: every source with an active build")
    ] = None,
) -> WikiIndexReport:
    """Index the active wiki build of one source or of all into wiki search (removes earlier builds' rows).
    Requires knowledge:rw."""
    return retrieval.index(db(), rt(), principal(), WikiIndexRequest(source_id=source_id))


@tools.tool("knowledge:r", rest="GET /api/knowledge/wiki/index", title="Wiki index status")
def knowledge_wiki_status(
    source_id: Annotated[UUID | None, Field(description="Only this source")] = None,
) -> WikiIndexStatus:
    """Per source: the active build, the build the wiki index reflects, and whether the index is stale.
    Requires knowledge:r."""
    return retrieval.status(db(), principal(), source_id)
