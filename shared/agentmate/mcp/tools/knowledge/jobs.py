"""Job reads on ``/mcp/knowledge``: an agent whose call was answered with a queued job (a wiki compile, a large
skills backfill or index run) polls it here. ``knowledge_queue_stats`` is the wiki's tool (mcp/tools/knowledge/wiki.py)
over the same ``jobs.queue_stats``.
REST twin: ``agentmate.knowledge.jobs_router``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate import jobs
from agentmate.mcp.context import db, principal
from agentmate.mcp.tools.knowledge._toolset import tools


@tools.tool("knowledge:r", rest="GET /api/knowledge/jobs/{job_id}", title="Get a queued job")
def knowledge_job_get(
    job_id: Annotated[UUID, Field(description="The `job.id` a call answered with (202 over REST)")],
) -> jobs.JobView:
    """One job of this account: status (queued, running, succeeded, failed, cancelled), attempts, next attempt,
    last error, result (the counts or ids the work produced) and usage. Poll until status is succeeded or failed.
    Requires knowledge:r."""
    return jobs.read_job(db(), principal().account_id, job_id)
