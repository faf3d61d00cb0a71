"""``/mcp/knowledge``: one ToolSet (``_toolset.tools``) filled by one tool file per knowledge sub-package
(``agentmate.knowledge.<name>``, whose ``router.py`` is the REST twin; ``jobs`` twins ``knowledge.jobs_router``).
Importing a file registers its tools, in import order: that order is the tool list's, so it is kept by hand."""

# isort: off
from agentmate.mcp.tools.knowledge import discovery as discovery
from agentmate.mcp.tools.knowledge import jobs as jobs
from agentmate.mcp.tools.knowledge import quality as quality
from agentmate.mcp.tools.knowledge import sources as sources
from agentmate.mcp.tools.knowledge import catalog as catalog
from agentmate.mcp.tools.knowledge import search as search
from agentmate.mcp.tools.knowledge import wiki as wiki
from agentmate.mcp.tools.knowledge._toolset import tools
# isort: on

__all__ = ["tools"]
