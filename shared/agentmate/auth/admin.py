"""Operator command: make a user an admin (run with the owner URL, which bypasses row-level security).

    python -m agentmate.auth.admin promote --email user@example.com --database-url postgresql://owner@host/db
"""

from __future__ import annotations

import argparse
import sys

import psycopg


def set_role(database_url: str, email: str, role: str) -> bool:
    with psycopg.connect(database_url) as conn:
        cur = conn.execute("UPDATE users SET role = %s WHERE email = lower(%s)", (role, email.strip()))
        return cur.rowcount == 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Manage user roles")
    parser.add_argument("action", choices=["promote", "demote"])
    parser.add_argument("--email", required=True)
    parser.add_argument("--database-url", required=True, help="owner (migration) connection URL")
    args = parser.parse_args(argv)
    role = "admin" if args.action == "promote" else "user"
    if not set_role(args.database_url, args.email, role):
        print(f"no user with email {args.email}", file=sys.stderr)
        return 1
    print(f"{args.email} is now {role}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
