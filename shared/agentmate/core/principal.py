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
    via: Literal["jwt", "api_key", "oauth"]
    key_id: UUID | None = None
    scopes: tuple[str, ...] = field(default_factory=tuple)
    role: str = "user"
    grant_id: UUID | None = None
    """For an OAuth access token: the grant (one user's authorisation of one client) it was issued under."""
    client_id: str | None = None
    """For an OAuth access token: the client it was issued to."""

    def can(self, scope: str) -> bool:
        """JWT callers (the account's own user) and empty-scope keys have full access. An OAuth grant always
        lists its scopes: spec/001's "empty scopes = full access" is for API keys only."""
        if self.via == "jwt":
            return True
        if self.via == "oauth":
            return scope in scope_rules.expand(self.scopes)
        return scope_rules.satisfies(self.scopes, scope)

    def require(self, scope: str) -> None:
        if not self.can(scope):
            raise Forbidden(f"insufficient scope: {scope}", extra={"required_scope": scope})
