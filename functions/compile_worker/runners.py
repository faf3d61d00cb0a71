"""The modules that register job kinds (``jobs.register`` at import). The worker function and the local
poller import this one module, so both run the same kinds. Add a line when a domain adds a kind."""

import agentmate.knowledge.index  # knowledge_index
import agentmate.knowledge.quality.review_job  # wiki_review
import agentmate.knowledge.service  # knowledge_sync
import agentmate.knowledge.wiki.jobs  # wiki_compile, wiki_index
import agentmate.skills.compile.jobs  # noqa: F401  (skills_compile_backfill, skills_index)
