"""Account portability route group (export and import)."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.portability.router import router

app = build_app([router])
handler = make_handler(app)
