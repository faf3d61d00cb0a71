"""Wiki compiler routes (spec/001 "Wiki compiler (K3)"): compile (enqueue), builds, pages, diff, events, activate.
Mounted in the knowledge function beside the source routes.
MCP twin: ``agentmate.mcp.tools.knowledge.wiki``."""

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import Path, Query
from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, KnowledgeRead, KnowledgeWrite, ModelSettingsDep, PageDep, RetrievalDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES, Problem
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
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

if TYPE_CHECKING:
    from agentmate.knowledge.wiki import retrieval, service
else:  # the use cases load on the first request that needs them (cold start)
    retrieval = lazy_module("agentmate.knowledge.wiki.retrieval")
    service = lazy_module("agentmate.knowledge.wiki.service")

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)


@router.post(
    "/compile",
    status_code=202,
    response_model=CompileResult,
    responses={
        200: {"model": CompileResult},
        501: {"model": Problem, "description": "No compiler model is configured (an operator gap)"},
    },
)
def compile_source(
    body: CompileRequest, principal: KnowledgeWrite, db: DbDep, settings: ModelSettingsDep
) -> JSONResponse:
    """Queue a compilation of the source's active raw revision: 202 with the queued build (nothing is compiled
    yet; follow it with GET /api/knowledge/builds/{build_id}). 200 with the existing build when one already has the
    same input identity (nothing queued; force=true compiles anyway), or for mode=incremental when the sources have
    not changed since the parent. 409 names the reason an incremental compile is refused (no parent build, or a
    parent from a different model, prompt, compiler or profile). 501 when no compiler model is configured.
    warnings always carry the standing review warning (check is the only gate; review is advisory and runs after
    activation), and say when reviewer independence is not cross_provider."""
    out = service.compile_source(db, principal, body, settings=settings)
    return JSONResponse(out.result.model_dump(mode="json"), status_code=202 if out.queued else 200)


@router.get("/builds", response_model=Page[WikiBuild])
def list_builds(
    principal: KnowledgeRead,
    db: DbDep,
    page: PageDep,
    source_id: Annotated[UUID | None, Query(description="Only this source's builds")] = None,
) -> Page[WikiBuild]:
    """Build history, newest first, with is_active derived from the source's pointer."""
    return service.list_builds(db, principal, source_id, page)


@router.get("/builds/{build_id}", response_model=WikiBuild)
def get_build(build_id: UUID, principal: KnowledgeRead, db: DbDep) -> WikiBuild:
    """One build: full provenance (raw revision and package hash, profile version, compiler and prompt version,
    model, reviewer independence), the check verdict and failures, attempts and token spend (cost_priced=false
    when no prices are configured)."""
    return service.get_build(db, principal, build_id)


@router.get("/builds/{build_id}/pages", response_model=Page[PageMeta])
def list_pages(build_id: UUID, principal: KnowledgeRead, db: DbDep, page: PageDep) -> Page[PageMeta]:
    """Page metadata of a build (no bodies), in path order."""
    return service.list_pages(db, principal, build_id, page)


@router.get("/builds/{build_id}/pages/{path:path}", response_model=WikiPage)
def get_page(
    build_id: UUID,
    principal: KnowledgeRead,
    db: DbDep,
    path: Annotated[str, Path(min_length=1, max_length=512, description="The page path, e.g. wiki/index.md")],
) -> WikiPage:
    """One page with its body, citations (document path, heading path, claim, excerpt) and both inbound and
    outbound typed links."""
    return service.get_page(db, principal, build_id, path)


@router.get("/builds/{build_id}/diff", response_model=BuildDiff)
def diff(
    build_id: UUID,
    principal: KnowledgeRead,
    db: DbDep,
    from_: Annotated[
        UUID | None,
        Query(
            alias="from",
            description="The build to compare against; default "
            "the previous succeeded build of the same "
            "source",
        ),
    ] = None,
) -> BuildDiff:
    """Compare two builds of one source by page path and content hash: added, removed, changed, unchanged."""
    return service.diff(db, principal, build_id, from_)


@router.get("/builds/{build_id}/events", response_model=Page[BuildEvent])
def events(build_id: UUID, principal: KnowledgeRead, db: DbDep, page: PageDep) -> Page[BuildEvent]:
    """The ordered build log (rendered as the page wiki/log.md of a succeeded build)."""
    return service.events(db, principal, build_id, page)


@router.post("/builds/{build_id}/activate", response_model=ActivateResult)
def activate(build_id: UUID, principal: KnowledgeWrite, db: DbDep, rt: RetrievalDep) -> ActivateResult:
    """Point the source's wiki at this build; also the rollback. previous_build_id undoes it. 409 for a build
    that did not succeed or did not pass check. The wiki index follows: a build of at most 60 pages is
    re-indexed inline (index), a larger one by the wiki_index job in index_job."""
    return service.activate(db, principal, build_id, rt)


@router.post("/wiki/search", response_model=WikiSearchResult)
def wiki_search(
    body: WikiSearchRequest, principal: KnowledgeRead, db: DbDep, rt: RetrievalDep
) -> WikiSearchResult:
    """Hybrid search over compiled wiki pages (the knowledge_wiki namespace), on each source's active build only:
    one hit per page with matched_chunks, its citations and typed links from the database, derived_from_build_id
    for carried-over pages; stale lists sources whose index lags their active build. The same query also runs
    over the raw documents (raw_query_id, raw_hits) and both are logged (query_id)."""
    return retrieval.search(db, rt, principal, body)


@router.get("/wiki/index", response_model=WikiIndexStatus)
def wiki_index_status(
    principal: KnowledgeRead,
    db: DbDep,
    source_id: Annotated[UUID | None, Query(description="Only this source")] = None,
) -> WikiIndexStatus:
    """Per source, which build is active and which one the wiki index reflects, plus the stale count."""
    return retrieval.status(db, principal, source_id)


@router.post("/wiki/index", response_model=WikiIndexReport)
def wiki_index(
    principal: KnowledgeWrite, db: DbDep, rt: RetrievalDep, body: WikiIndexRequest | None = None
) -> WikiIndexReport:
    """Index the active build of one source (source_id) or of every source with an active build into the
    knowledge_wiki namespace (wiki/index.md included, wiki/log.md never); removes rows of earlier builds."""
    return retrieval.index(db, rt, principal, body or WikiIndexRequest())
