"""``/mcp/skills``: one ToolSet (``records.tools``) filled by one tool file per skills sub-domain."""

from agentmate.mcp.tools.skills.records import tools

__all__ = ["tools"]
