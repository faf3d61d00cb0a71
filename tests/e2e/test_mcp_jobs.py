"""knowledge_job_get over real HTTP (official SDK client): an agent polls the job a call answered with."""

from __future__ import annotations

import os
import uuid

import anyio
import pytest

from agentmate import jobs
from agentmate.core.db import Database

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio


def _enqueue(account_id: str) -> jobs.Job:
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    try:
        with db.tenant(account_id) as conn:
            return jobs.enqueue(conn, account_id=uuid.UUID(account_id), kind="mcp_test", payload={"n": 1})
    finally:
        db.close()


async def test_a_job_is_read_by_its_account_and_not_found_for_another(base_url, account, other_account):
    job = _enqueue(account.account_id)
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:r")}) as s:
            got = await call(s, "knowledge_job_get", job_id=str(job.id))
            assert (got["id"], got["status"], got["kind"], got["payload"]) == (
                str(job.id),
                "queued",
                "mcp_test",
                {"n": 1},
            )
            assert "lease_owner" not in got
        async with mcp_session(
            f"{base_url}/mcp/knowledge", {"X-Api-Key": other_account.key("knowledge:r")}
        ) as s:
            assert await refused(s, "knowledge_job_get", job_id=str(job.id)) == "job not found"
