"""Memory route group: the journal, durable memories, hybrid search, and working memory (/api/memory/working)."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.memory.router import router

try:
    from agentmate.working.router import router as working_router
except ImportError:  # working memory lands separately; the memory routes do not depend on it
    working_router = None

app = build_app([router] if working_router is None else [router, working_router])
handler = make_handler(app)
