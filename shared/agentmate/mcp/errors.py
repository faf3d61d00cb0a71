"""Domain failures as tool-error text an agent can act on (the REST twin's problem+json, in one line)."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ValidationError

from agentmate.core.errors import DomainError, FieldError, ValidationFailed
from agentmate.core.validation import likely_meant, pydantic_errors


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


def validation_error_text(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Pydantic argument/body errors, named by argument, with the allowed values of enums and the hints of
    ``model`` (the tool's domain model) and the models nested in it. The locations are made REST's (under
    ``body``) so that an argument named like a location (``query``) keeps its name; an error of the arguments as
    a whole (an update with nothing to change) is named ``arguments``."""
    located = [{**err, "loc": ("body", *err.get("loc", ()))} for err in exc.errors()]
    return fields_text(
        FieldError("arguments", e.message, e.allowed) if e.field == "body" else e
        for e in pydantic_errors(located, model)
    )


def unknown_arguments(
    unknown: Iterable[str], allowed: Iterable[str], hints: type[BaseModel] | None
) -> list[FieldError]:
    """Arguments a tool does not take. The SDK would drop them silently (losing what the agent meant to store);
    refuse them like REST's strict bodies, with the domain model's hint where it has one."""
    found: dict[str, str] = {}
    if hints is not None:
        try:
            hints.model_validate({name: None for name in unknown})
        except ValidationError as exc:
            for err in pydantic_errors(exc.errors(), hints):
                if err.field in set(unknown) and err.message.startswith("unknown field ("):
                    found[err.field] = "unknown argument" + err.message[len("unknown field") :]
    names = sorted(allowed)
    for name in unknown:
        if name not in found and (meant := likely_meant(name, names)):
            found[name] = f"unknown argument (use {meant})"
    return [FieldError(name, found.get(name, "unknown argument"), names) for name in unknown]
