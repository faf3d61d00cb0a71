"""Which route group (Lambda function) serves which path prefix.

template.yaml declares the same mapping for API Gateway; the local runtime dispatches with this table so
local behaviour is Lambda behaviour, and tests/contract/test_route_groups.py keeps the two in step (and the
functions/<group>/app.py of each group, and the MCP registry with the /api/health endpoint list).
"""

ROUTE_GROUPS: dict[str, tuple[str, ...]] = {
    "functions.auth.app": (
        "/api/auth",
        "/api/oauth",
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource",
        "/api/health",
        "/api/schema",
        "/api/tags",
    ),
    "functions.todos.app": ("/api/todos",),
    "functions.notes.app": ("/api/notes",),
    "functions.reports.app": ("/api/reports",),
    "functions.bookmarks.app": ("/api/bookmarks",),
    "functions.expenses.app": ("/api/expenses",),
    "functions.skills.app": ("/api/skills",),
    "functions.memory.app": ("/api/memory",),
    "functions.context.app": ("/api/context",),
    "functions.admin.app": ("/api/admin",),
    "functions.knowledge.app": ("/api/knowledge",),
    # The wiki and its quality checks: a second knowledge function, so each one's cold start declares about half
    # of the knowledge routes (issue 26 §3). Longer prefixes than /api/knowledge, so they win (local dispatch and
    # API Gateway alike).
    "functions.knowledge_wiki.app": (
        "/api/knowledge/wiki",
        "/api/knowledge/builds",
        "/api/knowledge/compile",
        "/api/knowledge/validation",
    ),
    "functions.account.app": ("/api/account",),
}

# Unmatched /api paths go to the auth group (template.yaml's ApiFallback route), whose 404 is problem+json and
# which serves GET /api/openapi.json.
API_FALLBACK = "functions.auth.app"
