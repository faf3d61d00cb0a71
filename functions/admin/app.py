"""Admin route group: operator endpoints (retrieval repair)."""

from agentmate.admin.router import router
from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler

app = build_app([router])
handler = make_handler(app)
