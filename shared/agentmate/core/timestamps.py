"""RFC 3339 timestamps, and only those: pydantic alone also takes Unix numbers (``start=0.5``) and naive times."""

from __future__ import annotations

import re
from datetime import datetime

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
MESSAGE = "must be an RFC 3339 timestamp with an offset, e.g. 2026-12-01T10:00:00Z"


def rfc3339(value: object) -> object:
    """A ``BeforeValidator``: RFC 3339 text (or an already parsed datetime, or None) passes, anything else is
    refused with one message."""
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str) and RFC3339.match(value):
        return value
    raise ValueError(MESSAGE)
