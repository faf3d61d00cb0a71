"""Response helpers shared by the skills sub-packages' routers (the REST adapters only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from fastapi import Response
from fastapi.responses import JSONResponse

if TYPE_CHECKING:
    from agentmate.jobs.schemas import JobView

NO_STORE = {"Cache-Control": "private, no-store"}
QUEUED = "Too much for one request: queued as the job in `job` (GET /api/knowledge/jobs/{job.id})"


class QueuedReport(Protocol):
    """A compile or index report: its items, or the job that does the work when it was too much inline."""

    @property
    def job(self) -> JobView | None: ...

    def model_dump(self, *, mode: Literal["json"]) -> dict[str, Any]: ...


def no_store(response: Response) -> None:
    response.headers.update(NO_STORE)


def queued_or_done(report: QueuedReport) -> JSONResponse:
    return JSONResponse(report.model_dump(mode="json"), status_code=202 if report.job is not None else 200)
