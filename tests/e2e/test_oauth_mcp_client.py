"""Issue 24's "done when", end to end: the official MCP Python client (``mcp.client.auth.OAuthClientProvider``),
knowing only the URL of ``/mcp/todos`` on the local runtime, connects through OAuth and calls tools.

- discovery from the 401 (RFC 9728 resource metadata, then RFC 8414 server metadata);
- registration by a client ID metadata document (an https URL on a loopback server signed by a ``trustme`` CA,
  the server told to trust it) and, in another test, by dynamic registration (RFC 7591), where the user first
  narrows the scopes and a later call's 403 ``insufficient_scope`` sends the client back to consent (step-up);
- authorization with PKCE through the consent page in headless chromium: the provider's ``redirect_handler``
  opens the URL, the "user" signs in, may untick a scope and allows; the 303 lands on a loopback callback server
  whose hit is what the ``callback_handler`` hands back (code, state, iss);
- ``tools/list`` and ``tools/call`` with the token; a refresh the client makes by itself once the access token has
  expired (the old refresh token is then spent); revocation (RFC 7009) → the next call is a 401 the client sees;
- the device flow (RFC 8628): the guide's ``docs/examples/device-login.sh`` polls as a headless agent while the
  browser approves on the verification page; the agent lists the MCP tools with its tokens.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.to_thread
import httpx
import psycopg
import pytest

from agentmate.auth.tokens import hash_token
from tests.conftest import Account, make_account
from tests.fakes.https_server import HttpsServer

from .conftest import mcp_session

pytest_plugins = ["tests.browser"]  # browser, fresh_browser, loopback_page

pytestmark = pytest.mark.anyio

FLOW_BOUND_S = 120  # a bound on a hung flow (browser, server, client), not a measurement
CLIENT_NAME = "E2E MCP Client"


# -- fixtures -------------------------------------------------------------------------------------------------------


def _clear_settings() -> None:
    from agentmate.auth.oauth import cimd
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.auth.settings import get_auth_settings

    get_auth_settings.cache_clear()
    get_oauth_settings.cache_clear()
    cimd.CACHE.clear()


@pytest.fixture
def https() -> Iterator[HttpsServer]:
    """The client's own https host (its client ID metadata document), signed by a test CA."""
    with HttpsServer() as server:
        yield server


@pytest.fixture
def issuer(base_url: str, https: HttpsServer, tmp_path: Path) -> Iterator[str]:
    """OAuth on, the served runtime's base URL the issuer; the client host's test CA trusted and loopback opened
    to the metadata-document fetcher (the operator's opt-in); a 1 s device polling interval."""
    env = {
        "OAUTH_ISSUER_URL": base_url,
        "OAUTH_CIMD_CA_BUNDLE": https.ca_pem(tmp_path),
        "OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS": "127.0.0.0/8",
        "OAUTH_DEVICE_INTERVAL_S": "1",
    }
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        _clear_settings()
        try:
            yield base_url
        finally:
            _clear_settings()
    _clear_settings()


@pytest.fixture
def user(client: Any) -> Account:
    return make_account(client)


# -- the client's side: storage, the browser as the user, a record of what came back --------------------------------


class MemoryStorage:
    """The SDK's ``TokenStorage``, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


class Reauthorization(Exception):
    """The client asked the user to authorize again when the test said it must not get that far."""


@dataclass
class BrowserUser:
    """The person at the browser: opens the authorization URL, signs in on the consent page, unticks
    ``untick``, allows, and lands on the client's loopback callback."""

    driver: Any
    callback_page: Any  # tests.browser.LoopbackPage
    account: Account
    untick: tuple[str, ...] = ()
    allowed: bool = True
    opened: list[str] = field(default_factory=list)
    shown_scopes: list[list[str]] = field(default_factory=list)

    async def redirect_handler(self, url: str) -> None:
        self.opened.append(url)
        if not self.allowed:
            raise Reauthorization(url)
        await anyio.to_thread.run_sync(self._consent, url)

    def _consent(self, url: str) -> None:
        from tests.browser import wait_for

        self.shown_scopes.append(_sign_in_and_allow(self.driver, url, self.account, self.untick))
        wait_for(self.driver, lambda d: d.current_url.startswith(self.callback_page.callback()))

    async def callback_handler(self) -> Any:
        """What the loopback callback server received (the client's redirect URI)."""
        from mcp.shared.auth import AuthorizationCodeResult

        path, _ = self.callback_page.hits[-1]
        params = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


