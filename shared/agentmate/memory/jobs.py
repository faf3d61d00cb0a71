"""The ``retrieval_heal`` job kind: re-embed and re-index an account's projections whose embedding or vector write
failed (``service/projection.py`` queues it on a failure and runs it). Registered here and only here, as every
kind (agentmate/jobs/registry.py); functions/compile_worker/runners.py imports this module."""

from agentmate import jobs
from agentmate.memory.service.projection import HEAL_KIND, run_heal, sweep_heal

# One pass re-embeds up to 10 000 rows in batches of 64 (one embedding call each).
jobs.register(HEAL_KIND, run_heal, timeout_seconds=600)
jobs.register_sweeper(HEAL_KIND, sweep_heal)  # accounts left waiting without a job (see sweep_heal)
