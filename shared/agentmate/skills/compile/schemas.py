"""Wire models of compiling skill versions."""

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agentmate.jobs.schemas import JobView

NOT_ACTIVATED_REASON = (
    "Why activate: true did not activate the version: its compile produced a blocker (compile.problems says "
    "which; a SKILL.md needs frontmatter with name and description). null otherwise"
)
NOT_INDEXED_REASON = (
    "Why index: true did not index the card into skill search: search indexes active versions only, and this "
    "one is not active (its compile failed, or activate was not requested). null otherwise"
)


class SkillCompileOutcome(BaseModel):
    skill_version_id: UUID
    skill_name: str
    status: Literal["compiled", "failed"]
    artifact_hash: str | None = None
    problems: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(
        default_factory=list,
        description="Findings that do not block the compile, e.g. an unknown frontmatter key with the key it "
        "likely meant (frontmatter: unknown key 'trigers' … did you mean triggers?)",
    )


class SkillCompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    skill_version_id: UUID | None = Field(
        default=None, description="One version; omit to backfill every active version"
    )


class SkillCompileReport(BaseModel):
    """Inline results; or, when the work is too large for a request (202), no items and the ``job`` that does it
    (read it at GET /api/knowledge/jobs/{job.id}; its result carries the counts)."""

    items: list[SkillCompileOutcome]
    compiled: int
    failed: int
    total: int
    job: JobView | None = None
