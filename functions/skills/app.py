"""Skills route group: skill execution logs and published versions."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.skills.router import router

app = build_app([router])
handler = make_handler(app)
