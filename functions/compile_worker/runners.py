"""The modules that register job kinds (``jobs.register`` at import). The worker function and the local
poller import this one module, so both run the same kinds. Add a line when a domain adds a kind."""

import agentmate.knowledge.quality.jobs  # wiki_review
import agentmate.knowledge.search.jobs  # knowledge_index
import agentmate.knowledge.sources.jobs  # knowledge_sync
import agentmate.knowledge.wiki.jobs  # wiki_compile, wiki_index
import agentmate.skills.jobs  # noqa: F401  (skills_compile_backfill, skills_index)
