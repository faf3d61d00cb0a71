"""The one list of job modules (``jobs.py`` in the sub-package of each use case, registering its kinds at import;
the rule is in ``agentmate/jobs/registry.py``). The worker function and the local poller import this module, so
both run the same kinds. Add a line when a use case adds a ``jobs.py``."""

import agentmate.knowledge.quality.jobs  # wiki_review
import agentmate.knowledge.search.jobs  # knowledge_index
import agentmate.knowledge.sources.jobs  # knowledge_sync
import agentmate.knowledge.wiki.jobs  # wiki_compile, wiki_index
import agentmate.memory.jobs  # retrieval_heal
import agentmate.portability.jobs  # account_export, account_import, account_reindex
import agentmate.skills.compile.jobs  # skills_compile_backfill
import agentmate.skills.search.jobs  # noqa: F401  (skills_index)
