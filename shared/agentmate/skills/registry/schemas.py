"""Wire models of the skills registry: sources, snapshots, compile, catalog (L0), instructions (L1), resources (L2),
index, search and quality runs."""

from datetime import datetime
from typing import Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agentmate.core.inputs import Bool, Number
from agentmate.jobs.schemas import JobView
from agentmate.packages.schemas import FileInput, Revision, Source
from agentmate.retrieval.schemas import MIN_SIMILARITY, HitLegs
from agentmate.skills.schemas import Sha256Hex, SkillVersionSummary

MAX_SNAPSHOT_FILES = 1000
MAX_SEARCH_TOP_K = 50


class SkillSnapshotPush(BaseModel):
    """A client-pushed package snapshot of a ``local`` source. ``sha256`` per file and ``package_hash`` are
    derived on the server when omitted; supplied values must match."""

    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "hash": "the package identity hash is package_hash",
        "name": "the skill name comes from SKILL.md's frontmatter name (else the package folder)",
    }
    files: list[FileInput] = Field(
        min_length=1,
        max_length=MAX_SNAPSHOT_FILES,
        description="Every file of the package; SKILL.md at the package root",
    )
    package_hash: Sha256Hex | None = Field(default=None, description="Omit to let the server derive it")
    version: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="Version label (default: metadata.version of SKILL.md, else "
        "'pkg-' + the first 12 characters of the package hash)",
    )
    change_summary: str = Field(default="", max_length=5000)
    activate: bool = Field(default=False, description="Make the ingested version the skill's active one")
    index: bool = Field(default=False, description="Also index the active card into skill search")


class SkillSyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="Branch, tag or commit (default: the source's default_ref, else HEAD)",
    )
    activate: bool = False
    index: bool = False


class SkillCompileOutcome(BaseModel):
    skill_version_id: UUID
    skill_name: str
    status: Literal["compiled", "failed"]
    artifact_hash: str | None = None
    problems: list[str] = Field(default_factory=list)


class SkillIndexOutcome(BaseModel):
    skill_version_id: UUID
    status: Literal["indexed", "failed"]
    error: str | None = None


class SkillIngestResult(BaseModel):
    source: Source
    revision: Revision
    version: SkillVersionSummary
    created: bool = Field(description="false when the package hash replayed an existing revision")
    compile: SkillCompileOutcome | None = Field(
        description="The artifact refresh after the package commit; a failure never undoes the ingest"
    )
    index: SkillIndexOutcome | None = None


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


class SkillCard(BaseModel):
    """The L0 card: enough to choose a skill, never its instructions or resource bodies."""

    model_config = ConfigDict(extra="allow")
    skill_version_id: UUID
    skill_name: str
    version: str
    name: str | None
    description: str
    compatibility: str | None = None
    license: str | None = None
    allowed_tools: list[str] = Field(default_factory=list)
    triggers: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    constraints: list[str] = Field(default_factory=list)
    dependencies: list[str] = Field(default_factory=list)
    resource_count: int = 0
    text_resource_count: int = 0
    knowledge: dict[str, Any] | None = None
    package_hash: str | None = None
    compiled: bool = Field(description="false: a basic card (no current artifact; POST /api/skills/compile)")


class SkillCatalogItem(BaseModel):
    skill_version_id: UUID
    skill_name: str
    version: str
    source_id: UUID | None
    compiled: bool
    card: SkillCard


class SkillInstructions(BaseModel):
    """L1: the SKILL.md body after its frontmatter, plus the frontmatter's public fields."""

    skill_version_id: UUID
    skill_name: str
    version: str
    compiled: bool
    name: str | None
    description: str
    compatibility: str | None
    license: str | None
    metadata: dict[str, str]
    allowed_tools: list[str]
    knowledge_contract: dict[str, Any] | None
    knowledge_contract_identity: str | None
    instructions: str


class SkillResource(BaseModel):
    """One L2 manifest entry (no content)."""

    file_id: UUID
    path: str
    kind: str
    mime_type: str
    size_bytes: int
    sha256: str
    indexable: bool
    text_available: bool


class SkillResourceContent(SkillResource):
    content: str


class SkillPackageFile(BaseModel):
    """A package file record of a version's revision (compatibility listing; no content)."""

    id: UUID
    revision_id: UUID
    path: str
    kind: str
    sha256: str
    size_bytes: int
    mime_type: str
    is_text: bool
    indexable: bool


class SkillIndexRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    skill_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Only this skill's active card (default: every active card)",
    )


class SkillIndexReport(BaseModel):
    """Inline results; or, when the work is too large for a request (202), no items and the ``job`` that does it
    (read it at GET /api/knowledge/jobs/{job.id}; its result carries the counts)."""

    items: list[SkillIndexOutcome]
    indexed: int
    failed: int
    total: int
    job: JobView | None = None


class SkillSearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "q": "the search text is query",
        "limit": "the number of hits is top_k",
        "content": "set include_content=true to load L1 instructions",
    }
    query: str = Field(min_length=1, max_length=1000)
    top_k: int = Field(default=5, ge=1, le=MAX_SEARCH_TOP_K)
    include_content: Bool = Field(default=False, description="Load each hit's L1 instructions from Postgres")
    min_similarity: Number | None = Field(default=None, ge=-1, le=1, description=MIN_SIMILARITY)


class SkillSearchHit(HitLegs):
    skill_version_id: UUID
    skill_name: str
    version: str
    score: float
    card: SkillCard
    instructions: str | None = Field(default=None, description="Only with include_content=true")


class SkillDegraded(BaseModel):
    leg: str
    reason: str


class SkillSearchResponse(BaseModel):
    items: list[SkillSearchHit]
    total: int
    degraded: list[SkillDegraded]
    filtered_by_min_similarity: int | None = Field(
        default=None,
        description="Hits dropped by min_similarity (absent when it was not sent)",
        exclude_if=lambda v: v is None,
    )


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
