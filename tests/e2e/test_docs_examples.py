"""docs/agent-integration.md cannot rot: its examples run, verbatim, against the local runtime.

docs/examples/memory-loop.sh holds every ```bash block of the guide (blocks preceded by
``<!-- docs-test: skip -->`` excepted) in the guide's order, plus extra assertions. These tests check that the
blocks really are in the script and run the script with curl against uvicorn on loopback (conftest.base_url:
``infra.local_app.build_local_app()`` with a fresh MCP app).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "agent-integration.md"
SCRIPT = ROOT / "docs" / "examples" / "memory-loop.sh"
README = ROOT / "README.md"
SKIP = "<!-- docs-test: skip -->"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the examples need curl")


def bash_blocks(markdown: str) -> list[str]:
    """The ```bash blocks of a Markdown text that are not marked as skipped."""
    blocks = []
    for match in FENCE.finditer(markdown):
        if match.group(1) != "bash":
            continue
        if markdown[: match.start()].rstrip().endswith(SKIP):
            continue
        blocks.append(match.group(2))
    return blocks


def run_script(base: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "BASE": base, "LC_ALL": "C.UTF-8"}
    return subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_every_bash_block_of_the_guide_is_in_the_script_verbatim_and_in_order():
    # Given the guide and the script
    script = SCRIPT.read_text()
    blocks = bash_blocks(GUIDE.read_text())
    assert len(blocks) > 20
    # Then each block occurs in the script, after the previous one
    position = 0
    for block in blocks:
        found = script.find(block, position)
        assert found >= 0, f"guide block not found verbatim (or out of order) in {SCRIPT.name}:\n{block}"
        position = found + len(block)


def test_the_readme_mcp_section_points_at_the_guide_and_the_local_todos_endpoint():
    readme = README.read_text()
    assert "## Connecting an MCP client" in readme
    section = readme.split("## Connecting an MCP client", 1)[1]
    assert '"url": "http://127.0.0.1:26001/mcp/todos"' in section
    assert "docs/agent-integration.md" in section


@pytest.fixture
def oauth_on(base_url, monkeypatch):
    """OAuth on, as the local runtime runs (scripts/run.sh sets OAUTH_ISSUER_URL to its own address): the guide's
    4.1.1 reads the discovery documents."""
    from agentmate.auth.settings import get_auth_settings

    monkeypatch.setenv("OAUTH_ISSUER_URL", base_url)
    get_auth_settings.cache_clear()
    yield base_url
    monkeypatch.delenv("OAUTH_ISSUER_URL")
    get_auth_settings.cache_clear()


def test_the_memory_loop_script_passes_against_the_local_runtime(oauth_on):
    # When the guide's examples run against a fresh server
    result = run_script(oauth_on)
    # Then every step answered as the guide says
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "memory-loop.sh: all steps passed" in result.stdout


def test_the_script_stops_at_the_first_unexpected_answer(base_url):
    # Given a wrong base URL (the health check answers 404, not 200 JSON)
    result = run_script(base_url + "/not-agentmate")
    # Then the script fails at once instead of carrying on
    assert result.returncode != 0
    assert "expected 200 application/json, got 404" in result.stderr
    assert "all steps passed" not in result.stdout


def python_blocks(markdown: str) -> list[str]:
    return [
        m.group(2)
        for m in FENCE.finditer(markdown)
        if m.group(1) == "python" and not markdown[: m.start()].rstrip().endswith(SKIP)
    ]


def test_the_guides_python_mcp_client_snippet_runs_against_the_local_runtime(base_url, account):
    # Given the guide's Python blocks (the official MCP client snippet)
    blocks = python_blocks(GUIDE.read_text())
    assert blocks, "the guide has no python block"
    for block in blocks:
        # When each runs with BASE and KEY in its environment
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "BASE": base_url,
            "KEY": account.key("memory:r"),
        }
        result = subprocess.run(
            [sys.executable, "-c", block], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        # Then it connects and prints what the guide says
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == ["True True", "False 0"], result.stdout
