"""Scalar types for request bodies that accept exactly what the OpenAPI says (pydantic's lax mode would also
take ``0``/``1`` for a boolean, ``false`` for a number and a Unix number for a timestamp)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BeforeValidator, Strict, StrictBool, StrictInt

from agentmate.core.timestamps import rfc3339


def _integral(value: object) -> object:
    # JSON Schema's "integer" includes 17.0 (a number with a zero fraction), so the server takes it too.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Strict types keep Field constraints visible in the schema.
Bool = StrictBool
Int = Annotated[StrictInt, BeforeValidator(_integral)]  # 17 or 17.0 (not 17.5, "17" or true)
Number = Annotated[float, Strict()]  # an int or a float (not "0.5" or false)
Timestamp = Annotated[datetime, BeforeValidator(rfc3339)]

__all__ = ["Bool", "Int", "Number", "Timestamp"]
