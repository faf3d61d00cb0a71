"""``MCPServer`` with Agentmate's rules: per-tool scopes, domain errors as tool errors, scope-filtered lists."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from agentmate.core.errors import DomainError
from agentmate.mcp import context
from agentmate.mcp.errors import domain_error_text, validation_error_text
from agentmate.mcp.registry import ToolSpec

SERVER_VERSION = "1.0.0"


def _scope_refusal(spec: ToolSpec, granted: Iterable[str]) -> str:
    have = ", ".join(granted) or "none"
    return (f"insufficient scope: {spec.name} requires {spec.scope} (this API key has: {have}). "
            "Use a key that holds this scope; X:rw implies X:r.")


class AgentmateMCP(MCPServer):
    """One MCP server over a set of tools.

    Every tool is checked against the caller's scopes *before* its arguments are validated, so a key
    without the scope learns nothing but the missing scope. With ``list_by_scope`` (the aggregate endpoint)
    ``tools/list`` only shows the tools the caller's key may call.
    """

    def __init__(self, name: str, specs: Iterable[ToolSpec], *, instructions: str, list_by_scope: bool) -> None:
        # log_level WARNING: MCPServer calls logging.basicConfig(); keep the SDK's per-request INFO lines out.
        super().__init__(name=name, instructions=instructions, version=SERVER_VERSION, log_level="WARNING")
        self.specs: dict[str, ToolSpec] = {}
        self.list_by_scope = list_by_scope
        for spec in specs:
            self.specs[spec.name] = spec
            self.add_tool(
                spec.fn, name=spec.name, title=spec.title, description=spec.description,
                annotations=ToolAnnotations(
                    title=spec.title, read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                    idempotent_hint=spec.idempotent, open_world_hint=False,
                ),
            )

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        if not self.list_by_scope:
            return tools
        caller = context.principal_or_none()
        if caller is None:
            return []
        return [t for t in tools if caller.can(self.specs[t.name].scope)]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context_: Context[Any, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        spec = self.specs.get(name)
        if spec is not None:
            caller = context.principal_or_none()
            if caller is None:  # only when the auth middleware was bypassed
                raise ToolError("unauthorized: send an API key (X-Api-Key, Authorization: Bearer ak_…, ?api_key=)")
            if not caller.can(spec.scope):
                raise ToolError(_scope_refusal(spec, caller.scopes))
        try:
            return await super().call_tool(name, arguments, context_)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, DomainError):
                raise ToolError(domain_error_text(cause)) from None
            if isinstance(cause, ValidationError):
                raise ToolError(validation_error_text(cause)) from None
            raise
