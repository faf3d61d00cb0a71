"""Importing this module registers the ``wiki_review`` job kind (functions/compile_worker/runners.py does)."""

from agentmate.knowledge.quality import review_service

review_service.register()
