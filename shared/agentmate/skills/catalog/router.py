"""The skills catalog (spec/001 "Skills"): L0 cards, a version's L1 instructions, its L2 resources and files.
MCP face: ``agentmate.mcp.tools.skills.registry``."""

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import Query, Response

from agentmate.api.deps import DbDep, PageDep, SkillsRead, SkillsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.core.text import blank_to_none
from agentmate.skills.catalog.schemas import (
    SkillCatalogItem,
    SkillInstructions,
    SkillPackageFile,
    SkillResource,
    SkillResourceContent,
)
from agentmate.skills.http import no_store

if TYPE_CHECKING:
    from agentmate.skills.catalog import service as catalog_service
else:  # the use cases load on the first request that needs them
    catalog_service = lazy_module("agentmate.skills.catalog.service")

router = Router(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)
Reader = SkillsRead
Writer = SkillsWrite


@router.get("/catalog", response_model=Page[SkillCatalogItem])
def catalog(
    principal: Reader,
    db: DbDep,
    page: PageDep,
    query: Annotated[
        str | None, Query(max_length=200, description="Substring of name or description")
    ] = None,
) -> Page[SkillCatalogItem]:
    """Active skills' L0 cards ordered by skill name (stable pages); a basic card where no artifact exists."""
    return catalog_service.catalog(db, principal, page, blank_to_none(query))


@router.get("/versions/{version_id}/instructions", response_model=SkillInstructions)
def version_instructions(
    version_id: UUID, principal: Reader, db: DbDep, response: Response
) -> SkillInstructions:
    """L1: the SKILL.md instructions of a version (Cache-Control: private, no-store)."""
    no_store(response)
    return catalog_service.instructions(db, principal, version_id)


@router.get("/versions/{version_id}/resources", response_model=Page[SkillResource])
def version_resources(version_id: UUID, principal: Reader, db: DbDep, page: PageDep) -> Page[SkillResource]:
    """L2: the version's resource manifest (kind, MIME type, size, indexability, text availability), no content."""
    return catalog_service.resources(db, principal, version_id, page)


@router.get("/versions/{version_id}/resources/{file_id}", response_model=SkillResourceContent)
def version_resource(
    version_id: UUID, file_id: UUID, principal: Reader, db: DbDep, response: Response
) -> SkillResourceContent:
    """One selected text resource with its content (Cache-Control: private, no-store)."""
    no_store(response)
    return catalog_service.resource(db, principal, version_id, file_id)


@router.get("/versions/{version_id}/files", response_model=Page[SkillPackageFile])
def version_files(version_id: UUID, principal: Reader, db: DbDep, page: PageDep) -> Page[SkillPackageFile]:
    """Compatibility listing of the version's package file records (no content)."""
    return catalog_service.files(db, principal, version_id, page)
