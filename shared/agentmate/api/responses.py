"""REST rendering of service results (the one place replay headers are assembled)."""

from __future__ import annotations

from typing import TypeVar

from fastapi.responses import Response
from pydantic import BaseModel

from agentmate.core.results import Created

M = TypeVar("M", bound=BaseModel)

# One rule for agents: every replay, header- or body-keyed, carries both spellings.
REPLAY_HEADERS = {"Idempotent-Replay": "true", "X-Idempotent-Replay": "true"}


def created(result: Created[M], *, replay_status: int = 201, status: int = 201) -> Response:
    """A create's response: ``status`` (201; 200 where nothing new was stored, e.g. a deduplicated memory) with the
    model; a replay carries the replay headers and ``replay_status`` (201 where a replay repeats the original
    answer, 200 where the spec answers a replay with 200). Serialised by pydantic's core in one step, as FastAPI
    serialises a route's response model (no Python dict, no ``json.dumps``)."""
    body = result.value.model_dump_json()
    if result.replay:
        return Response(
            body, status_code=replay_status, headers=REPLAY_HEADERS, media_type="application/json"
        )
    return Response(body, status_code=status, media_type="application/json")
