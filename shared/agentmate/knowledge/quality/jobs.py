"""The ``wiki_review`` job kind (``review_service.request_review`` queues it, ``review_service.run`` runs it). Registered
here and only here, as every kind (agentmate/jobs/registry.py); functions/compile_worker/runners.py imports this
module."""

from agentmate import jobs
from agentmate.knowledge.quality.review_service import KIND, mirror_job, run
from agentmate.knowledge.quality.settings import get_review_settings

jobs.register(
    KIND,
    run,
    timeout_seconds=lambda: get_review_settings().wiki_review_budget_seconds,
    on_change=mirror_job,
)
