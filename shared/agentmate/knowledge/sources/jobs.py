"""The ``knowledge_sync`` job kind: a git sync that ran out of a request's time continues on the worker
(``service.sync_or_queue`` queues it, ``service.run_sync_job`` runs it). Kinds are declared here and only here;
functions/compile_worker/runners.py imports this module. The kind-name constant lives with the code that enqueues the kind (this module imports it): this module imports
the runner, so a service importing a constant from here would close an import cycle."""

from agentmate import jobs
from agentmate.knowledge.sources.service import SYNC_JOB_BUDGET_S, SYNC_JOB_KIND, run_sync_job

jobs.register(SYNC_JOB_KIND, run_sync_job, timeout_seconds=SYNC_JOB_BUDGET_S)
