"""Operator command: user roles and account suspension (run with the owner URL, which bypasses row-level security).

    python -m agentmate.auth.admin promote --email user@example.com --database-url postgresql://owner@host/db
    python -m agentmate.auth.admin suspend --email user@example.com --database-url …     # or reactivate

Suspending an account refuses its JWTs and API keys (401) and its logins until it is reactivated; over HTTP an
admin does the same with POST /api/admin/accounts/{account_id}/suspend and …/reactivate.
"""

from __future__ import annotations

import argparse
import sys

import psycopg


def set_role(database_url: str, email: str, role: str) -> bool:
    with psycopg.connect(database_url) as conn:
        cur = conn.execute(
            "UPDATE users SET role = %(role)s WHERE email = lower(%(email)s)",
            {"role": role, "email": email.strip()},
        )
        return cur.rowcount == 1


def set_suspended(database_url: str, email: str, suspend: bool) -> bool:
    """Suspend (keeping the first suspended_at) or reactivate the account of the user with this email."""
    with psycopg.connect(database_url) as conn:
        cur = conn.execute(
            """UPDATE accounts a SET suspended_at = CASE WHEN %(suspend)s THEN coalesce(a.suspended_at, now()) END
               FROM users u WHERE u.account_id = a.id AND u.email = lower(%(email)s)""",
            {"suspend": suspend, "email": email.strip()},
        )
        return cur.rowcount == 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Manage user roles and account suspension")
    parser.add_argument("action", choices=["promote", "demote", "suspend", "reactivate"])
    parser.add_argument("--email", required=True)
    parser.add_argument("--database-url", required=True, help="owner (migration) connection URL")
    args = parser.parse_args(argv)
    if args.action in ("suspend", "reactivate"):
        done = set_suspended(args.database_url, args.email, args.action == "suspend")
        outcome = "suspended" if args.action == "suspend" else "active"
        message = f"the account of {args.email} is now {outcome}"
    else:
        role = "admin" if args.action == "promote" else "user"
        done = set_role(args.database_url, args.email, role)
        message = f"{args.email} is now {role}"
    if not done:
        print(f"no user with email {args.email}", file=sys.stderr)
        return 1
    print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
