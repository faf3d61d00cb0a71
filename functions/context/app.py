"""Context pack route group."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.context.router import router

app = build_app([router])
handler = make_handler(app)
