"""What a layer provider hands back to the service: ordered candidates, and a note when the layer is partial."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentmate.context.schemas import PackRequest, PackStaleSource
from agentmate.core.db import TenantTransactions
from agentmate.core.errors import DomainError
from agentmate.core.observability import logger
from agentmate.core.principal import Principal
from agentmate.retrieval.service import Retrieval

__all__ = [
    "Candidate",
    "Candidates",
    "PackRequest",
    "PackStaleSource",
    "Principal",
    "Retrieval",
    "TenantTransactions",
    "failure_note",
    "insufficient",
]


@dataclass(frozen=True)
class Candidate:
    source: str
    ref: str
    title: str
    content: str
    citation: str | None = None
    score: float | None = None
    truncated: bool = False
    """The provider already cut ``content`` to its budget (TASK fits its own items: see ``layers.task``)."""


@dataclass
class Candidates:
    items: list[Candidate] = field(default_factory=list)
    """In priority order: ``fit`` keeps a prefix of this list."""
    note: str | None = None
    warn: bool = False
    """Echo the note in the pack's ``warnings`` even though the layer has items (a refused or degraded part)."""
    unread: int = 0
    """Candidates the provider did not read because they could not fit (counted as dropped)."""
    newest_first: bool = False
    """Items are newest first for fitting (oldest dropped first); the layer shows the kept ones oldest first."""
    stale: list[PackStaleSource] | None = None
    """KNOWLEDGE: sources whose index lags their active revision (the layer's ``stale``)."""


def insufficient(scope: str) -> str:
    return f"insufficient scope: {scope}"


def failure_note(layer: str, exc: Exception) -> str:
    """A failure as a note that names it without internals (domain errors carry a safe detail)."""
    if isinstance(exc, DomainError):
        return f"failed: {exc.detail}"
    logger.exception("context pack layer failed", extra={"layer": layer})
    return "failed: internal error (logged)"
