"""Domain exceptions. They carry no HTTP: agentmate.api.errors maps them to problem+json."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FieldError:
    field: str
    message: str
    allowed: list[Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.field, "message": self.message}
        if self.allowed is not None:
            out["allowed"] = self.allowed
        return out


class DomainError(Exception):
    status = 500
    title = "Internal Server Error"

    def __init__(self, detail: str = "", *, errors: list[FieldError] | None = None, extra: dict[str, Any] | None = None):
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.errors = errors or []
        self.extra = extra or {}


class ValidationFailed(DomainError):
    status = 400
    title = "Validation failed"

    def __init__(self, errors: list[FieldError], detail: str = ""):
        fields = ", ".join(e.field for e in errors)
        super().__init__(detail or f"invalid fields: {fields}", errors=errors)


def invalid(field_name: str, message: str, allowed: list[Any] | None = None) -> ValidationFailed:
    return ValidationFailed([FieldError(field_name, message, allowed)])


class Unauthorized(DomainError):
    status = 401
    title = "Unauthorized"


class Forbidden(DomainError):
    status = 403
    title = "Forbidden"


class NotFound(DomainError):
    status = 404
    title = "Not Found"

    def __init__(self, resource: str = "resource", detail: str = ""):
        super().__init__(detail or f"{resource} not found")
        self.resource = resource


class Conflict(DomainError):
    status = 409
    title = "Conflict"


class NotImplementedYet(DomainError):
    status = 501
    title = "Not Implemented"


class ServiceUnavailable(DomainError):
    status = 503
    title = "Service Unavailable"


@dataclass
class ErrorCollector:
    """Accumulates every invalid field so a client can fix them all in one pass."""

    errors: list[FieldError] = field(default_factory=list)

    def add(self, field_name: str, message: str, allowed: list[Any] | None = None) -> None:
        self.errors.append(FieldError(field_name, message, allowed))

    def raise_if_any(self) -> None:
        if self.errors:
            raise ValidationFailed(self.errors)
