"""SKILL: pinned ``skill_name`` → that skill's active version's L1 instructions; else the top skill search hit
with its L1 instructions, or its L0 card when they cannot be loaded (the note says so). Selection is
pinned-or-top-hit only: discovery driven by a skill's knowledge contract (K4) is not done here."""

from __future__ import annotations

from agentmate.context.layers.base import (
    Candidate,
    Candidates,
    PackRequest,
    Principal,
    Retrieval,
    TenantTransactions,
)
from agentmate.core.errors import NotFound
from agentmate.skills import service as skills
from agentmate.skills.catalog import service as catalog
from agentmate.skills.catalog.schemas import SkillCard, SkillInstructions
from agentmate.skills.search import service as skill_search
from agentmate.skills.search.schemas import SkillSearchRequest

SELECTION = (
    "selection is a pinned skill_name or the top skill search hit; K4 knowledge-contract discovery is not "
    "done here"
)
MAX_SEARCH_QUERY = 1000


def card_text(card: SkillCard) -> str:
    """The L0 card: description, then Triggers, Capabilities, Constraints — always this order (prior-art iterated a
    map, so its order was random)."""
    lines = [card.description] if card.description else []
    for label, values in (
        ("Triggers", card.triggers),
        ("Capabilities", card.capabilities),
        ("Constraints", card.constraints),
    ):
        if values:
            lines.append(f"{label}:")
            lines += [f"- {v}" for v in values]
    return "\n".join(lines)


def _l1(l1: SkillInstructions) -> Candidate:
    return Candidate(
        source="skill",
        ref=f"skill_version:{l1.skill_version_id}",
        title=f"{l1.skill_name} {l1.version}",
        content=l1.instructions,
    )


def provide(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    if req.skill_name is not None:
        try:
            version = skills.active_version(db, principal, req.skill_name)
        except NotFound:
            return Candidates(note=f"skill {req.skill_name!r} has no active version ({SELECTION})")
        return Candidates(
            items=[_l1(catalog.instructions(db, principal, version.id))],
            note=f"pinned skill_name: its active version's instructions ({SELECTION})",
        )
    found = skill_search.search(
        db,
        retrieval,
        principal,
        SkillSearchRequest(query=req.search_text[:MAX_SEARCH_QUERY], top_k=1, include_content=True),
    )
    degraded = "; ".join(f"{d.leg} leg: {d.reason}" for d in found.degraded)
    if not found.items:
        note = f"no skill matched the query ({SELECTION})"
        return Candidates(note=f"search degraded: {degraded}; {note}" if degraded else note)
    hit = found.items[0]
    if hit.instructions and hit.instructions.strip():
        item = Candidate(
            source="skill",
            ref=f"skill_version:{hit.skill_version_id}",
            title=f"{hit.skill_name} {hit.version}",
            content=hit.instructions,
            score=hit.score,
        )
        note = f"top skill search hit with its instructions ({SELECTION})"
    else:
        item = Candidate(
            source="skill",
            ref=f"skill_version:{hit.skill_version_id}",
            title=f"{hit.skill_name} {hit.version} (card)",
            content=card_text(hit.card),
            score=hit.score,
        )
        note = (
            f"top skill search hit: its instructions could not be loaded, showing its L0 card ({SELECTION})"
        )
    if degraded:
        return Candidates(items=[item], note=f"search degraded: {degraded}; {note}", warn=True)
    return Candidates(items=[item], note=note)
