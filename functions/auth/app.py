"""Auth route group: register, login, me, API keys, OAuth grants; the OAuth authorization server (metadata,
authorize, token, revoke, register, the device grant) and the protected-resource metadata (RFC 9728); the public
health and schema endpoints; the tag roster; the login, consent and device-verification pages."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.auth.oauth.device_router import router as device_router
from agentmate.auth.oauth.pages import router as pages_router
from agentmate.auth.oauth.resource_router import router as resource_router
from agentmate.auth.oauth.router import router as oauth_router
from agentmate.auth.router import router as auth_router
from agentmate.system.router import router as system_router
from agentmate.tags.router import router as tags_router

app = build_app(
    [auth_router, oauth_router, device_router, pages_router, resource_router, system_router, tags_router]
)
handler = make_handler(app)
