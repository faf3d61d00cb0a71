from __future__ import annotations

from fastapi.responses import JSONResponse

from agentmate.core.idempotency import Outcome

# One rule for agents: every replay, header- or body-keyed, carries both spellings.
REPLAY_HEADERS = {"Idempotent-Replay": "true", "X-Idempotent-Replay": "true"}


def created(outcome: Outcome) -> JSONResponse:
    """The create's response; a replay carries the replay headers and the original status."""
    headers = REPLAY_HEADERS if outcome.replay else None
    return JSONResponse(outcome.body, status_code=outcome.status, headers=headers)
