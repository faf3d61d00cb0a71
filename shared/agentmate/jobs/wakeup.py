"""Wake-ups: after a job is committed (or rescheduled) a worker is told about it. In Lambda that is an SQS
message carrying the job id (JOBS_QUEUE_URL); locally the dev server's poller installs itself as the waker.
A wake-up that cannot be sent is logged and nothing else: the row is the truth and the sweep re-sends it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any
from uuid import UUID

from agentmate.core.observability import logger
from agentmate.jobs.settings import MAX_WAKE_DELAY_S, get_job_settings

Waker = Callable[[UUID, int], None]

_waker: Waker | None = None
_lock = threading.Lock()


def set_waker(waker: Waker | None) -> Waker | None:
    """Install the process's waker (the local poller; a test's recorder); returns the previous one."""
    global _waker
    with _lock:
        previous, _waker = _waker, waker
    return previous


def message_body(job_id: UUID) -> str:
    return json.dumps({"job_id": str(job_id)})


class SqsWaker:
    """Sends ``{"job_id": …}`` to the queue, with DelaySeconds for a retry due within SQS's 15 minutes."""

    def __init__(self, queue_url: str, client: Any = None) -> None:
        self.queue_url = queue_url
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3  # type: ignore[import-untyped]  # lazily: functions that never enqueue never import it

            self._client = boto3.client("sqs")
        return self._client

    def __call__(self, job_id: UUID, delay_seconds: int) -> None:
        self.client.send_message(
            QueueUrl=self.queue_url,
            MessageBody=message_body(job_id),
            DelaySeconds=max(0, min(delay_seconds, MAX_WAKE_DELAY_S)),
        )


_sqs: SqsWaker | None = None


def current_waker() -> Waker | None:
    global _sqs
    if _waker is not None:
        return _waker
    url = get_job_settings().jobs_queue_url
    if not url:
        return None
    if _sqs is None or _sqs.queue_url != url:
        _sqs = SqsWaker(url)
    return _sqs


def wake(job_id: UUID, delay_seconds: int = 0) -> bool:
    """Tell a worker about ``job_id`` (after the transaction that queued it committed). True when sent."""
    waker = current_waker()
    if waker is None:
        return False
    try:
        waker(job_id, delay_seconds)
    except Exception:
        logger.exception("job wake-up not sent; the sweep will re-send it", extra={"job_id": str(job_id)})
        return False
    return True
