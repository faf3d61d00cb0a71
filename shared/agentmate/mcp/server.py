"""``MCPServer`` with Agentmate's rules: per-tool scopes, domain errors as tool errors, scope-filtered lists."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any
from uuid import UUID

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import BaseModel, ValidationError

from agentmate.core.errors import DomainError, RateLimited
from agentmate.core.limits import service as limits
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.observability import flush_metrics, logger
from agentmate.core.patch import patch_property
from agentmate.core.principal import Principal
from agentmate.mcp import context
from agentmate.mcp.errors import domain_error_text, fields_text, unknown_arguments, validation_error_text
from agentmate.mcp.registry import ToolSpec

SERVER_VERSION = "1.0.0"
UNEXPECTED_TEXT = "internal error: the tool failed unexpectedly; it was logged, retry later"


def _scope_refusal(spec: ToolSpec, granted: Iterable[str]) -> str:
    have = ", ".join(granted) or "none"
    needs = " and ".join(spec.scopes)
    return (
        f"insufficient scope: {spec.name} requires {needs} (this API key has: {have}). "
        f"Use a key that holds {'these scopes' if spec.also else 'this scope'}; X:rw implies X:r."
    )


def build_tools(specs: Iterable[ToolSpec]) -> dict[str, Tool]:
    """The SDK's tool objects (argument model, JSON schemas), built once and shared by every server listing them."""
    built: dict[str, Tool] = {}
    for spec in specs:
        tool = Tool.from_function(
            spec.fn,
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
        )
        if spec.patch is not None:
            _patch_arguments(tool.parameters, spec.patch)
        built[spec.name] = tool
    return built


def _patch_arguments(schema: dict[str, Any], patch: type[BaseModel]) -> None:
    """An update tool's PATCH arguments as in the REST body: non-nullable where its PATCH model refuses null,
    and no ``default: null`` (which reads as "clear" to a client that fills in defaults)."""
    nullable: frozenset[str] = getattr(patch, "nullable", frozenset())
    props = schema.get("properties", {})
    for name in patch.model_fields:
        if name in props:
            props[name] = patch_property(props[name], name in nullable)


async def _admitted(caller: Principal, tool: str) -> UUID | None:
    """The account's request limits (``core.limits``), as over REST; a refusal is a tool error naming the limit."""
    admit = partial(
        limits.admit,
        context.db(),
        get_limit_settings(),
        caller.account_id,
        expensive=limits.is_expensive_tool(tool),
    )
    try:
        return await anyio.to_thread.run_sync(admit)
    except DomainError as exc:
        if isinstance(exc, RateLimited):
            await limits.hold_refusal(get_limit_settings(), exc.retry_after)
        raise ToolError(domain_error_text(exc)) from None


async def _release(account_id: UUID, lease: UUID) -> None:
    try:
        await anyio.to_thread.run_sync(limits.release, context.db(), account_id, lease)
    except Exception:  # the lease expires by itself (LIMIT_EXPENSIVE_LEASE_S); the tool's answer stands
        logger.warning("could not release an expensive request's lease", exc_info=True)


class AgentmateMCP(MCPServer):
    """One MCP server over a set of tools.

    ``call_tool`` (the SDK's public hook for every ``tools/call``):
    1. the caller's scopes are checked against the tool's *before* its arguments are validated, so a key
       without the scope learns nothing but the missing scope;
    2. arguments the tool does not take are refused (the SDK would drop them silently);
    3. domain errors (``NotFound`` → "todo not found", ``ValidationFailed``, ``Conflict``, …) and pydantic
       errors become tool errors (``is_error``) whose text names each field and its allowed values.
    With ``list_by_scope`` (the aggregate endpoint) ``tools/list`` shows only the tools the caller may call.
    """

    def __init__(
        self,
        name: str,
        specs: Iterable[ToolSpec],
        *,
        instructions: str,
        list_by_scope: bool,
        built: dict[str, Tool] | None = None,
    ) -> None:
        specs = list(specs)
        built = built if built is not None else build_tools(specs)
        # log_level WARNING: MCPServer calls logging.basicConfig(); keep the SDK's per-request INFO lines out.
        super().__init__(
            name=name,
            instructions=instructions,
            version=SERVER_VERSION,
            log_level="WARNING",
            tools=[built[spec.name] for spec in specs],
        )
        self.specs = {spec.name: spec for spec in specs}
        self._arguments = {spec.name: spec.arguments for spec in specs}
        self.list_by_scope = list_by_scope

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        if not self.list_by_scope:
            return tools
        caller = context.principal_or_none()
        if caller is None:
            return []
        return [t for t in tools if all(caller.can(s) for s in self.specs[t.name].scopes)]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context_: Context[Any, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        spec = self.specs.get(name)
        held: tuple[UUID, UUID] | None = None  # (account, lease) of an expensive tool's concurrency slot
        if spec is not None:
            caller = context.principal_or_none()
            if caller is None:  # only when the auth middleware was bypassed
                raise ToolError(
                    "unauthorized: send an API key (X-Api-Key, Authorization: Bearer ak_…, ?api_key=)"
                )
            if not all(caller.can(s) for s in spec.scopes):
                raise ToolError(_scope_refusal(spec, caller.scopes))
            allowed = self._arguments[name]
            unknown = [arg for arg in arguments or {} if arg not in allowed]
            if unknown:
                raise ToolError(fields_text(unknown_arguments(unknown, allowed, spec.hints)))
            lease = await _admitted(caller, name)
            held = (caller.account_id, lease) if lease is not None else None
        try:
            with context.arguments_sent(arguments or {}):
                return await super().call_tool(name, arguments, context_)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, DomainError):
                raise ToolError(domain_error_text(cause)) from None
            if isinstance(cause, ValidationError):
                hints = spec.hints if spec else None
                raise ToolError(validation_error_text(cause, hints, arguments or {})) from None
            if cause is not None:  # unexpected: logged with its traceback, answered without internals
                logger.error("unhandled error in MCP tool", exc_info=cause, extra={"tool": name})
                raise ToolError(UNEXPECTED_TEXT) from None
            raise
        finally:
            if held is not None:
                await _release(*held)
            flush_metrics()  # the business metrics the tool's use case counted (as REST flushes per invocation)
