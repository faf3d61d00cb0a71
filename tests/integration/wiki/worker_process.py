"""A job worker in a process of its own (``python -m tests.integration.wiki.worker_process <job_id>``): claims one
wiki_compile job and runs it, as the Lambda worker does. The test that starts it kills it mid-compile."""

from __future__ import annotations

import os
import sys
import uuid

import agentmate.knowledge.wiki.jobs  # noqa: F401  (registers wiki_compile, as the worker's runners do)
from agentmate.core.db import Database
from agentmate.jobs.worker import Worker


def main() -> None:
    db = Database(os.environ["DATABASE_URL"], max_size=3)
    report = Worker(db, only_kinds=["wiki_compile"], wake=lambda *a: True).run_one(
        job_id=uuid.UUID(sys.argv[1])
    )
    print(report.outcome, flush=True)


if __name__ == "__main__":
    main()
