"""Domain exceptions. They carry a kind and field details, never HTTP: ``agentmate.api.errors`` maps each kind
to a status and renders problem+json; ``agentmate.mcp.errors`` renders the same error as a tool error."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar


class ErrorKind(StrEnum):
    INVALID = "invalid"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    TOO_LARGE = "too_large"
    RATE_LIMITED = "rate_limited"
    NOT_IMPLEMENTED = "not_implemented"
    UNAVAILABLE = "unavailable"


@dataclass
class FieldError:
    field: str
    message: str
    allowed: list[Any] | None = None
    likely_meant: str | None = None
    """For an unknown field: the allowed field name it most likely stands for (the message says the fix)."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "message": self.message}
        if self.allowed is not None:
            out["allowed"] = self.allowed
        if self.likely_meant is not None:
            out["likely_meant"] = self.likely_meant
        return out


class DomainError(Exception):
    kind: ClassVar[ErrorKind] = ErrorKind.UNAVAILABLE
    default_detail: ClassVar[str] = "the request could not be completed"

    def __init__(
        self, detail: str = "", *, errors: list[FieldError] | None = None, extra: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail or self.default_detail)
        self.detail = detail or self.default_detail
        self.errors = errors or []
        self.extra = extra or {}


class ValidationFailed(DomainError):
    kind = ErrorKind.INVALID
    default_detail = "Validation failed"

    def __init__(self, errors: list[FieldError], detail: str = "") -> None:
        fields = ", ".join(e.field for e in errors)
        super().__init__(detail or f"invalid fields: {fields}", errors=errors)


def invalid(field_name: str, message: str, allowed: list[Any] | None = None) -> ValidationFailed:
    return ValidationFailed([FieldError(field_name, message, allowed)])


class Unauthorized(DomainError):
    kind = ErrorKind.UNAUTHORIZED
    default_detail = "Unauthorized"


class JwtRequired(Unauthorized):
    """Unauthorized on a route that takes only the signed-in user's JWT (its transport challenges for a bearer
    token alone)."""


class Forbidden(DomainError):
    kind = ErrorKind.FORBIDDEN
    default_detail = "Forbidden"


class NotFound(DomainError):
    kind = ErrorKind.NOT_FOUND
    default_detail = "Not Found"

    def __init__(self, resource: str = "resource", detail: str = "") -> None:
        super().__init__(detail or f"{resource} not found")
        self.resource = resource


class Conflict(DomainError):
    kind = ErrorKind.CONFLICT
    default_detail = "Conflict"


class TooLarge(DomainError):
    kind = ErrorKind.TOO_LARGE
    default_detail = "Content Too Large"


class RateLimited(DomainError):
    """Too many attempts; ``retry_after`` is whole seconds until the caller may try again."""

    kind = ErrorKind.RATE_LIMITED
    default_detail = "Too Many Requests"

    def __init__(self, detail: str = "", retry_after: int = 1) -> None:
        super().__init__(detail)
        self.retry_after = max(1, int(retry_after))


class NotImplementedYet(DomainError):
    kind = ErrorKind.NOT_IMPLEMENTED
    default_detail = "Not Implemented"


class ServiceUnavailable(DomainError):
    """A dependency failed; ``retry_after`` (whole seconds), when known, is when the caller may try again."""

    kind = ErrorKind.UNAVAILABLE
    default_detail = "Service Unavailable"

    def __init__(
        self, detail: str = "", *, retry_after: int | None = None, extra: dict[str, Any] | None = None
    ) -> None:
        super().__init__(detail, extra=extra)
        self.retry_after = None if retry_after is None else max(1, int(retry_after))


@dataclass
class ErrorCollector:
    """Accumulates every invalid field so a client can fix them all in one pass."""

    errors: list[FieldError] = field(default_factory=list)

    def add(self, field_name: str, message: str, allowed: list[Any] | None = None) -> None:
        self.errors.append(FieldError(field_name, message, allowed))

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)
