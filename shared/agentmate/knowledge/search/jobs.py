"""The ``knowledge_index`` job kind: indexing past a request's budget continues on the worker (``index.index_active``
queues it, ``index.run_job`` runs it). Kinds are declared here and only here; functions/compile_worker/runners.py
imports this module. The kind-name constant lives with the code that enqueues the kind (this module imports it): this module imports
the runner, so a service importing a constant from here would close an import cycle."""

from agentmate import jobs
from agentmate.knowledge.search.index import INDEX_JOB_KIND, JOB_TIMEOUT_S, run_job

jobs.register(INDEX_JOB_KIND, run_job, timeout_seconds=JOB_TIMEOUT_S)
