"""Wire models of skill sources and their ingest (snapshots, git sync)."""

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentmate.packages.schemas import FileInput, Revision, Source
from agentmate.skills.compile.schemas import NOT_ACTIVATED_REASON, NOT_INDEXED_REASON, SkillCompileOutcome
from agentmate.skills.schemas import Sha256Hex, SkillVersionSummary
from agentmate.skills.search.schemas import SkillIndexOutcome

MAX_SNAPSHOT_FILES = 1000
ACTIVATE = (
    "Make the ingested version the skill's active one once it compiles; a compile blocker (e.g. SKILL.md "
    "without frontmatter name and description) leaves it inactive (activated: false, not_activated_reason)"
)


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
    activate: bool = Field(default=False, description=ACTIVATE)
    index: bool = Field(default=False, description="Also index the active card into skill search")


class SkillSyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="Branch, tag or commit (default: the source's default_ref, else HEAD)",
    )
    activate: bool = Field(default=False, description=ACTIVATE)
    index: bool = Field(default=False, description="Also index the active card into skill search")


class SkillIngestResult(BaseModel):
    source: Source
    revision: Revision
    version: SkillVersionSummary
    created: bool = Field(description="false when the package hash replayed an existing revision")
    compile: SkillCompileOutcome | None = Field(
        description="The artifact refresh after the package commit; a failure never undoes the ingest"
    )
    activated: bool = Field(
        default=False, description="true when activate was requested and the version is now the active one"
    )
    not_activated_reason: str | None = Field(default=None, description=NOT_ACTIVATED_REASON)
    index: SkillIndexOutcome | None = Field(
        default=None, description="The card's indexing into skill search (index: true on an active version)"
    )
    not_indexed_reason: str | None = Field(default=None, description=NOT_INDEXED_REASON)
