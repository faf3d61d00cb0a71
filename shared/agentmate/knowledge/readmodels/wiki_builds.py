"""Read model over the wiki's builds (``knowledge_builds``, migration 0071) for K4: a pinned ``build_id`` in a
knowledge contract and a resolution run's selected ``build_id`` are verified against the account's builds.

A build is *usable* when it could serve pages: it succeeded and passed check, the rule ``POST
/api/knowledge/builds/{id}/activate`` applies (spec/001: activate is a 409 for any other build).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from agentmate.core.db import Conn


@dataclass(frozen=True, slots=True)
class Build:
    id: UUID
    source_id: UUID
    source_revision_id: UUID
    status: str
    check_status: str

    @property
    def usable(self) -> bool:
        return self.status == "succeeded" and self.check_status == "passed"

    def unusable_reason(self) -> str:
        return (
            f"is {self.status} with check {self.check_status}: only a succeeded build that passed check can "
            "serve pages"
        )


def as_build_id(text: str | None) -> UUID | None:
    """A pinned build id (free text in a contract) as a UUID, or None when it cannot name a build."""
    try:
        return UUID(str(text)) if text else None
    except ValueError:
        return None


def builds(conn: Conn, *, account_id: UUID, build_ids: Iterable[UUID]) -> dict[UUID, Build]:
    """The account's builds among ``build_ids`` (another account's ids find nothing)."""
    ids = sorted(set(build_ids))
    if not ids:
        return {}
    rows = conn.execute(
        """SELECT id, source_id, source_revision_id, status, check_status FROM knowledge_builds
           WHERE account_id = %(account_id)s AND id = ANY(%(ids)s)""",
        {"account_id": account_id, "ids": ids},
    ).fetchall()
    return {
        r["id"]: Build(r["id"], r["source_id"], r["source_revision_id"], r["status"], r["check_status"])
        for r in rows
    }
