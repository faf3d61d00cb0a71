"""The portability job kinds: ``account_export``, ``account_import`` and ``account_reindex`` (after an import).
An export's or import's row mirrors its job's status (``on_change``)."""

from __future__ import annotations

from agentmate import jobs
from agentmate.core.db import Conn
from agentmate.jobs.registry import OnChange
from agentmate.portability import repository as repo
from agentmate.portability.runs import export, load, reindex
from agentmate.portability.service import EXPORT_KIND, IMPORT_KIND, REINDEX_KIND

JOB_TIMEOUT_S = 300.0


def _mirror(kind: repo.Kind) -> OnChange:
    def on_change(conn: Conn, job: jobs.Job) -> None:
        repo.mirror(
            conn, kind, account_id=job.account_id, job_id=job.id, status=job.status, error=job.last_error
        )

    return on_change


jobs.register(EXPORT_KIND, export, timeout_seconds=JOB_TIMEOUT_S, on_change=_mirror("account_exports"))
jobs.register(IMPORT_KIND, load, timeout_seconds=JOB_TIMEOUT_S, on_change=_mirror("account_imports"))
jobs.register(REINDEX_KIND, reindex, timeout_seconds=JOB_TIMEOUT_S)
