"""Wire models of quality runs."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field


class SkillQualityRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    baseline_version_id: UUID | None = Field(default=None, description="An earlier version of the same skill")


class SkillQualityRunSummary(BaseModel):
    id: UUID
    skill_version_id: UUID
    baseline_version_id: UUID | None
    skill_name: str
    engine_version: str
    checkset_version: str
    input_package_hash: str | None
    baseline_package_hash: str | None
    telemetry_cutoff: datetime
    status: Literal["completed", "failed"]
    summary: dict[str, Any]
    created_at: datetime


class SkillQualityRun(SkillQualityRunSummary):
    report: dict[str, Any]
