"""Memory route group: the journal, durable memories, hybrid search, and working memory (/api/memory/working)."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.memory.router import router
from agentmate.working.router import router as working_router

app = build_app([router, working_router])
handler = make_handler(app)
