"""One module per ``/mcp/<module>`` endpoint; each exposes ``tools = ToolSet(...)`` (see ``registry``)."""
