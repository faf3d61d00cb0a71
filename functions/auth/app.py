"""Auth route group: register, login, me, API keys; the public health and schema endpoints; the tag roster."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.auth.router import router as auth_router
from agentmate.system.router import router as system_router
from agentmate.tags.router import router as tags_router

app = build_app([auth_router, system_router, tags_router])
handler = make_handler(app)
