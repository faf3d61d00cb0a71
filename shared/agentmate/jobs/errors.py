"""How a runner reports its outcome besides returning: retry later, never retry, or hand the job back."""

from __future__ import annotations


class JobError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Retryable(JobError):
    """Try again after the backoff (30 s x 2^(attempt-1), capped) or ``retry_after`` seconds when larger
    (e.g. a provider's Retry-After). Becomes a failure when the attempts are used up."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class Permanent(JobError):
    """Would fail the same way again (a 4xx, a truncated reply, a failed check): the job fails now."""


class Yield(JobError):
    """The runner stops before finishing because time or the process is running out (a shutdown): the job goes
    back to the queue, due now, and the attempt is refunded."""


class LeaseLost(JobError):
    """This worker no longer holds the job (its lease expired and another worker claimed it, or it was
    cancelled): whatever it was about to write is discarded."""
