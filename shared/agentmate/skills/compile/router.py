"""Compiling skill versions (spec/001 "Skills"): one version, or a backfill of every active version.
MCP face: ``agentmate.mcp.tools.skills.registry``."""

from typing import TYPE_CHECKING

from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, SkillsRead, SkillsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.lazy import lazy_module
from agentmate.skills.compile.schemas import SkillCompileReport, SkillCompileRequest
from agentmate.skills.http import QUEUED, queued_or_done

if TYPE_CHECKING:
    from agentmate.skills.compile import backfill as backfill
else:  # the use cases load on the first request that needs them
    backfill = lazy_module("agentmate.skills.compile.backfill")

router = Router(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)
Reader = SkillsRead
Writer = SkillsWrite


@router.post(
    "/compile",
    response_model=SkillCompileReport,
    responses={202: {"model": SkillCompileReport, "description": QUEUED}},
)
def compile_versions(principal: Writer, db: DbDep, body: SkillCompileRequest | None = None) -> JSONResponse:
    """Compile one version (skill_version_id), or backfill every active version when it is omitted: inline up to
    200 versions within 20 s, otherwise 202 with the job that compiles them all."""
    return queued_or_done(backfill.compile_versions(db, principal, body or SkillCompileRequest()))
