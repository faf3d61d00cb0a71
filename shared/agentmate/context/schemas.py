"""Context pack: the request body, the budgeted layers and items it returns.

Limits follow prior-art §4.5: ``max_chars`` 500..200000 (0 or omitted = 12000), ``top_k`` 1..20 (0 or omitted
= 5), ``layers`` case-insensitive, duplicates ignored, unknown names a 400 listing the allowed ones.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from agentmate.core.inputs import Bool, Int
from agentmate.core.schema_rules import requires, rules
from agentmate.core.text import no_nul
from agentmate.memory.schemas import MAX_SCOPE_KEY, MAX_SESSION_ID, ScopeType

LayerName = Literal["SKILL", "KNOWLEDGE", "MEMORY", "FACTS", "WORKING", "TASK"]
LAYERS: tuple[LayerName, ...] = ("SKILL", "KNOWLEDGE", "MEMORY", "FACTS", "WORKING", "TASK")
"""Canonical order: layers are assembled and rendered in this order whatever order the request names them."""

DEFAULT_MAX_CHARS = 12_000
MIN_MAX_CHARS = 500
MAX_MAX_CHARS = 200_000
DEFAULT_TOP_K = 5
MAX_TOP_K = 20
MAX_TASK = 4000
MAX_QUERY = 2000
MAX_SKILL_NAME = 200
MAX_DOMAIN = 200
MAX_SOURCE_IDS = 16  # knowledge search takes at most 16 (prior-art §4.6)


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


def _blank_to_none(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        return None
    return _strip(value)


def _upper(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


def _dedup(values: list[str] | None) -> list[str] | None:
    return None if values is None else list(dict.fromkeys(values))


MAX_CHARS_RULE = f"must be an integer {MIN_MAX_CHARS}..{MAX_MAX_CHARS} (0 or omitted = {DEFAULT_MAX_CHARS})"
TOP_K_RULE = f"must be an integer 1..{MAX_TOP_K} (0 or omitted = {DEFAULT_TOP_K})"


MAX_CHARS_ALLOWED: list[Any] = [0, f"{MIN_MAX_CHARS}..{MAX_MAX_CHARS}"]
TOP_K_ALLOWED: list[Any] = [0, f"1..{MAX_TOP_K}"]


def _refuse(rule: str, allowed: list[Any]) -> PydanticCustomError:
    # ``value_rule``: agentmate.core.validation reports the rule as the message and ``allowed`` beside it
    return PydanticCustomError("value_rule", rule, {"allowed": allowed})


def _integer(value: object, rule: str, allowed: list[Any]) -> int:
    """Strict like ``Int`` (17 or 17.0; not "17", 17.5 or true), with the field's whole rule as the message."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _refuse(rule, allowed)
    return value


def check_max_chars(value: object) -> object:
    # One clear message instead of the union's two errors (``max_chars.literal[0]``, ``max_chars.constrained-int``)
    value = _integer(value, MAX_CHARS_RULE, MAX_CHARS_ALLOWED)
    if value != 0 and not MIN_MAX_CHARS <= value <= MAX_MAX_CHARS:
        raise _refuse(MAX_CHARS_RULE, MAX_CHARS_ALLOWED)
    return value


def check_top_k(value: object) -> object:
    value = _integer(value, TOP_K_RULE, TOP_K_ALLOWED)
    if not 0 <= value <= MAX_TOP_K:
        raise _refuse(TOP_K_RULE, TOP_K_ALLOWED)
    return value


def _max_chars_default(value: int) -> int:
    return value or DEFAULT_MAX_CHARS


def _top_k_default(value: int) -> int:
    return value or DEFAULT_TOP_K


Optional = Annotated[str | None, BeforeValidator(_blank_to_none)]
MaxChars = Annotated[
    Literal[0] | Annotated[int, Field(ge=MIN_MAX_CHARS, le=MAX_MAX_CHARS)],
    BeforeValidator(check_max_chars),
    AfterValidator(_max_chars_default),
]


