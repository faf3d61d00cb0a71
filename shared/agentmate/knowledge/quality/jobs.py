"""The ``wiki_review`` job kind, declared here and only here (functions/compile_worker/runners.py imports this
module). ``review_service.register()`` holds the ``jobs.register`` call for now."""

from agentmate.knowledge.quality import review_service

review_service.register()
