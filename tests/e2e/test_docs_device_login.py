"""docs/examples/device-login.sh (the guide's "Log in from a headless agent") runs as printed, against the local
runtime with OAuth on: the script registers a client or reuses one, asks for a device code and prints the page and
user code for a person; here the test is that person and approves (or denies) the user code through
``POST /api/oauth/device/approve`` (``/deny``) with the user's JWT, as the verification page does. The script must
end with a token that works (its own check call, then ours) or with its clear message.

The browser path of the verification page is tests/e2e/test_oauth_pages.py's.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "device-login.sh"
GUIDE = ROOT / "docs" / "agent-integration.md"
USER_CODE = re.compile(r"user_code=([A-Z]{4}-[A-Z]{4})")
WAIT_S = 60  # an upper bound on any one step, so that a broken script fails the test instead of hanging it

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="the script needs curl")


def _clear_settings() -> None:
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.auth.settings import get_auth_settings

    get_auth_settings.cache_clear()
    get_oauth_settings.cache_clear()


@pytest.fixture
def issuer(base_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """OAuth on, the served base URL as the issuer, and the shortest polling interval the settings allow (1 s)."""
    monkeypatch.setenv("OAUTH_ISSUER_URL", base_url)
    monkeypatch.setenv("OAUTH_DEVICE_INTERVAL_S", "1")
    _clear_settings()
    yield base_url
    monkeypatch.delenv("OAUTH_ISSUER_URL")
    monkeypatch.delenv("OAUTH_DEVICE_INTERVAL_S")
    _clear_settings()


class Run:
    """The script running in the background; stderr read line by line on a thread (the person's messages)."""

    def __init__(self, base: str, **env: str) -> None:
        self.proc = subprocess.Popen(
            ["bash", str(SCRIPT)],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", "BASE": base, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put(None)

    def user_code(self) -> str:
        """The user code the script shows the person (from ``verification_uri_complete``)."""
        while True:
            line = self.lines.get(timeout=WAIT_S)
            assert line is not None, "the script ended before showing a code:\n" + "".join(self.seen)
            self.seen.append(line)
            found = USER_CODE.search(line)
            if found:
                return found.group(1)

    def finish(self) -> tuple[int, str, str]:
        """Exit status, stdout and the whole of stderr (read by the thread alone: ``communicate`` would race it)."""
        self.proc.wait(timeout=WAIT_S)
        assert self.proc.stdout is not None
        stdout = self.proc.stdout.read()  # a few lines at most: the pipe never filled
        while (line := self.lines.get(timeout=WAIT_S)) is not None:
            self.seen.append(line)
        return self.proc.returncode, stdout, "".join(self.seen)


@pytest.fixture
def start(issuer: str) -> Iterator[Callable[..., Run]]:
    """Start the script against the issuer; a run a failed test left waiting is killed at teardown."""
    runs: list[Run] = []

    def _start(**env: str) -> Run:
        runs.append(Run(issuer, **env))
        return runs[-1]

    yield _start
    for run in runs:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait(timeout=WAIT_S)


def _decide(base: str, account, user_code: str, decision: str) -> None:
    r = httpx.post(
        f"{base}/api/oauth/device/{decision}", json={"user_code": user_code}, headers=account.jwt_headers
    )
    assert r.status_code == 204, r.text


def _register(base: str, name: str) -> str:
    r = httpx.post(
        f"{base}/api/oauth/register",
        json={
            "client_name": name,
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": [
                "authorization_code",
                "refresh_token",
                "urn:ietf:params:oauth:grant-type:device_code",
            ],
            "token_endpoint_auth_method": "none",
        },
    )
    assert r.status_code == 201, r.text
    client_id: str = r.json()["client_id"]
    return client_id


def test_the_guide_prints_the_script_whole_as_its_copy_paste_block():
    # Given the guide's "Log in from a headless agent" section
    section = GUIDE.read_text().split("### 4.1.2 Log in from a headless agent", 1)[1].split("\n### ", 1)[0]
    # Then its first bash block is the script, byte for byte (an agent reading the served guide has no repository)
    block = section.split("```bash\n", 1)[1].split("\n```\n", 1)[0] + "\n"
    assert block == SCRIPT.read_text()


def test_the_script_registers_a_client_and_ends_with_a_working_token_once_the_person_approves(
    issuer, account, start
):
    # Given the script running with its defaults (memory:rw for the REST API), registering its own client
    run = start(CLIENT_NAME="docs test agent")
    # When the person approves the code it shows
    _decide(issuer, account, run.user_code(), "approve")
    # Then it prints the tokens and its own check call succeeded
    status, stdout, stderr = run.finish()
    assert status == 0, stderr
    assert "device-login.sh: logged in" in stderr
    assert "Registered client ocl_" in stderr
    printed = dict(line.split("=", 1) for line in stdout.splitlines())
    assert set(printed) == {"ACCESS_TOKEN", "REFRESH_TOKEN", "CLIENT_ID"}
    assert printed["ACCESS_TOKEN"].startswith("oat_") and printed["REFRESH_TOKEN"].startswith("ort_")
    # And the token is the person's, with the scope asked for, for the REST API only
    bearer = {"Authorization": f"Bearer {printed['ACCESS_TOKEN']}"}
    me = httpx.get(f"{issuer}/api/auth/me", headers=bearer)
    assert me.status_code == 200, me.text
    assert (me.json()["auth"], me.json()["scopes"], me.json()["email"]) == (
        "oauth",
        ["memory:rw"],
        account.email,
    )
    assert httpx.get(f"{issuer}/api/memory/scopes", headers=bearer).status_code == 200
    assert httpx.get(f"{issuer}/api/todos", headers=bearer).status_code == 403  # not a scope it asked for
    mcp = httpx.post(
        f"{issuer}/mcp/memory",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={**bearer, "Accept": "application/json, text/event-stream"},
    )
    assert mcp.status_code == 401  # a token for {base}/api does not serve MCP


def test_a_known_client_gets_an_mcp_token_written_to_a_private_file(issuer, account, tmp_path, start):
    # Given a client registered before, and a token file asked for, for one MCP endpoint
    client_id = _register(issuer, "docs test agent (known)")
    token_file = tmp_path / "agentmate-token.json"
    run = start(
        CLIENT_ID=client_id,
        SCOPE="memory:r",
        RESOURCE=f"{issuer}/mcp/memory",
        TOKEN_FILE=str(token_file),
    )
    # When the person approves
    _decide(issuer, account, run.user_code(), "approve")
    status, stdout, stderr = run.finish()
    # Then nothing secret went to stdout, the file is the user's alone, and its token lists the memory tools
    assert status == 0, stderr
    assert stdout == "" and "Registered client" not in stderr
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    saved = json.loads(token_file.read_text())
    assert saved["client_id"] == client_id and saved["resource"] == f"{issuer}/mcp/memory"
    assert saved["scope"] == "memory:r" and saved["token_type"] == "Bearer"
    assert re.search(r"Checked: .*/mcp/memory lists \d+ tools for this token", stderr), stderr
    # And the refresh block of the guide, run against that file, gets a new working pair
    refreshed = _run_guide_refresh(issuer, token_file)
    assert refreshed["access_token"] != saved["access_token"]
    assert refreshed["refresh_token"] != saved["refresh_token"]


def _run_guide_refresh(base: str, token_file: Path) -> dict[str, object]:
    """The guide's refresh block (after the marker ``<!-- device-login: refresh -->``), run with TOKEN_FILE."""
    text = GUIDE.read_text()
    marker = "<!-- device-login: refresh -->"
    assert marker in text, "the guide lost its refresh example"
    block = text.split(marker, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "BASE": base, "TOKEN_FILE": str(token_file)}
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block], env=env, capture_output=True, text=True, timeout=WAIT_S
    )
    assert result.returncode == 0, result.stderr
    refreshed: dict[str, object] = json.loads(token_file.read_text())
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    return refreshed


def test_a_denial_ends_the_script_with_its_message_and_no_token(issuer, account, start):
    # Given the script waiting for a person
    run = start(CLIENT_ID=_register(issuer, "docs test agent (denied)"))
    # When the person denies the code
    _decide(issuer, account, run.user_code(), "deny")
    # Then the script stops with its message, and printed no token
    status, stdout, stderr = run.finish()
    assert status == 1
    assert stdout == ""
    assert "device-login.sh: the person denied the request: no token was issued" in stderr


def test_a_scope_the_server_does_not_know_is_refused_before_any_code_is_shown(issuer, start):
    # Given a mistyped scope
    run = start(CLIENT_ID=_register(issuer, "docs test agent (typo)"), SCOPE="memory:write")
    # Then the script stops at once with the server's reason, naming the allowed scopes
    status, stdout, stderr = run.finish()
    assert status == 1 and stdout == ""
    assert "device-login.sh: device authorization answered 400" in stderr
    assert "invalid_scope" in stderr and "memory:rw" in stderr
    assert "user_code=" not in stderr
