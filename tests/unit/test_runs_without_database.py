"""``make unit`` needs no Postgres: the test session sets one up only when a collected test needs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "postgresql://postgres@127.0.0.1:9"  # the discard port: nothing listens there


def _pytest(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DATABASE_URL"))}
    env.update(TEST_DATABASE_OWNER_URL=UNREACHABLE, DATABASE_URL=UNREACHABLE + "/agentmate")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_unit_tests_pass_with_the_database_unreachable():
    run = _pytest("tests/unit/test_settings.py", "tests/unit/retrieval/test_fusion.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout


def test_collecting_a_database_test_does_reach_for_the_database():
    # The same unreachable server fails a session that collects an integration test: the set-up is real.
    run = _pytest("--collect-only", "tests/integration/test_todos.py")
    assert run.returncode != 0
    assert "port 9 failed" in run.stdout + run.stderr
