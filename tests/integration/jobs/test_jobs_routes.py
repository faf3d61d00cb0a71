"""GET /api/knowledge/queue and the job reads: what an account sees of its own jobs, and nothing of others'."""

from __future__ import annotations

import uuid


def test_queue_stats_split_unfinished_jobs_by_what_they_wait_on(client, account, enqueue, rows, make_kind):
    # Given jobs in every state: two waiting (one queued 10 minutes ago), one backing off, one running, one
    # stalled (its worker died), one finished
    compile_kind, sync_kind = make_kind().name, make_kind().name
    old = enqueue(account.account_id, compile_kind, subject_id=uuid.uuid4())
    rows.update(
        old.id, "queued_at = now() - interval '10 minutes', next_attempt_at = now() - interval '10 minutes'"
    )
    enqueue(account.account_id, compile_kind, subject_id=uuid.uuid4())
    backing = enqueue(account.account_id, compile_kind, subject_id=uuid.uuid4())
    rows.update(backing.id, "attempts = 1, next_attempt_at = now() + interval '60 seconds'")
    running = enqueue(account.account_id, sync_kind, subject_id=uuid.uuid4())
    rows.update(
        running.id,
        "status = 'running', attempts = 1, lease_owner = 'w', "
        "lease_expires_at = now() + interval '10 minutes'",
    )
    stalled = enqueue(account.account_id, sync_kind, subject_id=uuid.uuid4())
    rows.update(
        stalled.id,
        "status = 'running', attempts = 1, lease_owner = 'w', lease_expires_at = now() - interval '1 minute'",
    )
    done = enqueue(account.account_id, sync_kind, subject_id=uuid.uuid4())
    rows.update(done.id, "status = 'succeeded'")
    # When the account reads its queue
    r = client.get("/api/knowledge/queue", headers=account.headers("knowledge:r"))
    # Then each unfinished job is counted once, by what it waits on, in total and per kind
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "private, no-store"
    stats = r.json()
    assert {k: stats[k] for k in ("waiting", "running", "backing_off", "stalled")} == {
        "waiting": 2,
        "running": 1,
        "backing_off": 1,
        "stalled": 1,
    }
    assert 600 <= stats["oldest_waiting_age_seconds"] < 700
    by_kind = {k["kind"]: k for k in stats["kinds"]}
    assert set(by_kind) == {compile_kind, sync_kind}
    assert (by_kind[compile_kind]["waiting"], by_kind[compile_kind]["backing_off"]) == (2, 1)
    assert (by_kind[sync_kind]["running"], by_kind[sync_kind]["stalled"], by_kind[sync_kind]["waiting"]) == (
        1,
        1,
        0,
    )
    assert by_kind[sync_kind]["oldest_waiting_age_seconds"] is None


def test_an_empty_queue_says_so(client, account):
    r = client.get("/api/knowledge/queue", headers=account.headers("knowledge:r"))
    assert r.json() == {
        "waiting": 0,
        "running": 0,
        "backing_off": 0,
        "stalled": 0,
        "oldest_waiting_age_seconds": None,
        "kinds": [],
    }


def test_a_job_reads_with_its_status_attempts_error_and_usage_but_not_its_worker(
    client, account, enqueue, rows, make_kind
):
    kind = make_kind().name
    job = enqueue(account.account_id, kind, payload={"source_id": "s"}, max_attempts=4)
    rows.update(
        job.id,
        "status = 'queued', attempts = 1, last_error = 'HTTP 503', input_tokens = 12, "
        "cost_micros = 3, next_attempt_at = now() + interval '30 seconds'",
    )
    r = client.get(f"/api/knowledge/jobs/{job.id}", headers=account.headers("knowledge:r"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert {
        k: body[k] for k in ("id", "kind", "status", "attempts", "max_attempts", "last_error", "payload")
    } == {
        "id": str(job.id),
        "kind": kind,
        "status": "queued",
        "attempts": 1,
        "max_attempts": 4,
        "last_error": "HTTP 503",
        "payload": {"source_id": "s"},
    }
    assert body["usage"] == {"input_tokens": 12, "output_tokens": 0, "cost_micros": 3}
    assert "lease_owner" not in body and "account_id" not in body
    # And the list finds it by kind and status
    h = account.headers("knowledge:r")
    listed = client.get("/api/knowledge/jobs", params={"kind": kind, "status": "queued"}, headers=h).json()
    assert [j["id"] for j in listed["items"]] == [str(job.id)] and listed["total"] == 1
    assert (
        client.get("/api/knowledge/jobs", params={"kind": kind, "status": "failed"}, headers=h).json()[
            "total"
        ]
        == 0
    )


def test_bad_job_reads_are_400s_naming_the_field_and_unknown_ids_404(client, account):
    h = account.headers("knowledge:r")
    r = client.get("/api/knowledge/jobs", params={"status": "done"}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "status"
    assert set(r.json()["errors"][0]["allowed"]) == {"queued", "running", "succeeded", "failed", "cancelled"}
    r = client.get("/api/knowledge/jobs", params={"kind": "Not A Kind"}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "kind"
    assert client.get("/api/knowledge/jobs/not-a-uuid", headers=h).status_code == 400
    assert client.get(f"/api/knowledge/jobs/{uuid.uuid4()}", headers=h).status_code == 404


def test_another_account_s_jobs_are_neither_read_listed_nor_counted(
    client, account, other_account, enqueue, make_kind
):
    kind = make_kind().name
    foreign = enqueue(other_account.account_id, kind, payload={"secret": "victim"})
    h = account.headers("knowledge:r")
    assert client.get(f"/api/knowledge/jobs/{foreign.id}", headers=h).status_code == 404
    assert client.get("/api/knowledge/jobs", params={"kind": kind}, headers=h).json()["total"] == 0
    assert client.get("/api/knowledge/queue", headers=h).json()["waiting"] == 0
    # while its owner still sees it
    mine = other_account.headers("knowledge:r")
    assert client.get(f"/api/knowledge/jobs/{foreign.id}", headers=mine).status_code == 200
    assert client.get("/api/knowledge/queue", headers=mine).json()["waiting"] == 1
