"""The MCP modules: the one table every list of them is derived from.

``agentmate.mcp.registry`` loads the tool modules from it, ``/mcp``'s instructions name its modules, and the
system domain's ``/api/health`` and ``/api/llms.txt`` list its endpoints and purposes. Adding a module is one row
here (and its tool module declaring ``tools = ToolSet("<name>", ...)``). It lives in ``core`` because both the
system domain and the MCP layer above the domains read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class McpModule:
    name: str
    """The endpoint ``/mcp/<name>`` and the ToolSet's module name."""
    tools: str
    """The tool module (it declares ``tools = ToolSet(name, ...)``)."""
    purpose: str
    """What its tools are for, in a few words (llms.txt: "tools for <purpose>")."""
    scopes: tuple[str, ...]
    """Every scope its tools require (``core.scopes`` order): what an OAuth token for ``/mcp/<name>`` may carry
    (``auth.audience.scopes_for_resource``). Declared here so the auth function need not import the tools;
    ``tests/unit/test_oauth_resource_scopes.py`` keeps it equal to the registry's."""
    reads: tuple[str, ...] = ()
    """Read scopes its tools use when the caller holds them, beyond what they require: the context pack fills each
    layer the caller may read. An OAuth token for ``/mcp/<name>`` may carry these too."""


# Order is the order of the aggregate tool list and of every listing of the endpoints.
MODULE_TABLE: tuple[McpModule, ...] = (
    McpModule("todos", "agentmate.mcp.tools.todos", "todos", ("todos:r", "todos:rw")),
    McpModule("notes", "agentmate.mcp.tools.notes", "notes", ("notes:r", "notes:rw")),
    McpModule("reports", "agentmate.mcp.tools.reports", "reports", ("reports:r", "reports:rw")),
    McpModule("bookmarks", "agentmate.mcp.tools.bookmarks", "bookmarks", ("bookmarks:r", "bookmarks:rw")),
    McpModule("expenses", "agentmate.mcp.tools.expenses", "expenses", ("expenses:r", "expenses:rw")),
    McpModule(
        "memory",
        "agentmate.mcp.tools.memory",
        "the memory journal, durable memories (search, retire, forget), checkpoints and resume by session "
        "or scope, and working memory",
        ("memory:r", "memory:rw"),
    ),
    McpModule(
        "skills",
        "agentmate.mcp.tools.skills",
        "the skills registry (publish, sync, search, load instructions and resources, quality runs) and "
        "skill execution logs",
        ("skills:r", "skills:rw"),
    ),
    McpModule(
        "context",
        "agentmate.mcp.tools.context",
        "the context pack: one budgeted, cited context for a task from six layers",
        ("memory:r",),
        ("todos:r", "notes:r", "skills:r", "knowledge:r"),  # FACTS, SKILL and KNOWLEDGE (context.service)
    ),
    McpModule(
        "knowledge",
        "agentmate.mcp.tools.knowledge",
        "the knowledge registry: sources, documents, the catalog, chunk search with citations, discovery "
        "for a skill, resolution runs, the compiled wiki and its quality checks",
        ("skills:r", "knowledge:r", "knowledge:rw"),
    ),
)

MCP_MODULES: tuple[str, ...] = tuple(m.name for m in MODULE_TABLE)


def aggregate_instructions() -> str:
    """The instructions of the aggregate ``/mcp`` endpoint, naming every module of the table."""
    return (
        f"Agentmate: every tool the API key's scopes allow, across modules ({', '.join(MCP_MODULES)}). "
        "Tools outside the key's scopes are not listed. Each module also has its own endpoint, "
        "/mcp/<module>, with just its tools."
    )
