"""Auth route group: register, login, me, API keys; plus the public health and schema endpoints."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.auth.router import router as auth_router
from agentmate.system.router import router as system_router

app = build_app([auth_router, system_router])
handler = make_handler(app)
