"""functions/compile_worker driven the way AWS drives it: SQS events built from messages received from a (moto)
queue, the EventBridge schedule's sweep payload, a Lambda context whose remaining time counts down."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from agentmate import jobs
from agentmate.core.db import Database, get_database
from agentmate.jobs import wakeup
from agentmate.jobs.settings import JobSettings
from agentmate.jobs.worker import Worker
from tests.apigw import LambdaContext

QUEUE = "agentmate-jobs"


class Queue:
    def __init__(self, client: Any, url: str) -> None:
        self.client, self.url = client, url

    def counts(self) -> tuple[int, int]:
        """(visible, delayed) messages."""
        attrs = self.client.get_queue_attributes(
            QueueUrl=self.url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        return int(attrs["ApproximateNumberOfMessages"]), int(attrs["ApproximateNumberOfMessagesDelayed"])

    def receive_event(self) -> dict[str, Any]:
        """What the event source mapping hands the function: the received messages as Lambda SQS records."""
        got = self.client.receive_message(
            QueueUrl=self.url, MaxNumberOfMessages=1, AttributeNames=["All"], MessageAttributeNames=["All"]
        ).get("Messages", [])
        return {
            "Records": [
                {
                    "messageId": m["MessageId"],
                    "receiptHandle": m["ReceiptHandle"],
                    "body": m["Body"],
                    "attributes": m.get("Attributes", {}),
                    "messageAttributes": m.get("MessageAttributes", {}),
                    "md5OfBody": m["MD5OfBody"],
                    "eventSource": "aws:sqs",
                    "eventSourceARN": f"arn:aws:sqs:eu-west-1:123456789012:{QUEUE}",
                    "awsRegion": "eu-west-1",
                }
                for m in got
            ]
        }

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r["body"]) for r in self.receive_event()["Records"]]


@pytest.fixture
def queue(monkeypatch) -> Iterator[Queue]:
    for name, value in {
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("sqs", region_name="eu-west-1")
        url = client.create_queue(QueueName=QUEUE)["QueueUrl"]
        previous = wakeup.set_waker(wakeup.SqsWaker(url, client))
        try:
            yield Queue(client, url)
        finally:
            wakeup.set_waker(previous)


@pytest.fixture
def worker_app():
    from functions.compile_worker import app as worker_app

    return worker_app


def _context(seconds_left: float = 900) -> LambdaContext:
    return LambdaContext(
        function_name="agentmate-compile-worker", deadline_ms=int((time.time() + seconds_left) * 1000)
    )


def _enqueue_and_wake(db: Database, account_id: str, kind: str, **kw: Any) -> jobs.Job:
    with db.tenant(account_id) as conn:
        job = jobs.enqueue(conn, account_id=uuid.UUID(account_id), kind=kind, **kw)
    assert jobs.wake(job.id)  # after the commit
    return job


def test_an_enqueued_job_is_woken_by_its_message_and_run_by_the_handler(
    worker_app, queue, db, make_kind, account, rows
):
    # Given a job enqueued and woken through SQS
    kind = make_kind()
    job = _enqueue_and_wake(db, account.account_id, kind.name)
    event = queue.receive_event()
    assert [json.loads(r["body"]) for r in event["Records"]] == [{"job_id": str(job.id)}]
    # When the event source mapping invokes the function with it
    response = worker_app.handler(event, _context())
    # Then the job ran and the message is acknowledged
    assert response == {"batchItemFailures": []}
    assert [j.id for j in kind.runs] == [job.id]
    assert rows.get(job.id)["status"] == "succeeded"


def test_a_message_delivered_twice_in_one_batch_or_again_later_runs_the_job_once(
    worker_app, queue, db, make_kind, account, rows
):
    # Given a job's wake-up that SQS delivers twice in one batch (at-least-once delivery)
    kind = make_kind()
    job = _enqueue_and_wake(db, account.account_id, kind.name)
    event = queue.receive_event()
    copy = {**event["Records"][0], "messageId": str(uuid.uuid4())}
    doubled = {"Records": [event["Records"][0], copy]}
    # When the function gets the batch, and later the same message once more (a late redelivery)
    first = worker_app.handler(doubled, _context())
    late = worker_app.handler({"Records": [copy]}, _context())
    # Then the job ran exactly once and every copy is acknowledged
    assert first == {"batchItemFailures": []} and late == {"batchItemFailures": []}
    assert [j.id for j in kind.runs] == [job.id]
    assert rows.get(job.id)["status"] == "succeeded"


@pytest.mark.parametrize("state", ["finished", "leased_elsewhere", "backing_off", "unknown_job", "not_a_job"])
def test_a_message_whose_job_is_not_claimable_now_is_acknowledged_and_dropped(
    worker_app, queue, db, make_kind, account, rows, state
):
    kind = make_kind()
    job = _enqueue_and_wake(db, account.account_id, kind.name)
    event = queue.receive_event()
    if state == "finished":
        rows.update(job.id, "status = 'succeeded'")
    elif state == "leased_elsewhere":
        rows.update(
            job.id, "status = 'running', lease_owner = 'other', lease_expires_at = now() + interval '1 hour'"
        )
    elif state == "backing_off":
        rows.update(job.id, "next_attempt_at = now() + interval '5 minutes'")
    elif state == "unknown_job":
        event["Records"][0]["body"] = json.dumps({"job_id": str(uuid.uuid4())})
    else:
        event["Records"][0]["body"] = "{not json"
    # When the message arrives
    response = worker_app.handler(event, _context())
    # Then it is acknowledged (no batch item failure, so no redelivery) and nothing ran
    assert response == {"batchItemFailures": []}
    assert kind.runs == []


def test_a_database_outage_fails_the_record_so_sqs_redelivers_it(
    worker_app, queue, db, make_kind, account, monkeypatch
):
    kind = make_kind()
    _enqueue_and_wake(db, account.account_id, kind.name)
    event = queue.receive_event()
    unreachable = Database(
        "postgresql://agentmate_app@127.0.0.1:1/agentmate", max_size=2, connect_timeout_s=0.2
    )
    monkeypatch.setattr(worker_app, "_worker", Worker(unreachable))
    response = worker_app.handler(event, _context())
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    assert kind.runs == []


def test_a_retry_due_within_15_minutes_is_a_delayed_message_and_a_later_one_is_left_to_the_sweep(
    worker_app, queue, db, make_kind, account, rows, monkeypatch
):
    # Given a runner that fails retryably: first "try again soon", then "come back in an hour", and a deployment
    # whose backoff cap allows an hour (a Retry-After is clamped to the cap)
    def run(ctx: jobs.RunContext) -> None:
        raise (
            jobs.Retryable("HTTP 503")
            if len(kind.runs) == 1
            else jobs.Retryable("HTTP 429", retry_after=3600)
        )

    monkeypatch.setattr(
        worker_app,
        "_worker",
        Worker(get_database(), settings=JobSettings(wiki_worker_max_retry_backoff_seconds=3600)),
    )
    rows.quiet_earlier_jobs()
    kind = make_kind(run)
    job = _enqueue_and_wake(db, account.account_id, kind.name, max_attempts=5)
    # When the first attempt fails
    assert worker_app.handler(queue.receive_event(), _context()) == {"batchItemFailures": []}
    # Then a new message waits in the queue, delayed until the 30 s backoff is over
    assert queue.counts() == (0, 1)
    assert rows.get(job.id)["attempts"] == 1
    # When the second attempt (its backoff over) is told to wait an hour
    rows.backoff_over(job.id)
    jobs.wake(job.id)
    assert worker_app.handler(queue.receive_event(), _context()) == {"batchItemFailures": []}
    # Then no further message is sent (past SQS's 15-minute delay limit): the sweep wakes it once due
    assert queue.counts() == (0, 1)  # only the earlier delayed one
    rows.wake_lost(job.id)
    worker_app.handler({"sweep": True}, _context())
    assert queue.counts() == (0, 1)  # not due yet: the sweep skipped it
    rows.backoff_over(job.id)
    rows.wake_lost(job.id)
    worker_app.handler({"sweep": True}, _context())
    assert {"job_id": str(job.id)} in queue.bodies()


def test_a_lost_message_is_recovered_by_the_scheduled_sweep(worker_app, queue, db, make_kind, account, rows):
    # Given a job whose wake-up never arrived
    rows.quiet_earlier_jobs()
    kind = make_kind()
    with db.tenant(account.account_id) as conn:
        job = jobs.enqueue(conn, account_id=uuid.UUID(account.account_id), kind=kind.name)
    rows.wake_lost(job.id)
    assert queue.counts() == (0, 0)
    # When the EventBridge schedule invokes the sweep
    worker_app.handler({"sweep": True}, _context())
    # Then a wake-up for it is in the queue, and the worker runs it from there
    event = queue.receive_event()
    assert {"job_id": str(job.id)} in [json.loads(r["body"]) for r in event["Records"]]
    assert worker_app.handler(event, _context()) == {"batchItemFailures": []}
    assert rows.get(job.id)["status"] == "succeeded"


def test_a_worker_killed_mid_run_loses_the_job_to_another_after_the_lease_expires(
    worker_app, queue, db, make_kind, account, rows
):
    # Given a job whose worker was killed mid-run (its lease row says running, attempt 1, and nobody heartbeats)
    rows.quiet_earlier_jobs()
    kind = make_kind()
    job = _enqueue_and_wake(db, account.account_id, kind.name)
    queue.receive_event()  # the message the dead invocation had taken
    rows.update(
        job.id,
        "status = 'running', attempts = 1, lease_owner = 'dead-lambda', "
        "lease_expires_at = now() + interval '1 hour'",
    )
    # While the lease holds, a duplicate wake-up is acknowledged and dropped
    jobs.wake(job.id)
    assert worker_app.handler(queue.receive_event(), _context()) == {"batchItemFailures": []}
    assert kind.runs == []
    # When the lease expires and the sweep re-sends it
    rows.expire_lease(job.id)
    rows.wake_lost(job.id)
    worker_app.handler({"sweep": True}, _context())
    assert worker_app.handler(queue.receive_event(), _context()) == {"batchItemFailures": []}
    # Then another invocation finished it, and the dead worker's claim was counted
    row = rows.get(job.id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)


def test_an_invocation_without_time_for_the_run_yields_it_and_sends_a_fresh_wake_up(
    worker_app, queue, db, make_kind, account, rows
):
    # Given a job that may take 780 s and an invocation with only 300 s left
    kind = make_kind(timeout_seconds=780)
    job = _enqueue_and_wake(db, account.account_id, kind.name)
    response = worker_app.handler(queue.receive_event(), _context(seconds_left=300))
    # Then the job was handed back unstarted, its attempt refunded, and woken again at once
    assert response == {"batchItemFailures": []}
    assert kind.runs == []
    row = rows.get(job.id)
    assert (row["status"], row["attempts"]) == ("queued", 0)
    assert queue.bodies() == [{"job_id": str(job.id)}]


def test_the_function_refuses_to_start_when_a_kind_s_timeout_cannot_fit_its_own(
    worker_app, make_kind, monkeypatch
):
    from agentmate.jobs.settings import get_job_settings
    from agentmate.jobs.worker import ConfigurationError

    # Given a 900 s function and a kind that may take 900 s (spec/001's compiler default)
    make_kind(timeout_seconds=900)
    monkeypatch.setenv("JOBS_FUNCTION_TIMEOUT_SECONDS", "900")
    get_job_settings.cache_clear()
    try:
        # Then the start-up check (run at import, i.e. the Lambda init) refuses, naming what to change
        with pytest.raises(ConfigurationError, match="COMPILER_TIMEOUT_SECONDS=780"):
            worker_app.check_configuration()
    finally:
        monkeypatch.delenv("JOBS_FUNCTION_TIMEOUT_SECONDS")
        get_job_settings.cache_clear()