class PackRequest(BaseModel):
    """What the agent is about to do, and what to put in its context."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=rules(
            requires("memory_scope_key", "memory_scope_type", other_text=False, field_text=True)
        ),
    )
    field_hints: ClassVar[dict[str, str]] = {
        "layer": "use layers (a list)",
        "budget": "use max_chars (a budget in characters)",
        "max_tokens": "use max_chars: budgets are in characters, not tokens",
        "limit": "use top_k",
        "scope_type": "use memory_scope_type",
        "scope_key": "use memory_scope_key",
        "domain": "use knowledge_domain",
        "source_ids": "use knowledge_source_ids",
        "goal": "use task: the task is the TASK layer's goal",
        "objective": "use task: the task is the TASK layer's goal",
        "prompt": "use task (what you are about to do) and, to search with other words, query",
        "question": "use query (what to retrieve with) or task",
        "text": "use task (what you are about to do) or query (what to retrieve with)",
        "tokens": "use max_chars: budgets are in characters, not tokens",
        "k": "use top_k",
        "skill": "use skill_name",
        "session": "use session_id",
        "checkpoint": "send session_id: TASK resumes that journal session's latest checkpoint; record one with "
        "POST /api/memory/checkpoints or memory_checkpoint_save",
        "checkpoint_id": "send session_id: TASK resumes that journal session's latest checkpoint",
        "knowledge_domain_id": "use knowledge_domain (a domain name) or knowledge_source_ids",
        "scope": "use memory_scope_type plus memory_scope_key",
    }

    task: Annotated[str, BeforeValidator(_strip), AfterValidator(no_nul)] = Field(
        min_length=1, max_length=MAX_TASK, description="What the agent is about to do; the TASK layer's goal"
    )
    query: Annotated[Optional, AfterValidator(lambda v: v if v is None else no_nul(v))] = Field(
        default=None,
        max_length=MAX_QUERY,
        description="What to retrieve with (memory, skill and knowledge search; the FACTS substring match). "
        f"Omitted or blank = the task's first {MAX_QUERY} characters",
    )
    skill_name: Optional = Field(
        default=None,
        max_length=MAX_SKILL_NAME,
        description="Pin the SKILL layer to this skill's active version",
    )
    session_id: Optional = Field(
        default=None,
        max_length=MAX_SESSION_ID,
        description="The agent session: TASK resumes its checkpoint (or replays its journal) and WORKING shows "
        "the working-memory session with this id (a UUID). With it, WORKING joins the default layers",
    )
    knowledge_domain: Optional = Field(
        default=None, max_length=MAX_DOMAIN, description="KNOWLEDGE: only sources of this domain"
    )
    knowledge_source_ids: list[UUID] = Field(
        default_factory=list,
        max_length=MAX_SOURCE_IDS,
        description=f"KNOWLEDGE: only these sources (at most {MAX_SOURCE_IDS})",
    )
    memory_scope_type: Annotated[
        ScopeType | None, BeforeValidator(lambda v: v.strip().lower() if isinstance(v, str) else v)
    ] = Field(default=None, description="MEMORY: only memories of this scope type")
    memory_scope_key: Optional = Field(
        default=None,
        max_length=MAX_SCOPE_KEY,
        description="MEMORY: only this scope key (requires memory_scope_type)",
    )
    max_chars: MaxChars = Field(
        default=DEFAULT_MAX_CHARS,
        description=f"The whole pack's budget in characters (Unicode code points): {MIN_MAX_CHARS}..{MAX_MAX_CHARS};"
        f" 0 or omitted = {DEFAULT_MAX_CHARS}",
    )
    top_k: Annotated[Int, BeforeValidator(check_top_k), AfterValidator(_top_k_default)] = Field(
        default=DEFAULT_TOP_K,
        ge=0,
        le=MAX_TOP_K,
        description=f"Candidates per retrieval layer and per FACTS half: 1..{MAX_TOP_K}; 0 or omitted = "
        f"{DEFAULT_TOP_K}",
    )
    layers: Annotated[list[Annotated[LayerName, BeforeValidator(_upper)]] | None, AfterValidator(_dedup)] = (
        Field(
            default=None,
            max_length=24,
            description="Which layers (case-insensitive, duplicates ignored). Omitted or empty = SKILL, KNOWLEDGE, "
            "MEMORY, FACTS, TASK, plus WORKING when session_id is given. Always assembled in the "
            "canonical order SKILL, KNOWLEDGE, MEMORY, FACTS, WORKING, TASK",
        )
    )
    render: Bool = Field(default=False, description="Also return the pack as text (`rendered`)")

    @property
    def search_text(self) -> str:
        return self.query or self.task[:MAX_QUERY]


class PackItem(BaseModel):
    layer: LayerName
    source: str = Field(
        description="Where the item comes from (skill, knowledge, memory, todo, note, working, "
        "task, checkpoint, journal): tells authority apart"
    )
    ref: str = Field(description="A traceable reference, `<kind>:<id>` (see docs/context-pack.md)")
    title: str
    content: str
    citation: str | None = Field(default=None, description="Where a claim can be checked, when there is one")
    score: float | None = Field(default=None, description="Retrieval score (0..1) for searched items")
    truncated: bool = Field(
        default=False, description="Content was cut at a boundary to fit the layer budget"
    )


class PackStaleSource(BaseModel):
    """A knowledge source whose chunk index does not reflect its active revision (POST /api/knowledge/index)."""

    source_id: UUID
    name: str
    active_revision_id: UUID
    indexed_revision_id: UUID | None = Field(description="null: never indexed")
    indexed_at: datetime | None
    stale: bool = True


class PackLayer(BaseModel):
    layer: LayerName
    items: list[PackItem] = Field(
        description="Always a list; empty when the layer was refused, failed or had nothing (see note)"
    )
    char_budget: int = Field(description="This layer's share of max_chars; never lent to another layer")
    chars_used: int = Field(description="Characters of item content kept (≤ char_budget)")
    dropped: int = Field(description="Candidate items left out to stay within the budget")
    truncated: bool = Field(description="An item was cut to fit")
    note: str | None = Field(
        default=None, description="Why the layer is empty or partial, or how it was built"
    )
    stale: list[PackStaleSource] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="KNOWLEDGE only: searched sources whose chunk index lags their active revision (knowledge "
        "search's stale); their items are older text. Absent when every source is current",
    )


class Pack(BaseModel):
    task: str
    session_id: str | None
    layers: list[PackLayer] = Field(description="The requested layers in canonical order")
    max_chars: int
    chars_used: int
    rendered: str | None = Field(default=None, description="The text form, when render was true")
    warnings: list[str] = Field(
        description="`LAYER: note` for every refused, failing, unconfigured or "
        "degraded layer: the pack never cuts silently"
    )

    def layer(self, name: str) -> PackLayer:
        return next(layer for layer in self.layers if layer.layer == name)
