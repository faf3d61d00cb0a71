"""Scalar types for request bodies that accept exactly what the OpenAPI says (pydantic's lax mode would also
take ``0``/``1`` for a boolean, ``false`` for a number and a Unix number for a timestamp)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BeforeValidator, Strict, StrictBool, StrictInt

from agentmate.core.timestamps import rfc3339

# Strict types keep Field constraints visible in the schema (a BeforeValidator before them would hide them).
Bool = StrictBool
Int = StrictInt  # 17 (not 17.0, "17" or true)
Number = Annotated[float, Strict()]  # an int or a float (not "0.5" or false)
Timestamp = Annotated[datetime, BeforeValidator(rfc3339)]

__all__ = ["Bool", "Int", "Number", "Timestamp"]
