"""Issue 8 item 3: a failed login costs the same whether the email is registered or not.

    .venv/bin/python bench/login_timing.py [--tries 50] [--warmup 5]

``POST /api/auth/login`` through the auth Lambda handler (API Gateway HTTP API v2 events, fake Lambda context),
in the same run and interleaved: a wrong password for a registered email, and any password for an unknown
email (verified against the dummy scrypt hash). Each try comes from its own source address, so the throttle
records the failure as in production but never blocks a try. A successful login is measured beside them for
reference. Goal: unknown / registered median within 20% (0.8..1.2).

Postgres: the bench cluster in .local/bench-pg (bench/common.py), a fresh migrated database.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import uuid
import warnings

from common import PASSWORD, machine, prepare_database, print_table, ratio, summary

TOLERANCE = 0.20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=50, help="measured tries per variant (>= 50)")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args(argv)
    tries = max(args.tries, 50)

    prepare_database("agentmate_bench_login")
    warnings.filterwarnings("ignore", "No application metrics")

    from functions.auth.app import handler
    from tests.apigw import LambdaContext, http_event, parse_response

    addresses = (f"198.18.{i // 250}.{i % 250 + 1}" for i in itertools.count())  # RFC 2544 benchmark range

    def login(email: str, password: str, expect: int) -> float:
        event = http_event(
            "POST",
            "/api/auth/login",
            json_body={"email": email, "password": password},
            source_ip=next(addresses),
        )
        t0 = time.perf_counter_ns()
        r = parse_response(handler(event, LambdaContext()))
        elapsed = (time.perf_counter_ns() - t0) / 1e6
        if r.status_code != expect:
            raise RuntimeError(f"login {email}: {r.status_code} {r.body}")
        return elapsed

    email = f"bench-{time.time_ns()}@example.com"
    r = parse_response(
        handler(
            http_event("POST", "/api/auth/register", json_body={"email": email, "password": PASSWORD}),
            LambdaContext(),
        )
    )
    if r.status_code != 201:
        raise RuntimeError(r.body)

    variants = [
        ("registered email, wrong password (401)", lambda: login(email, "not the password", 401)),
        (
            "unknown email (401)",
            lambda: login(f"nobody-{uuid.uuid4().hex}@example.com", "not the password", 401),
        ),
        ("registered email, right password (200)", lambda: login(email, PASSWORD, 200)),
    ]
    for _, fn in variants:
        for _ in range(args.warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(tries):  # interleaved one by one: a noisy neighbour hits every variant alike
        for name, fn in variants:
            samples[name].append(fn())

    base = summary(samples[variants[0][0]])
    rows = []
    for name, _ in variants:
        s = summary(samples[name])
        rows.append(
            [
                name,
                s["n"],
                f"{s['p50']:.1f}",
                ratio(s["p50"], base["p50"]),
                f"{s['mean']:.1f}",
                ratio(s["mean"], base["mean"]),
                f"{s['p95']:.1f}",
                f"{s['min']:.1f}",
                f"{s['max']:.1f}",
            ]
        )
    unknown = summary(samples[variants[1][0]])
    p50_ratio, mean_ratio = unknown["p50"] / base["p50"], unknown["mean"] / base["mean"]
    verdict = "met" if abs(p50_ratio - 1) <= TOLERANCE else "NOT met"
    print_table(
        "Login timing: unknown vs registered email",
        [
            "variant",
            "tries",
            "p50 ms",
            "p50 vs registered",
            "mean ms",
            "mean vs registered",
            "p95 ms",
            "min ms",
            "max ms",
        ],
        rows,
        notes=[
            f"Goal unknown/registered p50 within {TOLERANCE:.0%}: {verdict} (p50 {p50_ratio:.2f}x, "
            f"mean {mean_ratio:.2f}x).",
            f"Machine: {machine()}. Postgres on 127.0.0.1 (same host).",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
