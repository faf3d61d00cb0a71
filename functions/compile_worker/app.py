"""The job worker: an SQS-triggered Lambda (batch size 1, ReportBatchItemFailures) plus the scheduled sweep.

The job row is the queue and the truth; a message only wakes a worker. A message whose job is not claimable now
(leased elsewhere, backing off, finished, unknown) is acknowledged and dropped, never failed into redelivery;
only an infrastructure failure (the database unreachable) fails the record, and SQS redelivers it (then the DLQ).
The EventBridge schedule invokes the same function with ``{"sweep": true}``: it re-sends the jobs whose wake-up
was lost, whose lease expired, or whose backoff was too long for an SQS delay.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

import functions.compile_worker.runners  # noqa: F401  (registers the job kinds)
from agentmate.core import snapstart
from agentmate.core.db import get_database
from agentmate.core.observability import flush_metrics, logger
from agentmate.jobs.settings import get_job_settings
from agentmate.jobs.worker import Worker, check_fits, sweep

# A failed record comes back in batchItemFailures even when it is the whole batch (batch size 1): SQS redelivers it
# either way, and the response stays one shape.
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
_worker: Worker | None = None


def check_configuration() -> None:
    """Refuse to start (an init error naming the fix) when a kind's timeout cannot fit the function's."""
    timeout = get_job_settings().jobs_function_timeout_seconds
    if timeout is not None:
        check_fits(timeout)


check_configuration()


@snapstart.before_snapshot
def forget_worker() -> None:
    """The worker holds a Database (closed by core.db's hook): forget it, so a restore builds one lazily."""
    global _worker
    _worker = None


snapstart.install()


def worker() -> Worker:
    global _worker
    if _worker is None:
        _worker = Worker(get_database())
    return _worker


def job_id_of(body: str) -> UUID | None:
    try:
        data = json.loads(body)
        return UUID(str(data["job_id"]))
    except (ValueError, TypeError, KeyError):
        return None


def record_handler(record: SQSRecord, lambda_context: Any) -> str:
    job_id = job_id_of(record.body)
    if job_id is None:
        # A message no job can be found for is dropped: redelivering it would never make it valid.
        logger.warning("job wake-up without a job id: dropped", extra={"message_id": record.message_id})
        return "dropped"

    def remaining() -> float:
        return float(lambda_context.get_remaining_time_in_millis()) / 1000.0

    try:
        report = worker().run_one(job_id=job_id, remaining_seconds=remaining)
    except Exception:
        logger.exception("job wake-up failed; SQS will redeliver it", extra={"job_id": str(job_id)})
        raise
    logger.info("job wake-up handled", extra={"job_id": str(job_id), "outcome": report.outcome})
    return report.outcome


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        if event.get("sweep") is True:
            return {"sent": sweep(get_database())}
        return process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    finally:
        flush_metrics()
