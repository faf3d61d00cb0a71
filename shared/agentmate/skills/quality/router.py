"""Skill quality runs (spec/001 "Skills"): run the offline checks on a version, list and read the reports.
MCP face: ``agentmate.mcp.tools.skills.registry``."""

from typing import TYPE_CHECKING
from uuid import UUID

from agentmate.api.deps import DbDep, PageDep, SkillsRead, SkillsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.skills.quality.schemas import SkillQualityRun, SkillQualityRunRequest, SkillQualityRunSummary

if TYPE_CHECKING:
    from agentmate.skills.quality import service as quality_service
else:  # the use cases load on the first request that needs them
    quality_service = lazy_module("agentmate.skills.quality.service")

router = Router(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)
Reader = SkillsRead
Writer = SkillsWrite


@router.post("/versions/{version_id}/quality-runs", status_code=201, response_model=SkillQualityRun)
def run_quality(
    version_id: UUID, principal: Writer, db: DbDep, body: SkillQualityRunRequest | None = None
) -> SkillQualityRun:
    """Run the offline deterministic quality checks (optional same-skill baseline_version_id); stores the report."""
    return quality_service.run_quality(db, principal, version_id, body or SkillQualityRunRequest())


@router.get("/versions/{version_id}/quality-runs", response_model=Page[SkillQualityRunSummary])
def list_quality_runs(
    version_id: UUID, principal: Reader, db: DbDep, page: PageDep
) -> Page[SkillQualityRunSummary]:
    """Quality run summaries of a version (no reports), newest first."""
    return quality_service.list_quality_runs(db, principal, version_id, page)


@router.get("/quality-runs/{run_id}", response_model=SkillQualityRun)
def get_quality_run(run_id: UUID, principal: Reader, db: DbDep) -> SkillQualityRun:
    """One quality run with its full report."""
    return quality_service.get_quality_run(db, principal, run_id)
