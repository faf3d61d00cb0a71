"""Keep the wiki retrieval namespace on the build each source serves: every activation (a compile with
``activate``, ``POST /builds/{id}/activate``, a rollback) re-indexes the source's active build, so wiki search is
not left reporting the source stale until someone calls ``POST /api/knowledge/wiki/index``.

A small build (at most ``MAX_INLINE_PAGES`` pages) is indexed inline by the activate request; a larger one, a
compile's activation (already on the worker) and an inline run that failed are queued as a ``wiki_index`` job on
the source (``agentmate.jobs``; one unfinished job per source, a second activation hands back the first). The
job indexes whatever build is active when it runs, and again if the source was activated meanwhile.
"""

from __future__ import annotations

from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn

INDEX_JOB_KIND = "wiki_index"
# Pages an activate request indexes itself (each page is a few chunks; with a remote embedder ~1 s per slice).
MAX_INLINE_PAGES = 60
INDEX_TIMEOUT_S = 600.0


def enqueue(conn: Conn, *, account_id: UUID, source_id: UUID) -> jobs.Job:
    """Queue the re-index of ``source_id`` inside the caller's transaction (wake it after the commit)."""
    return jobs.enqueue(
        conn,
        account_id=account_id,
        kind=INDEX_JOB_KIND,
        subject_id=source_id,
        payload={"source_id": str(source_id)},
    )
