"""``/mcp/skills``: one ToolSet (``_toolset.tools``) filled by one tool file per face of the domain: the execution
records (``records``) and the registry (``registry``). Importing a file registers its tools, in this order."""

from agentmate.mcp.tools.skills import records as records
from agentmate.mcp.tools.skills import registry as registry
from agentmate.mcp.tools.skills._toolset import tools

__all__ = ["tools"]
