from __future__ import annotations

from fastapi.responses import JSONResponse

from agentmate.core.idempotency import Outcome


def created(outcome: Outcome) -> JSONResponse:
    """The create's response; a replay carries ``Idempotent-Replay: true`` and the original status."""
    headers = {"Idempotent-Replay": "true"} if outcome.replay else None
    return JSONResponse(outcome.body, status_code=outcome.status, headers=headers)
