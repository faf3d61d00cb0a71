"""SKILL: pinned ``skill_name`` → that skill's active version instructions, else the top skill search hit with
its L1 instructions, else its L0 card (with a note). Selection is pinned-or-top-hit only; discovery driven by a
skill's knowledge contract (K4) is not done here.

Not wired yet: the skills registry (catalog, compiled cards, skill search) is being built; until it is on main
this layer is an unconfigured layer — empty, with a note, echoed in warnings.
"""

from __future__ import annotations

from agentmate.context.layers.base import Candidates, Database, PackRequest, Principal, Retrieval

NOT_AVAILABLE = ("skills registry not available: the SKILL layer is not wired yet (selection will be a pinned "
                 "skill_name or the top skill search hit; K4 knowledge-contract discovery is not done here)")


def provide(
    db: Database, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    return Candidates(note=NOT_AVAILABLE)