@dataclass
class Seen:
    """Every response the client's HTTP client received (httpx2 event hook): method, URL without query, status."""

    responses: list[tuple[str, str, int]] = field(default_factory=list)

    async def hook(self, response: Any) -> None:
        request = response.request
        self.responses.append((request.method, str(request.url).split("?", 1)[0], response.status_code))

    def since(self, mark: int) -> list[tuple[str, str, int]]:
        return self.responses[mark:]


def _provider(
    mcp_url: str, person: BrowserUser, storage: MemoryStorage, client_metadata_url: str | None = None
) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata
    from pydantic import AnyUrl

    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(person.callback_page.callback())],
        client_name=CLIENT_NAME,
        grant_types=["authorization_code", "refresh_token"],
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
        client_metadata_url=client_metadata_url,
    )


@asynccontextmanager
async def connection(url: str, provider: Any, seen: Seen) -> AsyncIterator[Any]:
    """One initialized MCP session of the official client over Streamable HTTP, authenticated by the OAuth
    provider (every response it receives recorded in ``seen``)."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"response": [seen.hook]}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _sql(owner_url: str, statement: str, **params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(owner_url) as conn:
        cur = conn.execute(statement, params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def _client_document(https: HttpsServer, callback: str) -> str:
    """The client's metadata document on its https host; its URL is the client_id."""
    path = "/oauth/e2e-client.json"
    url = https.url(path)
    doc = {
        "client_id": url,
        "client_name": CLIENT_NAME,
        "client_uri": "https://client.example/",
        "redirect_uris": [callback],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    return https.document(path, doc)


# -- the code flow with the official client -------------------------------------------------------------------------


async def test_the_official_client_knowing_only_the_url_connects_by_metadata_document_refreshes_and_is_revoked(
    issuer: str, https: HttpsServer, fresh_browser: Any, loopback_page: Any, user: Account, owner_url: str
) -> None:
    mcp_url = f"{issuer}/mcp/todos"
    client_id = _client_document(https, loopback_page.callback())
    person = BrowserUser(fresh_browser, loopback_page, user)
    storage, seen = MemoryStorage(), Seen()
    provider = _provider(mcp_url, person, storage, client_metadata_url=client_id)

    # When the client connects knowing only the URL, and creates then lists todos
    with anyio.fail_after(FLOW_BOUND_S):
        async with connection(mcp_url, provider, seen) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            made = await session.call_tool("todo_create", {"title": "via the official OAuth client"})
            listed = await session.call_tool("todo_list", {})

    # Then it discovered the server from the 401: resource metadata for this endpoint, then server metadata
    first = seen.responses[:3]
    assert first == [
        ("POST", mcp_url, 401),
        ("GET", f"{issuer}/.well-known/oauth-protected-resource/mcp/todos", 200),
        ("GET", f"{issuer}/.well-known/oauth-authorization-server", 200),
    ], seen.responses
    # And it registered nothing: its client_id is its document's URL, which the server fetched (once, cached)
    assert not [r for r in seen.responses if r[1].endswith("/api/oauth/register")]
    assert storage.client_info.client_id == client_id and https.hits["/oauth/e2e-client.json"] == 1
    # And the user saw the endpoint's scopes on the consent page, once; the redirect asked for them with PKCE S256
    assert person.shown_scopes == [["todos:r", "todos:rw"]]
    asked = parse_qs(urlsplit(person.opened[0]).query)
    assert asked["code_challenge_method"] == ["S256"] and asked["resource"] == [mcp_url]
    assert asked["client_id"] == [client_id]
    # And the calls went through with a token bound to /mcp/todos
    assert {"todo_create", "todo_list"} <= names
    assert not made.is_error and not listed.is_error
    assert [t["title"] for t in listed.structured_content["items"]] == ["via the official OAuth client"]
    tokens = storage.tokens
    assert tokens.access_token.startswith("oat_") and tokens.refresh_token.startswith("ort_")
    grants = _sql(
        owner_url,
        "SELECT client_id, client_name, scopes, resource FROM oauth_grants WHERE user_id = %(u)s",
        u=user.user_id,
    )
    assert grants == [(client_id, CLIENT_NAME, ["todos:r", "todos:rw"], mcp_url)]

    # -- refresh: the access token expires (server side in the database; the client's clock says so too)
    _sql(
        owner_url,
        "UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = %(h)s",
        h=hash_token(tokens.access_token),
    )
    async with httpx.AsyncClient() as http:
        stale = await http.post(
            mcp_url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Authorization": f"Bearer {tokens.access_token}", "Accept": "application/json"},
        )
    assert stale.status_code == 401 and "expired" in stale.json()["error"]["data"]["reason"]
    provider.context.token_expiry_time = time.time() - 1  # the client's clock: expires_in has run out
    mark = len(seen.responses)
    with anyio.fail_after(FLOW_BOUND_S):
        async with connection(mcp_url, provider, seen) as session:
            again = await session.call_tool("todo_list", {})
    # Then the client refreshed by itself (no browser), and the call succeeded with the new token
    assert not again.is_error and len(again.structured_content["items"]) == 1
    assert seen.since(mark)[0] == ("POST", f"{issuer}/api/oauth/token", 200)
    assert len(person.opened) == 1
    renewed = storage.tokens
    assert renewed.access_token != tokens.access_token and renewed.refresh_token != tokens.refresh_token
    # And the old refresh token is spent (rotation)
    spent = _sql(
        owner_url,
        "SELECT used_at IS NOT NULL FROM oauth_tokens WHERE token_hash = %(h)s",
        h=hash_token(tokens.refresh_token),
    )
    assert spent == [(True,)]

    # -- revocation: the client's token is revoked (RFC 7009)
    async with httpx.AsyncClient() as http:
        r = await http.post(
            f"{issuer}/api/oauth/revoke", data={"token": renewed.access_token, "client_id": client_id}
        )
    assert r.status_code == 200
    person.allowed = False  # the user is not there to authorize again
    mark = len(seen.responses)
    with anyio.fail_after(FLOW_BOUND_S), pytest.raises(BaseException) as caught:
        async with connection(mcp_url, provider, seen) as session:
            await session.call_tool("todo_list", {})
    # Then the next call was a 401 that reached the client, which went to authorize again (and was stopped)
    after = seen.since(mark)
    assert after[0] == ("POST", mcp_url, 401), after
    assert ("GET", f"{issuer}/.well-known/oauth-protected-resource/mcp/todos", 200) in after
    assert len(person.opened) == 2 and _has(caught.value, Reauthorization)


def _has(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``kind`` is ``error`` or inside it (an exception group, a cause or a context)."""
    if isinstance(error, kind):
        return True
    inner = list(getattr(error, "exceptions", ())) + [e for e in (error.__cause__, error.__context__) if e]
    return any(_has(e, kind) for e in inner)


async def test_the_official_client_registers_dynamically_the_user_narrows_and_a_step_up_widens_by_consent(
    issuer: str, fresh_browser: Any, loopback_page: Any, user: Account, owner_url: str
) -> None:
    mcp_url = f"{issuer}/mcp/todos"
    # Given a user who will first allow reading todos only
    person = BrowserUser(fresh_browser, loopback_page, user, untick=("todos:rw",))
    storage, seen = MemoryStorage(), Seen()
    provider = _provider(mcp_url, person, storage)  # no client_metadata_url: dynamic registration
    with anyio.fail_after(FLOW_BOUND_S):
        async with connection(mcp_url, provider, seen) as session:
            listed = await session.call_tool("todo_list", {})
            narrowed = storage.tokens
            # When a call needs the scope the user unticked, and the user now allows it
            person.untick = ()
            made = await session.call_tool("todo_create", {"title": "after the step-up"})
    # Then the client registered (RFC 7591) at the endpoint the metadata names, and got an ocl_ id
    registered = [r for r in seen.responses if r[1] == f"{issuer}/api/oauth/register"]
    assert registered == [("POST", f"{issuer}/api/oauth/register", 201)]
    client_id = storage.client_info.client_id
    assert client_id.startswith("ocl_")
    # And the first grant held only what the user kept
    assert not listed.is_error and narrowed.scope == "todos:r"
    # And the write was a 403 insufficient_scope the client answered by asking the user again (SEP-835 step-up),
    # then retried with the wider token
    assert ("POST", mcp_url, 403) in seen.responses
    assert len(person.opened) == 2 and person.shown_scopes == [["todos:r", "todos:rw"]] * 2
    assert not made.is_error and made.structured_content["title"] == "after the step-up"
    assert storage.tokens.scope == "todos:r todos:rw"
    grants = _sql(
        owner_url,
        "SELECT client_id, scopes FROM oauth_grants WHERE user_id = %(u)s ORDER BY created_at",
        u=user.user_id,
    )
    assert grants == [(client_id, ["todos:r"]), (client_id, ["todos:r", "todos:rw"])]


# -- the device flow ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("curl") is None, reason="docs/examples/device-login.sh needs curl")
async def test_a_headless_agent_logs_in_with_the_guides_device_script_while_the_browser_approves(
    issuer: str, fresh_browser: Any, user: Account
) -> None:
    from tests.e2e.test_docs_device_login import Run

    # Given the guide's device-login script running as a headless agent, asking for todos and notes on /mcp
    run = Run(
        issuer, SCOPE="todos:r todos:rw notes:r", RESOURCE=f"{issuer}/mcp", CLIENT_NAME="Headless agent"
    )
    try:
        code = run.user_code()
        page = next(w for w in run.seen[-1].split() if w.startswith(f"{issuer}/api/oauth/device?user_code="))
        assert page.endswith(f"user_code={code}")
        # When the person opens the page it shows (verification_uri_complete), signs in and approves, unticking
        # notes:r, while the script polls
        await anyio.to_thread.run_sync(_approve_device, fresh_browser, page, user)
        status, stdout, stderr = run.finish()
    finally:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait()
    # Then the script got its tokens and listed the MCP tools with them (its own check call)
    assert status == 0, stderr
    assert "Approved: scopes todos:r todos:rw" in stderr and "device-login.sh: logged in" in stderr
    assert re.search(rf"Checked: {re.escape(issuer)}/mcp lists \d+ tools for this token", stderr), stderr
    printed = dict(line.split("=", 1) for line in stdout.splitlines())
    assert printed["ACCESS_TOKEN"].startswith("oat_")
    # And the official client, with that token, lists and calls the tools the person allowed, and no others
    bearer = {"Authorization": f"Bearer {printed['ACCESS_TOKEN']}"}
    with anyio.fail_after(FLOW_BOUND_S):
        async with mcp_session(f"{issuer}/mcp/todos", bearer) as session:
            made = await session.call_tool("todo_create", {"title": "from the device"})
        async with mcp_session(f"{issuer}/mcp", bearer) as session:
            everything = {t.name for t in (await session.list_tools()).tools}
    assert not made.is_error and made.structured_content["title"] == "from the device"
    assert "todo_create" in everything and not [n for n in everything if n.startswith("note_")]


def _sign_in_and_allow(driver: Any, url: str, account: Account, untick: tuple[str, ...] = ()) -> list[str]:
    """Open ``url`` (a consent or device page), untick ``untick``, sign in as ``account`` and allow; the scopes the
    page showed."""
    from selenium.webdriver.common.by import By

    from tests.browser import wait_for

    driver.get(url)
    wait_for(driver, lambda d: d.find_elements(By.ID, "approve"))
    boxes = {b.get_attribute("value"): b for b in driver.find_elements(By.CSS_SELECTOR, "input[name=scope]")}
    for scope in untick:
        boxes[scope].click()
    driver.find_element(By.ID, "email").clear()
    driver.find_element(By.ID, "email").send_keys(account.email)
    driver.find_element(By.ID, "password").send_keys(account.password)
    driver.find_element(By.ID, "approve").click()
    return list(boxes)


def _approve_device(driver: Any, url: str, user: Account) -> None:
    from selenium.webdriver.common.by import By

    from tests.browser import wait_for

    assert _sign_in_and_allow(driver, url, user, untick=("notes:r",)) == ["todos:r", "todos:rw", "notes:r"]
    wait_for(driver, lambda d: d.find_elements(By.ID, "message"))
    assert "your device is connected" in driver.find_element(By.ID, "message").text
