"""``/mcp/knowledge``: one ToolSet (``_toolset.tools``) filled by one tool file per knowledge area. Importing a
file registers its tools; add yours below (search, discovery, wiki, quality)."""

from agentmate.mcp.tools.knowledge import discovery as discovery
from agentmate.mcp.tools.knowledge import jobs as jobs
from agentmate.mcp.tools.knowledge import quality as quality
from agentmate.mcp.tools.knowledge import registry as registry
from agentmate.mcp.tools.knowledge import search as search
from agentmate.mcp.tools.knowledge import wiki as wiki
from agentmate.mcp.tools.knowledge._toolset import tools

__all__ = ["tools"]
