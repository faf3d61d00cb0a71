"""Driver errors → domain errors, the one translation (REST and MCP see the same error).

Each repository declares the constraints of its tables with ``constraints({name: (field, message)})``: a unique,
foreign-key, check or not-null violation is then reported by the **constraint's name**, naming the request
field that broke it (a unique violation is a ``Conflict``, the others ``ValidationFailed``). ``core.db``
translates at the transaction boundary, so services never see (or import) psycopg.

Data errors (NUL in text, a number out of range, text Postgres cannot parse) name the field when the failing
statement's parameters show which one it was, else answer a generic 400 that says what to fix and leaks nothing
of the statement. The database being unreachable (refused, restarting, shut down, out of connections, no pooled
connection within the budget) is a ``ServiceUnavailable`` (503 with ``Retry-After``): the client's request was
fine and a retry with the same idempotency key is safe. Anything else is left alone: it is unexpected, and the
transport logs it as a 500.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors as pg

from agentmate.core.errors import (
    Conflict,
    DomainError,
    FieldError,
    Forbidden,
    ServiceUnavailable,
    Unauthorized,
    ValidationFailed,
)
from agentmate.core.observability import logger

NUL_MESSAGE = "must not contain NUL (U+0000) characters"
RANGE_MESSAGE = "number out of range"
DATA_DETAIL = (
    "a value cannot be stored: text must not contain NUL (U+0000) characters and numbers must be in range"
)
UNAVAILABLE_DETAIL = (
    "the database is unavailable for a moment; retry in {seconds} s with the same idempotency key"
)
UNAVAILABLE_RETRY_AFTER_S = 2
# SQLSTATE classes of a server that cannot take the request now: connection exception, insufficient resources
# (too many connections), operator intervention (shut down, restarting, cancelled by a timeout).
_UNAVAILABLE_CLASSES = ("08", "53", "57")
CONFLICT_DETAIL = (
    "a concurrent request on the same rows conflicted with this one and it was rolled back, nothing written: "
    "retry in 1 s (with the same idempotency key)"
)
_INT4 = 2**31  # a parameter at least this large is the suspect when Postgres says out of range
# The credential's own rows (account, user, key): a write that breaks one of these has lost its caller.
_CALLER_FKEYS = ("_account_id_fkey", "_key_id_fkey", "_user_fkey", "_source_key_id_fkey")


@dataclass(frozen=True)
class Rule:
    field: str
    message: str


_RULES: dict[str, Rule] = {}


def constraints(table: Mapping[str, tuple[str, str]]) -> dict[str, Rule]:
    """Declare a repository's constraint name → (field, message) table. Registered for the transaction boundary;
    returned so the repository keeps it visible as its ``CONSTRAINTS``."""
    rules = {name: Rule(field, message) for name, (field, message) in table.items()}
    _RULES.update(rules)
    return rules


def declared() -> frozenset[str]:
    """Every constraint name some repository has declared (the test checks the schema against it)."""
    return frozenset(_RULES)


def caller_constraint(name: str) -> bool:
    return name.endswith(_CALLER_FKEYS)


class ParamsCursor(psycopg.Cursor[Any]):
    """Keeps a failed statement's parameters on its data error so the translation can name the field."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        try:
            return super().execute(query, params, **kwargs)
        except psycopg.DataError as exc:
            exc.agentmate_params = params  # type: ignore[attr-defined]
            raise


def translate(exc: BaseException) -> DomainError | None:
    """The domain error for a driver error, or None when it is not the client's to fix."""
    if isinstance(exc, pg.IntegrityError):
        return _integrity(exc)
    if isinstance(exc, psycopg.DataError):
        return _data(exc)
    if isinstance(exc, pg.InsufficientPrivilege):
        return Forbidden("not allowed for this account")
    if (
        isinstance(exc, psycopg.Error) and (exc.sqlstate or "")[:2] == "40"
    ):  # deadlock, serialization: rolled back
        logger.warning("transaction rolled back by a conflict", extra={"error_class": type(exc).__name__})
        return ServiceUnavailable(CONFLICT_DETAIL, retry_after=1)
    if unavailable(exc):
        logger.warning("database unavailable", extra={"error_class": type(exc).__name__})
        return ServiceUnavailable(
            UNAVAILABLE_DETAIL.format(seconds=UNAVAILABLE_RETRY_AFTER_S),
            retry_after=UNAVAILABLE_RETRY_AFTER_S,
        )
    return None


def unavailable(exc: BaseException) -> bool:
    """The server is unreachable or cannot take the request now (not a fault of the request): a lost or refused
    connection (no SQLSTATE), a pool that found no connection in time, or one of ``_UNAVAILABLE_CLASSES``."""
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = exc.sqlstate
    return state is None or state[:2] in _UNAVAILABLE_CLASSES


def _integrity(exc: pg.IntegrityError) -> DomainError:
    name = exc.diag.constraint_name or ""
    rule = _RULES.get(name)
    if rule is not None:
        error = FieldError(rule.field, rule.message)
        if isinstance(exc, pg.UniqueViolation):
            detail = rule.message if rule.field in rule.message else f"{rule.field} {rule.message}"
            return Conflict(detail, errors=[error])
        return ValidationFailed([error])
    if isinstance(exc, pg.NotNullViolation) and exc.diag.column_name:
        return ValidationFailed([FieldError(exc.diag.column_name, "may not be null")])
    if isinstance(exc, pg.ForeignKeyViolation) and caller_constraint(name):
        return Unauthorized("the account or API key of this credential no longer exists")
    logger.warning(
        "constraint without a declared field", extra={"constraint": name, "error_class": type(exc).__name__}
    )
    if isinstance(exc, pg.UniqueViolation):
        return Conflict("a record with these values already exists")
    if isinstance(exc, pg.ForeignKeyViolation):
        return ValidationFailed([], detail="a referenced record does not exist in this account")
    return ValidationFailed([], detail="a value breaks a rule of this record")


def _data(exc: psycopg.DataError) -> ValidationFailed:
    params = getattr(exc, "agentmate_params", None)
    if isinstance(exc, pg.NumericValueOutOfRange):
        fields = [k for k, v in _named(params) if isinstance(v, int) and not -_INT4 <= v < _INT4]
        message = RANGE_MESSAGE
    else:
        fields = [k for k, v in _named(params) if _has_nul(v)]
        message = NUL_MESSAGE
    logger.info("rejected input the database cannot hold", extra={"error_class": type(exc).__name__})
    if fields:
        return ValidationFailed([FieldError(f, message) for f in dict.fromkeys(fields)])
    return ValidationFailed([], detail=DATA_DETAIL)


def _named(params: Any) -> list[tuple[str, Any]]:
    """Named statement parameters as field names (``_offset`` → ``offset``: helpers prefix their own)."""
    if not isinstance(params, Mapping):
        return []
    return [(str(k).lstrip("_"), v) for k, v in params.items()]


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    obj = getattr(value, "obj", None)  # psycopg's Jsonb wrapper
    return obj is not None and _has_nul(obj)
