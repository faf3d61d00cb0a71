"""``Retry-After`` from an HTTP provider (chat completions, embeddings), read as data: RFC 9110 §10.2.3
delay-seconds (ASCII digits) or an HTTP-date, clamped; anything else (``1e300``, ``inf``, ``-5``, ``1.5``, garbage)
is ignored and the caller's own backoff applies. One parser for every provider client (issue 20)."""

from __future__ import annotations

import math
import time

MAX_RETRY_AFTER_S = 86_400.0  # a day; callers clamp further to their own backoff caps


def parse_retry_after(
    value: str | None, *, cap: float = MAX_RETRY_AFTER_S, now: float | None = None
) -> float | None:
    """Seconds to wait from ``now`` (default: the current time), clamped to 0..``cap``; None when the header is
    absent or not one of the two forms."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():  # any length: never int() a 400-digit string, just clamp it
        return float(min(int(text), cap)) if len(text) <= 12 else cap
    if not text or len(text) > 64:  # an HTTP-date is 29 characters
        return None
    import email.utils  # rare path; keep it off the import-time bill
    from datetime import UTC

    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None:  # "-0000": RFC 5322's "UTC, origin unknown"
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    except (TypeError, ValueError, OverflowError, IndexError, OSError):
        return None
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), cap)
