"""MCP (Streamable HTTP) surface of Agentmate: thin tools over the same services REST uses.

Runs only in the long-lived MCP container (``uvicorn functions.mcp.app:app``) and the local runtime; REST
Lambdas never import this package (``mcp`` costs ~0.8 s of import time).

- ``registry``  — which tool modules exist (one line per module) and the ``ToolSet``/``ToolSpec`` types.
- ``tools/*``   — one module per business domain: typed tool functions, each with its scope and REST twin.
- ``server``    — the ``MCPServer`` subclass that enforces scopes and turns domain errors into tool errors.
- ``auth``      — API key extraction and the per-request ``Principal`` (a contextvar).
- ``session``   — stateless, signed ``Mcp-Session-Id`` values.
- ``app``       — the ASGI gateway: routing, 401/404 problems, session ids, lifespan.
"""
