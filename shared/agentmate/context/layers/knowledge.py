"""KNOWLEDGE: knowledge search (domain and source filters) with citations ``path # heading_path``.

Not implemented: the knowledge registry does not exist yet, so this is an unconfigured layer — empty, with a
note, echoed in warnings (spec/001's rule for an unconfigured layer).
"""

from __future__ import annotations

from agentmate.context.layers.base import Candidates, Database, PackRequest, Principal, Retrieval

NOT_AVAILABLE = "knowledge registry not available: the KNOWLEDGE layer is not implemented yet"


def provide(
    db: Database, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    return Candidates(note=NOT_AVAILABLE)
