"""The ``knowledge_index`` job kind: indexing past a request's budget continues on the worker (``index.index_active``
queues it, ``index.run_job`` runs it); and ``knowledge_index_heal``: chunks left without a vector by an embedder or
vector-index failure are indexed again once it is back (``index.schedule_heal`` queues it, ``index.run_heal``
runs it, and the sweep ``index.sweep_heal`` queues it again for sources still partial after a job used up its
attempts). Registered here and only here, as every kind (agentmate/jobs/registry.py);
functions/compile_worker/runners.py imports this module."""

from agentmate import jobs
from agentmate.knowledge.search.index import (
    HEAL_KIND,
    INDEX_JOB_KIND,
    JOB_TIMEOUT_S,
    run_heal,
    run_job,
    sweep_heal,
)

jobs.register(INDEX_JOB_KIND, run_job, timeout_seconds=JOB_TIMEOUT_S)
jobs.register(HEAL_KIND, run_heal, timeout_seconds=JOB_TIMEOUT_S)  # index.schedule_heal queues it
jobs.register_sweeper(HEAL_KIND, sweep_heal)  # sources left partial without a heal job (see sweep_heal)
