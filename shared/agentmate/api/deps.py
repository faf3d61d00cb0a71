"""Request dependencies as Annotated aliases: the database, settings, the caller and scope checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Header, Request

from agentmate.auth import credentials
from agentmate.core.db import Database, get_database
from agentmate.core.idempotency import check_key
from agentmate.core.observability import logger
from agentmate.core.principal import Principal
from agentmate.core.settings import Settings, get_settings


# Trivial dependencies are ``async def`` on purpose: a plain ``def`` dependency costs a worker-thread hop per
# request, which dominated warm Lambda latency (bench/warm_invoke.py).
async def _settings() -> Settings:
    return get_settings()


async def _database() -> Database:
    return get_database()


SettingsDep = Annotated[Settings, Depends(_settings)]
DbDep = Annotated[Database, Depends(_database)]


def current_principal(request: Request, db: DbDep, settings: SettingsDep) -> Principal:
    auth = request.headers.get("authorization", "")
    bearer = auth[7:].strip() if auth[:7].lower() == "bearer " else None
    principal = credentials.authenticate(db, settings, api_key=request.headers.get("x-api-key"), bearer=bearer)
    logger.append_keys(account_id=str(principal.account_id))
    request.state.principal = principal
    return principal


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


def require_scope(scope: str) -> Callable[[Principal], Principal]:
    async def checker(principal: CurrentPrincipal) -> Principal:
        principal.require(scope)
        return principal

    checker.__name__ = f"require_{scope.replace(':', '_')}"
    return checker


def scoped(scope: str) -> type[Principal]:
    """``principal: scoped("todos:rw")`` — the caller, after checking one scope."""
    return Annotated[Principal, Depends(require_scope(scope))]  # type: ignore[return-value]


async def idempotency_key(
    idempotency_key: Annotated[
        str | None,
        Header(alias="Idempotency-Key", description="Retry-safe create: a replay returns the original response"),
    ] = None,
) -> str | None:
    return check_key(idempotency_key)


IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]
