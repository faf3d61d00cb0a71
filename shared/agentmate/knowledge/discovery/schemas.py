"""Wire models of K4 discovery and resolution runs (``discover.py``, ``resolutions.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

DiscoveryStatus = Literal[
    "matched",
    "ambiguous",
    "no_metadata_match",
    "no_authorized_knowledge",
    "pinned_resolved",
    "pinned_missing",
]
DISCOVERY_STATUSES: tuple[str, ...] = DiscoveryStatus.__args__  # type: ignore[attr-defined]
MatchGroup = Literal["capabilities", "languages", "domains"]
RequirementId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"\S",
        description="A requirements[].id of the skill's knowledge contract",
    ),
]
Fingerprint = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-f]{64}$",
        description="discovery_fingerprint of the discovery the run followed (64 hex)",
    ),
]
Ref = Annotated[str, Field(min_length=1, max_length=512)]

# -- discover ------------------------------------------------------------------------------------------------------


class DiscoverRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "skill_name": "send skill_version_id (GET /api/skills/versions/active?skill_name= gives it)",
        "contract": "the contract is read from the compiled skill version, never sent by the client",
        "query": "discover resolves a skill's knowledge contract; free-text search is POST /api/knowledge/search",
    }

    skill_version_id: UUID = Field(
        description="A skill version of this account whose compiled SKILL.md declares a knowledge: contract"
    )
    requirement_id: RequirementId | None = Field(
        default=None, description="Resolve only this requirement (default: every requirement)"
    )


class MatchedTerms(BaseModel):
    """The requirement's terms a candidate's manifest overlaps (the requirement's spelling)."""

    capabilities: list[str]
    languages: list[str]
    domain: str | None


class Candidate(BaseModel):
    rank: int = Field(description="1-based: score descending, then name (case-insensitive), then source_id")
    source_id: UUID
    source_name: str
    name: str = Field(description="The KNOWLEDGE.yaml name")
    description: str | None
    domain: str | None
    revision_id: UUID = Field(description="The source's active revision")
    package_hash: str
    capabilities: list[str]
    languages: list[str]
    citation_policy: Literal["required", "optional"] | None
    score: int = Field(description="Overlapping capabilities + overlapping languages + 1 for the domain")
    matched: MatchedTerms


class MatchEcho(BaseModel):
    capabilities: list[str]
    languages: list[str]
    domains: list[str]


class Budgets(BaseModel):
    """The contract's retrieval budgets, echoed for the execution to honour."""

    max_knowledge_bases: int
    top_k_per_base: int
    freshness: Literal["active", "any"]
    citations: Literal["required", "optional"]


class Fallback(BaseModel):
    on_no_match: Literal["ask_user", "proceed_without_knowledge", "fail"]
    on_ambiguous: Literal["search_multiple", "ask_user", "fail"]


class PinResolution(BaseModel):
    source_id: str | None = Field(description="As pinned")
    source_name: str | None = Field(description="As pinned")
    build_id: str | None = Field(description="As pinned")
    resolved: bool = Field(
        description="The source was found and, when build_id is pinned, that build is a usable "
        "wiki build (succeeded, passed check) of that source in this account"
    )
    resolved_source_id: UUID | None
    resolved_build_id: UUID | None = Field(
        default=None, description="The verified build, when build_id is pinned"
    )
    note: str


class RequirementDiscovery(BaseModel):
    requirement_id: str
    purpose: str
    required: bool
    status: DiscoveryStatus
    note: str = Field(description="Why this status, in words")
    guidance: str | None = Field(
        description="The contract's own fallback for this status: on_ambiguous for "
        "ambiguous, on_no_match for no_metadata_match, "
        "no_authorized_knowledge and pinned_missing; null otherwise"
    )
    undeclared: list[MatchGroup] = Field(
        description="Match groups this requirement uses that no manifest in the "
        "catalog declares at all (no_metadata_match only)"
    )
    match: MatchEcho
    retrieval: Budgets
    fallback: Fallback
    candidates: list[Candidate] = Field(description="Ranked; at most 50 (candidates_total counts them all)")
    candidates_total: int
    pins: list[PinResolution] = Field(description="Pinned mode: one entry per pin")


class DiscoverResponse(BaseModel):
    skill_version_id: UUID
    skill_name: str
    skill_version: str
    mode: Literal["discover", "pinned"]
    contract_identity: str
    discovery_fingerprint: str = Field(
        description="sha256 over the contract identity, the requirement filter "
        "and every catalog card's source_id@package_hash: record it "
        "in the resolution run"
    )
    catalog_size: int = Field(description="Cards (sources with an active revision) discovery ranked")
    requirements: list[RequirementDiscovery]


# -- resolution runs -----------------------------------------------------------------------------------------------

MAX_ECHOES = 256
MAX_SELECTED = 10
MAX_EVIDENCE_BYTES = 256 * 1024
_BODY_HINT = "a resolution run keeps references only: ids, paths and scores, never bodies"


class _Echo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "content": _BODY_HINT,
        "body": _BODY_HINT,
        "snippet": _BODY_HINT,
        "text": _BODY_HINT,
    }


