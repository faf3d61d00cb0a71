"""Skill execution records: published SKILL.md versions and execution logs (the anchors of memory attribution)."""

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from agentmate.core.inputs import Bool, Int, Number
from agentmate.core.schema_rules import NON_BLANK_TEXT
from agentmate.skills.compile.schemas import NOT_ACTIVATED_REASON, NOT_INDEXED_REASON, SkillCompileOutcome
from agentmate.skills.search.schemas import SkillIndexOutcome

Outcome = Literal["success", "failure", "partial", "user_corrected"]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]
# Outcomes that carry a learning signal (GET /api/skills/signals).
SIGNAL_OUTCOMES: tuple[str, ...] = ("failure", "user_corrected", "partial")

MAX_SKILL_NAME = 200
MAX_VERSION_LABEL = 100
MAX_CONTENT_CHARS = 1_000_000
MAX_TOOL_CALLS = 500


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


def _lower_strip(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


SkillName = Annotated[
    str,
    Field(min_length=1, max_length=MAX_SKILL_NAME, json_schema_extra={"pattern": NON_BLANK_TEXT}),
    BeforeValidator(_strip),
]
Sha256Hex = Annotated[
    str,
    Field(pattern=r"^\s*[0-9a-fA-F]{64}\s*$", description="sha256 hex (64 characters; stored lowercase)"),
    BeforeValidator(_lower_strip),
]


class SkillLogCreate(BaseModel):
    """One execution of a skill. ``skill_version_id`` (optional) binds the log to a published version of the
    same skill in this account; the version label is then taken from that version."""

    model_config = ConfigDict(extra="forbid")
    skill_name: SkillName
    skill_version: Annotated[str, BeforeValidator(_strip)] = Field(
        default="",
        max_length=MAX_VERSION_LABEL,
        description="Legacy version label; replaced by the label of skill_version_id when that is given",
    )
    skill_version_id: UUID | None = Field(
        default=None, description="A version of the same skill in this account"
    )
    agent_id: Annotated[str, BeforeValidator(_strip)] = Field(default="", max_length=200)
    session_id: Annotated[str, BeforeValidator(_strip)] = Field(default="", max_length=200)
    trigger_text: str = Field(default="", max_length=10_000)
    was_triggered: Bool = True
    outcome: Outcome
    failure_reason: str = Field(default="", max_length=10_000)
    user_correction: str = Field(default="", max_length=10_000)
    tool_calls: list[Any] = Field(
        default_factory=list, max_length=MAX_TOOL_CALLS, description="JSON array of the tool calls made"
    )
    duration_ms: Int | None = Field(default=None, ge=0, le=86_400_000)


class SkillLog(BaseModel):
    id: UUID
    skill_name: str
    skill_version: str
    skill_version_id: UUID | None
    agent_id: str
    session_id: str
    trigger_text: str
    was_triggered: bool
    outcome: Outcome
    failure_reason: str
    user_correction: str
    tool_calls: list[Any]
    duration_ms: int | None
    created_at: datetime


class SkillVersionCreate(BaseModel):
    """Direct publish of a SKILL.md body. ``content_hash`` is sha256(content): computed when omitted, and a
    supplied value that does not match is refused."""

    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "body": "the SKILL.md text is content",
        "skill_md": "the SKILL.md text is content",
    }
    skill_name: SkillName
    version: Annotated[str, BeforeValidator(_strip)] = Field(min_length=1, max_length=MAX_VERSION_LABEL)
    content: str = Field(
        min_length=1, max_length=MAX_CONTENT_CHARS, description="The SKILL.md body, verbatim"
    )
    content_hash: Sha256Hex | None = None
    change_summary: str = Field(default="", max_length=5000)
    agent_id: Annotated[str, BeforeValidator(_strip)] = Field(default="", max_length=200)
    eval_pass_rate: Number | None = Field(default=None, ge=0, le=1)
    activate: Bool = Field(
        default=False,
        description="Make this the skill's active version once it compiles (a compile blocker, e.g. no "
        "frontmatter name and description, leaves it inactive: see activated)",
    )
    index: Bool = Field(
        default=False,
        description="Also index the card into skill search after the commit (only an active version is "
        "indexed: combine with activate; see index and not_indexed_reason)",
    )


class SkillVersionSummary(BaseModel):
    id: UUID
    skill_name: str
    version: str
    content_hash: str
    package_hash: str | None
    source_id: UUID | None
    source_revision_id: UUID | None
    agent_id: str
    change_summary: str
    eval_pass_rate: float | None
    is_active: bool
    activated_at: datetime | None
    published_at: datetime


class SkillVersion(SkillVersionSummary):
    content: str


class VersionPublished(SkillVersion):
    created: bool = Field(description="false when this exact body was already published under this label")
    compile: SkillCompileOutcome | None = Field(
        default=None,
        description="The artifact refresh after the commit (null if it could not run); a failure never undoes "
        "the publish",
    )
    activated: bool = Field(
        default=False, description="true when activate was requested and the version is now the active one"
    )
    not_activated_reason: str | None = Field(default=None, description=NOT_ACTIVATED_REASON)
    index: SkillIndexOutcome | None = Field(
        default=None, description="The card's indexing into skill search (index: true on an active version)"
    )
    not_indexed_reason: str | None = Field(default=None, description=NOT_INDEXED_REASON)


class OutcomeCounts(BaseModel):
    success: int = 0
    failure: int = 0
    partial: int = 0
    user_corrected: int = 0


class VersionStats(BaseModel):
    skill_version_id: UUID | None
    skill_version: str
    total_runs: int
    success_rate: float


class SkillStats(BaseModel):
    skill_name: str
    total_runs: int
    triggered_runs: int
    not_triggered_runs: int
    trigger_rate: float = Field(description="triggered_runs / total_runs (0 when there are no runs)")
    outcomes: OutcomeCounts
    success_rate: float
    failure_rate: float
    partial_rate: float
    correction_rate: float
    avg_duration_ms: float | None
    last_run_at: datetime | None
    by_version: list[VersionStats]


class SkillSignals(BaseModel):
    skill_name: str
    outcomes: list[str] = Field(description="Outcomes counted as signals")
    items: list[SkillLog]
    total: int
    limit: int
