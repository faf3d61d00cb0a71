"""Domain failures as tool-error text an agent can act on (the REST twin's problem+json, in one line)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from agentmate.api.errors import pydantic_errors
from agentmate.core.errors import DomainError, FieldError, ValidationFailed


def _field(e: FieldError) -> str:
    text = f"{e.field}: {e.message}"
    if e.allowed:
        text += " (allowed: " + ", ".join(str(a) for a in e.allowed) + ")"
    return text


def fields_text(errors: Iterable[FieldError]) -> str:
    return "Validation failed: " + "; ".join(_field(e) for e in errors)


def domain_error_text(exc: DomainError) -> str:
    """``todo not found``, ``insufficient scope: todos:rw``, ``Validation failed: status: … (allowed: …)``."""
    if isinstance(exc, ValidationFailed) and exc.errors:
        return fields_text(exc.errors)
    return exc.detail


def validation_error_text(exc: ValidationError) -> str:
    """Pydantic argument/body errors, named by argument, with the allowed values of enums."""
    return fields_text(pydantic_errors(list(exc.errors())))
