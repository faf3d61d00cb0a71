"""The ``knowledge_sync`` job kind: a git sync that ran out of a request's time continues on the worker
(``service.sync_or_queue`` queues it, ``service.run_sync_job`` runs it). Registered here and only
here, as every kind (agentmate/jobs/registry.py); functions/compile_worker/runners.py imports this module."""

from agentmate import jobs
from agentmate.knowledge.sources.service import SYNC_JOB_BUDGET_S, SYNC_JOB_KIND, run_sync_job

jobs.register(SYNC_JOB_KIND, run_sync_job, timeout_seconds=SYNC_JOB_BUDGET_S)
