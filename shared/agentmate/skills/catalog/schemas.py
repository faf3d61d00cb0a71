"""Wire models of the catalog (L0 cards), instructions (L1) and resources (L2)."""

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field


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
