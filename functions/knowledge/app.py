"""Knowledge route group: one router per knowledge sub-package (sources, catalog, search, discovery) plus the job
reads of every knowledge kind, listed below in the order of the OpenAPI document. The wiki and its quality checks
(wiki, builds, compile, validation) are their own function, functions/knowledge_wiki/app.py (issue 26 §3)."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.knowledge.catalog.router import router as catalog_router
from agentmate.knowledge.discovery.router import router as discovery_router
from agentmate.knowledge.jobs_router import router as jobs_router
from agentmate.knowledge.search.router import router as search_router
from agentmate.knowledge.sources.router import router as sources_router

ROUTERS = [
    sources_router,
    catalog_router,
    search_router,
    discovery_router,
    jobs_router,
]

app = build_app(ROUTERS)
handler = make_handler(app)
