"""SQL of the jobs table (migrations/0070). Tenant statements run in ``db.tenant(account_id)``; the two
cross-account ones (claim, due-for-wakeup) are SECURITY DEFINER functions that each touch only what they return."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import kwargs_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged
from agentmate.jobs.schemas import Job, KindStats

CONSTRAINTS = constraints(
    {
        "jobs_kind_check": (
            "kind",
            "must be 1..64 lowercase letters, digits or underscores, starting with a letter",
        ),
        "jobs_status_check": ("status", "must be one of queued, running, succeeded, failed, cancelled"),
        "jobs_payload_check": ("payload", "must be an object"),
        "jobs_attempts_check": ("attempts", "must be at least 0"),
        "jobs_max_attempts_check": ("max_attempts", "must be 1..20"),
        "jobs_lease_check": ("lease_owner", "a lease needs both an owner and an expiry"),
        "jobs_usage_check": ("usage", "token counts and cost must be at least 0"),
        "jobs_active_subject_key": ("subject_id", "already has an unfinished job of this kind"),
    }
)

COLUMNS = """id, account_id, kind, subject_id, payload, status, attempts, max_attempts, lease_owner, lease_expires_at,
heartbeat_at, next_attempt_at, woken_at, last_error, result, input_tokens, output_tokens, cost_micros, queued_at,
started_at, finished_at, updated_at"""

# Saturating sums (in numeric, capped at bigint's maximum): a total can never overflow the column and fail the
# outcome write it rides on (the worker also clamps what it adds).
_USAGE = """input_tokens = least(input_tokens::numeric + %(input_tokens)s, 9223372036854775807)::bigint,
output_tokens = least(output_tokens::numeric + %(output_tokens)s, 9223372036854775807)::bigint,
cost_micros = least(cost_micros::numeric + %(cost_micros)s, 9223372036854775807)::bigint"""
_LEASE_CLEARED = "lease_owner = NULL, lease_expires_at = NULL, updated_at = now()"
_MINE = "account_id = %(account_id)s AND id = %(id)s AND lease_owner = %(owner)s AND status = 'running'"


def _jobs(conn: Conn) -> Cursor[Job]:
    """A cursor whose rows are ``Job`` models (for statements that return ``COLUMNS``)."""
    return conn.cursor(row_factory=kwargs_row(Job))


def insert(
    conn: Conn,
    *,
    account_id: UUID,
    kind: str,
    subject_id: UUID | None,
    payload: dict[str, Any],
    max_attempts: int,
) -> Job:
    """A queued job, or the unfinished one of the same kind and subject when there is one."""
    params = {
        "account_id": account_id,
        "kind": kind,
        "subject_id": subject_id,
        "payload": Jsonb(payload),
        "max_attempts": max_attempts,
    }
    job = (
        _jobs(conn)
        .execute(
            f"""INSERT INTO jobs (account_id, kind, subject_id, payload, max_attempts)
            VALUES (%(account_id)s, %(kind)s, %(subject_id)s, %(payload)s, %(max_attempts)s)
            ON CONFLICT (account_id, kind, subject_id)
                WHERE status IN ('queued', 'running') AND subject_id IS NOT NULL DO NOTHING
            RETURNING {COLUMNS}""",
            params,
        )
        .fetchone()
    )
    if job is None:
        job = (
            _jobs(conn)
            .execute(
                f"""SELECT {COLUMNS} FROM jobs WHERE account_id = %(account_id)s AND kind = %(kind)s
                    AND subject_id = %(subject_id)s AND status IN ('queued', 'running')""",
                params,
            )
            .fetchone()
        )
    assert job is not None
    return job


def get(conn: Conn, *, account_id: UUID, job_id: UUID) -> Job | None:
    return (
        _jobs(conn)
        .execute(
            f"SELECT {COLUMNS} FROM jobs WHERE account_id = %(account_id)s AND id = %(job_id)s",
            {"account_id": account_id, "job_id": job_id},
        )
        .fetchone()
    )


def list_jobs(
    conn: Conn,
    *,
    account_id: UUID,
    kind: str | None,
    status: str | None,
    subject_id: UUID | None,
    limit: int,
    offset: int,
) -> tuple[list[Job], int]:
    where = ["account_id = %(account_id)s"]
    if kind is not None:
        where.append("kind = %(kind)s")
    if status is not None:
        where.append("status = %(status)s")
    if subject_id is not None:
        where.append("subject_id = %(subject_id)s")
    rows, total = paged(
        conn,
        columns=COLUMNS,
        table="jobs",
        where=where,
        params={"account_id": account_id, "kind": kind, "status": status, "subject_id": subject_id},
        order_by="queued_at DESC, id",
        limit=limit,
        offset=offset,
    )
    return [Job.model_validate(r) for r in rows], total


def stats(conn: Conn, *, account_id: UUID) -> list[KindStats]:
    """Per kind: unfinished jobs split by what they are waiting on (one scan of the account's unfinished rows)."""
    return (
        conn.cursor(row_factory=kwargs_row(KindStats))
        .execute(
            """SELECT kind,
                  count(*) FILTER (WHERE status = 'queued' AND next_attempt_at <= now()) AS waiting,
                  count(*) FILTER (WHERE status = 'running' AND lease_expires_at > now()) AS running,
                  count(*) FILTER (WHERE status = 'queued' AND next_attempt_at > now()) AS backing_off,
                  count(*) FILTER (WHERE status = 'running' AND lease_expires_at <= now()) AS stalled,
                  extract(epoch FROM now() - min(queued_at) FILTER (
                      WHERE status = 'queued' AND next_attempt_at <= now()))::float8 AS oldest_waiting_age_seconds
           FROM jobs WHERE account_id = %(account_id)s AND status IN ('queued', 'running')
           GROUP BY kind ORDER BY kind""",
            {"account_id": account_id},
        )
        .fetchall()
    )


def cancel(conn: Conn, *, account_id: UUID, job_id: UUID, reason: str) -> Job | None:
    """Cancel an unfinished job; a running worker sees it at its next heartbeat (lease lost) and writes nothing."""
    return (
        _jobs(conn)
        .execute(
            f"""UPDATE jobs SET status = 'cancelled', last_error = %(reason)s, finished_at = now(), {_LEASE_CLEARED}
            WHERE account_id = %(account_id)s AND id = %(id)s AND status IN ('queued', 'running')
            RETURNING {COLUMNS}""",
            {"account_id": account_id, "id": job_id, "reason": reason},
        )
        .fetchone()
    )


# --- worker statements -----------------------------------------------------------------------------------------


def claim(
    conn: Conn,
    *,
    owner: str,
    lease_seconds: float,
    job_id: UUID | None,
    kinds: list[str],
    running_cap: int = 0,
) -> Job | None:
    """The claim transaction's one statement (jobs_claim, migrations/0097: at most ``running_cap`` running jobs
    per account, 0 = no cap); run in a transaction with no tenant."""
    return (
        _jobs(conn)
        .execute(
            f"SELECT {COLUMNS} FROM jobs_claim(%(owner)s, %(lease_seconds)s, %(job_id)s, %(kinds)s, %(running_cap)s)",
            {
                "owner": owner,
                "lease_seconds": max(1, round(lease_seconds)),
                "job_id": job_id,
                "kinds": kinds,
                "running_cap": running_cap,
            },
        )
        .fetchone()
    )


def next_due(conn: Conn, *, after: UUID) -> UUID | None:
    """The tenant's oldest due queued job other than ``after`` (the running cap's wake-up of the next one)."""
    row = conn.execute(
        """SELECT id FROM jobs WHERE status = 'queued' AND next_attempt_at <= now() AND id <> %(after)s
           ORDER BY next_attempt_at, queued_at LIMIT 1""",
        {"after": after},
    ).fetchone()
    return row["id"] if row is not None else None


def set_tenant(conn: Conn, account_id: UUID) -> None:
    conn.execute("SELECT set_config('app.account_id', %(account_id)s, true)", {"account_id": str(account_id)})


def heartbeat(conn: Conn, *, job: Job, owner: str, lease_seconds: float) -> bool:
    """Extend this worker's lease; False when it no longer holds the job."""
    row = conn.execute(
        f"""UPDATE jobs SET lease_expires_at = now() + make_interval(secs => %(lease)s), heartbeat_at = now()
            WHERE {_MINE} RETURNING id""",
        {"account_id": job.account_id, "id": job.id, "owner": owner, "lease": lease_seconds},
    ).fetchone()
    return row is not None


def _outcome(
    conn: Conn, sets: str, *, job: Job, owner: str, usage: dict[str, int], **params: Any
) -> Job | None:
    return (
        _jobs(conn)
        .execute(
            f"UPDATE jobs SET {sets}, {_USAGE}, {_LEASE_CLEARED} WHERE {_MINE} RETURNING {COLUMNS}",
            {"account_id": job.account_id, "id": job.id, "owner": owner, **usage, **params},
        )
        .fetchone()
    )


def succeed(
    conn: Conn, *, job: Job, owner: str, usage: dict[str, int], result: dict[str, Any] | None
) -> Job | None:
    return _outcome(
        conn,
        "status = 'succeeded', finished_at = now(), last_error = NULL, result = %(result)s",
        job=job,
        owner=owner,
        usage=usage,
        result=Jsonb(result) if result is not None else None,
    )


def fail(conn: Conn, *, job: Job, owner: str, usage: dict[str, int], error: str) -> Job | None:
    return _outcome(
        conn,
        "status = 'failed', finished_at = now(), last_error = %(error)s",
        job=job,
        owner=owner,
        usage=usage,
        error=error,
    )


def requeue(
    conn: Conn,
    *,
    job: Job,
    owner: str,
    usage: dict[str, int],
    error: str,
    delay_seconds: float,
    wake_scheduled: bool,
) -> Job | None:
    """Back to the queue after a retryable failure. ``wake_scheduled``: a delayed wake-up arrives when the
    backoff ends, so the sweep leaves the row alone until then; otherwise the sweep wakes it once due."""
    return _outcome(
        conn,
        """status = 'queued', last_error = %(error)s,
                 next_attempt_at = now() + make_interval(secs => %(delay)s),
                 woken_at = CASE WHEN %(scheduled)s THEN now() + make_interval(secs => %(delay)s) ELSE woken_at END""",
        job=job,
        owner=owner,
        usage=usage,
        error=error,
        delay=delay_seconds,
        scheduled=wake_scheduled,
    )


def release(
    conn: Conn, *, job: Job, owner: str, failed: bool, error: str, delay_seconds: float, wake_scheduled: bool
) -> Job | None:
    """The worker's last resort after an outcome write failed: out of ``running`` with a fixed error text and
    nothing else of the attempt (whatever made the first write fail is not written again)."""
    if failed:
        sets = "status = 'failed', finished_at = now(), last_error = %(error)s"
    else:
        sets = """status = 'queued', last_error = %(error)s, next_attempt_at = now() + make_interval(secs => %(delay)s),
                  woken_at = CASE WHEN %(scheduled)s THEN now() + make_interval(secs => %(delay)s) ELSE woken_at END"""
    return (
        _jobs(conn)
        .execute(
            f"UPDATE jobs SET {sets}, {_LEASE_CLEARED} WHERE {_MINE} RETURNING {COLUMNS}",
            {
                "account_id": job.account_id,
                "id": job.id,
                "owner": owner,
                "error": error,
                "delay": delay_seconds,
                "scheduled": wake_scheduled,
            },
        )
        .fetchone()
    )


def yield_back(conn: Conn, *, job: Job, owner: str, usage: dict[str, int]) -> Job | None:
    """Hand the job back unfinished, due now, with this claim's attempt refunded (a shutdown is not a failure)."""
    return _outcome(
        conn,
        """status = 'queued', attempts = greatest(attempts - 1, 0), next_attempt_at = now(),
                             woken_at = now()""",
        job=job,
        owner=owner,
        usage=usage,
    )


def add_usage(conn: Conn, *, job: Job, usage: dict[str, int]) -> None:
    """Usage of an attempt whose lease was lost: the calls were made and paid for all the same."""
    conn.execute(
        f"UPDATE jobs SET {_USAGE} WHERE account_id = %(account_id)s AND id = %(id)s",
        {"account_id": job.account_id, "id": job.id, **usage},
    )


def due_for_wakeup(conn: Conn, *, grace_seconds: int, limit: int, kinds: list[str]) -> list[UUID]:
    """Claimable jobs of ``kinds`` no wake-up reached within the grace period (migrations/0072), marked woken."""
    return [
        r["job_id"]
        for r in conn.execute(
            "SELECT job_id FROM jobs_due_for_wakeup(%(grace_seconds)s, %(limit)s, %(kinds)s)",
            {"grace_seconds": grace_seconds, "limit": limit, "kinds": kinds},
        ).fetchall()
    ]


def fail_unregistered(
    conn: Conn, *, kinds: list[str], after_seconds: int, limit: int
) -> list[dict[str, Any]]:
    """Retire unfinished jobs of any kind outside ``kinds`` queued at least ``after_seconds`` ago (0072)."""
    return conn.execute(
        "SELECT job_id, account_id, kind FROM jobs_fail_unregistered(%(kinds)s, %(after_seconds)s, %(limit)s)",
        {"kinds": kinds, "after_seconds": after_seconds, "limit": limit},
    ).fetchall()
