"""Knowledge route group: the registry (sources, revisions, documents, catalog) and the knowledge routes that
join it (index/search, discovery and resolutions, jobs, wiki, quality): one router each, listed below."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.knowledge.discovery.router import router as discovery_router
from agentmate.knowledge.jobs_router import router as jobs_router
from agentmate.knowledge.quality.router import router as quality_router
from agentmate.knowledge.search.router import router as search_router
from agentmate.knowledge.sources.router import router as registry_router
from agentmate.knowledge.wiki.router import router as wiki_router

ROUTERS = [registry_router, search_router, discovery_router, jobs_router, wiki_router, quality_router]

app = build_app(ROUTERS)
handler = make_handler(app)
