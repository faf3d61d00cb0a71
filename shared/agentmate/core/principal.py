"""Who is calling: resolved once per request from a JWT or an API key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from uuid import UUID

from agentmate.core import scopes as scope_rules
from agentmate.core.errors import Forbidden


@dataclass(frozen=True)
class Principal:
    account_id: UUID
    user_id: UUID
    via: Literal["jwt", "api_key"]
    key_id: UUID | None = None
    scopes: tuple[str, ...] = field(default_factory=tuple)
    role: str = "user"

    def can(self, scope: str) -> bool:
        """JWT callers (the account's own user) and empty-scope keys have full access."""
        return self.via == "jwt" or scope_rules.satisfies(self.scopes, scope)

    def require(self, scope: str) -> None:
        if not self.can(scope):
            raise Forbidden(f"insufficient scope: {scope}", extra={"required_scope": scope})
