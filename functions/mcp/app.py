"""MCP container app (long-lived; never behind Mangum): ``uvicorn functions.mcp.app:app --port 8080``.

Serves ``/mcp`` and ``/mcp/<module>``; the local runtime mounts the same app at ``/mcp``.
"""

from agentmate.mcp.app import build_mcp_app

app = build_mcp_app()
