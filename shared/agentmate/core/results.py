"""What services hand their transports: typed models, never HTTP statuses or JSON dicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

M = TypeVar("M")


@dataclass(frozen=True)
class Created(Generic[M]):
    """The result of a create: the model, and whether it is the stored answer to an earlier request with the
    same Idempotency-Key (REST adds the replay headers; MCP returns ``value`` either way)."""

    value: M
    replay: bool = False