class CandidateEcho(_Echo):
    """One candidate as discovery served it (client-reported)."""

    source_id: UUID
    name: str | None = Field(default=None, max_length=128)
    rank: int | None = Field(default=None, ge=1, le=10_000)
    score: int | None = Field(default=None, ge=0, le=10_000)


class SelectedBase(_Echo):
    """A base the execution used: verified to be a knowledge source of this account (and the revision one of
    its revisions)."""

    source_id: UUID
    revision_id: UUID | None = Field(
        default=None,
        description="Default: the revision of build_id when given, else "
        "the source's active revision at record time",
    )
    build_id: UUID | None = Field(
        default=None,
        description="A usable wiki build (succeeded, passed check) of this "
        "source in this account; with it revision_id defaults "
        "to the revision the build compiled, and a revision_id "
        "given must be that revision",
    )


class RetrievedRef(_Echo):
    """One retrieved chunk or page, by reference (client-reported)."""

    source_id: UUID | None = None
    revision_id: UUID | None = None
    document_id: UUID | None = None
    chunk_id: Ref | None = None
    path: Ref | None = None
    heading_path: list[Annotated[str, Field(max_length=256)]] | None = Field(default=None, max_length=16)
    query_id: UUID | None = None
    score: float | None = Field(default=None, ge=-1_000_000, le=1_000_000)


class CitationRef(_Echo):
    """One citation the answer made, by reference (client-reported)."""

    source_id: UUID | None = None
    revision_id: UUID | None = None
    document_id: UUID | None = None
    build_id: UUID | None = None
    path: Ref | None = None
    page_path: Ref | None = None
    heading_path: list[Annotated[str, Field(max_length=256)]] | None = Field(default=None, max_length=16)
    chunk_id: Ref | None = None


class ResolutionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "contract_identity": "filled by the server from the skill version's compiled contract; do not send it",
        "status": "the discovery's status goes in discovery_status",
        "fingerprint": "send discovery_fingerprint",
        "skill_name": "send skill_version_id",
    }

    skill_version_id: UUID
    requirement_id: RequirementId
    session_id: str = Field(default="", max_length=200, description="The agent session the execution ran in")
    discovery_fingerprint: Fingerprint
    discovery_status: DiscoveryStatus
    candidates: list[CandidateEcho] = Field(default_factory=list, max_length=MAX_ECHOES)
    selected: list[SelectedBase] = Field(
        default_factory=list,
        max_length=MAX_SELECTED,
        description="May be empty: discovery found nothing and the skill proceeded per its fallback",
    )
    retrieved: list[RetrievedRef] = Field(default_factory=list, max_length=MAX_ECHOES)
    citations: list[CitationRef] = Field(default_factory=list, max_length=MAX_ECHOES)
    selection_reason: str = Field(default="", max_length=2000)
    confidence: float | None = Field(default=None, ge=0, le=1)
    idempotency_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        pattern=r"^[ -~]*[!-~][ -~]*$",
        description="Optional: a byte-identical replay returns the original run "
        "(200), a disagreeing one is a 409",
    )


class SelectedOut(BaseModel):
    source_id: UUID
    source_name: str
    revision_id: UUID
    build_id: UUID | None


class ResolutionSummary(BaseModel):
    id: UUID
    skill_version_id: UUID
    session_id: str
    requirement_id: str
    discovery_fingerprint: str
    discovery_status: DiscoveryStatus
    fingerprint_current: bool = Field(
        description="Whether discovery_fingerprint was the one discovery served for "
        "this contract and catalog when the run was recorded"
    )
    candidate_count: int
    selected_count: int
    retrieved_count: int
    citation_count: int
    confidence: float | None
    created_at: datetime


class ResolutionRun(BaseModel):
    id: UUID
    skill_version_id: UUID
    session_id: str
    requirement_id: str
    contract_identity: str
    discovery_fingerprint: str
    discovery_status: DiscoveryStatus
    fingerprint_current: bool
    candidates: list[CandidateEcho]
    selected: list[SelectedOut]
    retrieved: list[RetrievedRef]
    citations: list[CitationRef]
    selection_reason: str
    confidence: float | None
    idempotency_key: str | None
    created_at: datetime
