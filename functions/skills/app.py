"""Skills route group: skill execution logs, published versions and the registry (sources, packages, compiled
artifacts, catalog, search, quality runs)."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.skills.router import router

app = build_app([router])
handler = make_handler(app)
