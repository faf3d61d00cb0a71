"""Domain failures as tool-error text an agent can act on (the REST twin's problem+json, in one line)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from agentmate.core.errors import DomainError, FieldError, ValidationFailed
from agentmate.core.validation import MAX_SUGGESTIONS, pydantic_errors, unknown_field


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


def validation_error_text(
    exc: ValidationError, model: type[BaseModel] | None = None, arguments: Mapping[str, Any] | None = None
) -> str:
    """Pydantic argument/body errors, named by argument, with the allowed values of enums and the hints of
    ``model`` (the tool's domain model) and the models nested in it. The locations are made REST's (under
    ``body``) so that an argument named like a location (``query``) keeps its name; an error of the arguments as
    a whole (an update with nothing to change) is named ``arguments``. An argument the domain model also
    declares is reported as REST reports it: ``arguments`` re-validated by ``model`` name it (``max_chars: "big"``
    is "must be 0 or an integer 500..200000" over both transports, not the tool signature's plain ``int``)."""
    located = [{**err, "loc": ("body", *err.get("loc", ()))} for err in exc.errors()]
    errors = pydantic_errors(located, model)
    if model is not None and arguments is not None:
        errors = _as_rest_reports(errors, model, arguments)
    return fields_text(
        FieldError("arguments", e.message, e.allowed) if e.field == "body" else e for e in errors
    )


def _top(field: str) -> str:
    return field.split(".", 1)[0].split("[", 1)[0]


def _as_rest_reports(
    errors: list[FieldError], model: type[BaseModel], arguments: Mapping[str, Any]
) -> list[FieldError]:
    """Each error of an argument ``model`` declares, replaced by ``model``'s own errors for that argument."""
    try:
        model.model_validate(dict(arguments))
        return errors
    except ValidationError as exc:
        own: dict[str, list[FieldError]] = {}
        located = [{**err, "loc": ("body", *err.get("loc", ()))} for err in exc.errors()]  # as above
        for e in pydantic_errors(located, model):
            own.setdefault(_top(e.field), []).append(e)
    out: list[FieldError] = []
    replaced: set[str] = set()
    for e in errors:
        top = _top(e.field)
        if top not in own:
            out.append(e)
        elif top not in replaced:
            replaced.add(top)
            out += own[top]
    return out


def unknown_arguments(
    unknown: Iterable[str], allowed: Iterable[str], hints: type[BaseModel] | None
) -> list[FieldError]:
    """Arguments a tool does not take. The SDK would drop them silently (losing what the agent meant to store);
    refuse them like REST's strict bodies, with the same message: the domain model's hint where it has one,
    else "did you mean …?" with the closest argument (``likely_meant``)."""
    names = sorted(allowed)
    field_hints: Mapping[str, str] = getattr(hints, "field_hints", {}) if hints is not None else {}
    return [
        unknown_field(name, name, names, field_hints, suggest=i < MAX_SUGGESTIONS)
        for i, name in enumerate(unknown)
    ]
