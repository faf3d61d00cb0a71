"""Knowledge wiki route group: the LLM-compiled wiki (compile, builds and their pages, the wiki index and search)
and its quality checks (lint, review, validation), split from the knowledge function so that each declares about
half of the knowledge routes at init (issue 26 §3, docs/benchmarks.md "Issue 26: cold start"). Its paths are the
``/api/knowledge/wiki``, ``/builds``, ``/compile`` and ``/validation`` prefixes in functions/routes.py; the job
reads of every knowledge kind (``/api/knowledge/jobs``) stay with the knowledge function."""

from agentmate.api.app import build_app
from agentmate.api.lambda_handler import make_handler
from agentmate.knowledge.quality.router import router as quality_router
from agentmate.knowledge.wiki.router import router as wiki_router

ROUTERS = [wiki_router, quality_router]

app = build_app(ROUTERS)
handler = make_handler(app)
