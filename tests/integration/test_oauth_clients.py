"""Who an OAuth client is (issue 24): a client ID metadata document fetched from an https loopback server signed by
a test CA (``OAUTH_CIMD_CA_BUNDLE``, loopback opened with ``OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS=127.0.0.0/8``), its
refusals (loopback without the opt-in, http, redirects, size and time limits, wrong content, a client_id that
differs, an untrusted certificate), its cache; and dynamic registration (RFC 7591) through the MCP SDK's handler,
with our checks and the per-address throttle.

The registration route is core's (``auth/oauth/router.py``, not on this branch): ``_register_app`` below is the
smallest stand-in of it — throttle, then the SDK's ``RegistrationHandler`` over a provider whose
``register_client`` is ``clients.save_registered_client``."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.shared.auth import OAuthClientInformationFull
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from agentmate.auth.oauth import cimd, clients
from agentmate.auth.oauth.settings import OAuthSettings
from agentmate.core.db import get_database
from agentmate.core.errors import RateLimited
from agentmate.core.scopes import SCOPES
from tests.fakes.https_server import HttpsServer

HOST_ENV = {"OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS": "127.0.0.0/8"}


@pytest.fixture
def server() -> Iterator[HttpsServer]:
    with HttpsServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_document_cache() -> Iterator[None]:
    cimd.CACHE.clear()
    yield
    cimd.CACHE.clear()


@pytest.fixture
def settings(server: HttpsServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """OAuthSettings read from the environment: the test CA trusted, loopback opened, plus ``env`` overrides."""
    ca = server.ca_pem(tmp_path)

    def make(**env: str) -> OAuthSettings:
        values = {"OAUTH_CIMD_CA_BUNDLE": ca, **HOST_ENV, **env}
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        return OAuthSettings()

    return make


def _doc(url: str, **changes: Any) -> dict[str, Any]:
    return {
        "client_id": url,
        "client_name": "Loopback Test Client",
        "client_uri": "https://client.example/",
        "redirect_uris": ["http://127.0.0.1:33418/callback"],
        **changes,
    }


def _serve_document(server: HttpsServer, **route: Any) -> str:
    path = f"/clients/{uuid.uuid4().hex}.json"
    url = server.url(path)
    return server.document(path, _doc(url), **route)


def _path(url: str) -> str:
    return url.split(str(url.split("/")[2]), 1)[1]


# Client ID metadata documents


def test_an_https_client_id_is_its_fetched_document_as_a_public_client(server, settings):
    # Given a client's metadata document on an https host with a certificate from the trusted test CA
    url = _serve_document(server)
    # When the authorization server looks the client up
    client = clients.get_client(get_database(), settings(), url)
    # Then the client is the document: a public client with its name and redirect URIs, any product scope allowed
    assert client is not None
    assert client.client_id == url
    assert client.client_name == "Loopback Test Client"
    assert client.token_endpoint_auth_method == "none" and client.client_secret is None
    assert [str(u) for u in client.redirect_uris or []] == ["http://127.0.0.1:33418/callback"]
    assert (client.scope or "").split() == list(SCOPES)
    assert client.validate_scope("todos:r notes:rw") == ["todos:r", "notes:rw"]


def test_a_documents_own_scope_is_kept(server, settings):
    path = f"/clients/{uuid.uuid4().hex}.json"
    url = server.document(path, _doc(server.url(path), scope="todos:r"))
    client = clients.get_client(get_database(), settings(), url)
    assert client is not None and client.scope == "todos:r"


def test_a_loopback_host_is_refused_without_the_operators_opt_in(server, settings):
    # Given the document is served, but no private network is opened
    url = _serve_document(server)
    oauth = settings(OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS="")
    # Then the client is unknown, and no connection was made
    assert clients.get_client(get_database(), oauth, url) is None
    assert server.hits[_path(url)] == 0


def test_a_cloud_metadata_address_is_refused_even_with_every_network_opened(settings):
    oauth = settings(OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS="0.0.0.0/0,::/0")
    assert clients.get_client(get_database(), oauth, "https://169.254.169.254/latest/client.json") is None
    assert clients.get_client(get_database(), oauth, "https://[fe80::1]/client.json") is None


def test_an_http_client_id_is_refused_without_a_fetch(server, settings):
    url = _serve_document(server)
    http_url = url.replace("https://", "http://", 1)
    assert clients.get_client(get_database(), settings(), http_url) is None
    assert server.hits[_path(url)] == 0


def test_a_certificate_from_an_untrusted_ca_is_refused(server, settings):
    url = _serve_document(server)
    assert clients.get_client(get_database(), settings(OAUTH_CIMD_CA_BUNDLE=""), url) is None


def test_a_redirect_is_not_followed(server, settings):
    # Given a client_id URL that redirects to a valid document (even one naming the original URL)
    target_path = f"/clients/{uuid.uuid4().hex}.json"
    path = f"/clients/{uuid.uuid4().hex}.json"
    server.document(target_path, _doc(server.url(path)))
    url = server.redirect(path, server.url(target_path))
    # Then the client is unknown and the redirect's target was never asked
    assert clients.get_client(get_database(), settings(), url) is None
    assert (server.hits[path], server.hits[target_path]) == (1, 0)


def test_a_document_over_the_size_limit_is_refused_whether_or_not_it_declares_its_length(server, settings):
    oauth = settings(OAUTH_CIMD_MAX_BYTES="1024")
    # a declared Content-Length over the limit
    path = f"/clients/{uuid.uuid4().hex}.json"
    url = server.document(path, _doc(server.url(path), client_name="x" * 180, contacts=["y" * 300] * 4))
    assert clients.get_client(get_database(), oauth, url) is None
    # a body streamed without a length, far over the limit
    huge = server.route(f"/clients/{uuid.uuid4().hex}.json", huge=4 * 1024 * 1024)
    assert clients.get_client(get_database(), oauth, huge) is None
    # a document within the limit passes
    assert clients.get_client(get_database(), oauth, _serve_document(server)) is not None


def test_a_document_that_does_not_arrive_within_the_time_limit_is_refused(server, settings):
    # Given a host that sends the first bytes of the document and then nothing
    url = _serve_document(server, slow=True)
    # Then the fetch gives up at the (small) time limit and the client is unknown
    assert clients.get_client(get_database(), settings(OAUTH_CIMD_TIMEOUT_S="0.3"), url) is None
    assert server.hits[_path(url)] == 1


def test_a_document_served_as_something_else_than_json_is_refused(server, settings):
    oauth = settings()
    path = f"/clients/{uuid.uuid4().hex}.json"
    as_html = server.document(path, _doc(server.url(path)), content_type="text/html")
    assert clients.get_client(get_database(), oauth, as_html) is None
    not_json = server.route(f"/clients/{uuid.uuid4().hex}.json", body=b"<html>a client</html>")
    assert clients.get_client(get_database(), oauth, not_json) is None
    missing = server.url(f"/clients/{uuid.uuid4().hex}.json")
    assert clients.get_client(get_database(), oauth, missing) is None
    broken = server.route(f"/clients/{uuid.uuid4().hex}.json", status=500, body=b"{}")
    assert clients.get_client(get_database(), oauth, broken) is None


def test_a_document_whose_client_id_differs_from_its_url_is_refused(server, settings):
    path = f"/clients/{uuid.uuid4().hex}.json"
    url = server.document(path, _doc("https://other.example/client.json"))
    assert clients.get_client(get_database(), settings(), url) is None


def test_a_document_is_fetched_once_while_cached(server, settings):
    oauth = settings()
    url = _serve_document(server, headers={"Cache-Control": "max-age=600"})
    first = clients.get_client(get_database(), oauth, url)
    second = clients.get_client(get_database(), oauth, url)
    assert first is not None and second is not None and first.client_id == second.client_id == url
    assert server.hits[_path(url)] == 1


def test_no_store_or_a_zero_cache_setting_fetches_every_time(server, settings):
    no_store = _serve_document(server, headers={"Cache-Control": "no-store"})
    for _ in range(2):
        assert clients.get_client(get_database(), settings(), no_store) is not None
    assert server.hits[_path(no_store)] == 2
    uncached = _serve_document(server)
    for _ in range(2):
        assert clients.get_client(get_database(), settings(OAUTH_CIMD_CACHE_S="0"), uncached) is not None
    assert server.hits[_path(uncached)] == 2


def test_a_failure_is_remembered_so_a_bad_url_is_not_fetched_on_every_request(server, settings):
    oauth = settings()
    url = server.route(f"/clients/{uuid.uuid4().hex}.json", status=404, body=b"{}")
    for _ in range(3):
        assert clients.get_client(get_database(), oauth, url) is None
    assert server.hits[_path(url)] == 1


def test_an_unknown_registered_client_id_is_none():
    oauth = OAuthSettings()
    assert clients.get_client(get_database(), oauth, "ocl_" + "x" * 32) is None
    assert clients.get_client(get_database(), oauth, "not-a-client") is None


# Dynamic registration (RFC 7591)


class _Provider:
    """The one provider method the SDK's registration handler calls (core's provider, in miniature)."""

    async def register_client(self, info: OAuthClientInformationFull) -> None:
        await run_in_threadpool(clients.save_registered_client, get_database(), info)


def _register_app(oauth: OAuthSettings) -> Starlette:
    handler = RegistrationHandler(_Provider(), ClientRegistrationOptions(enabled=True))  # type: ignore[arg-type]

    async def register(request: Request) -> Response:
        address = request.client.host if request.client else "unknown"
        try:
            await run_in_threadpool(clients.check_registration_allowed, get_database(), oauth, address)
        except RateLimited as exc:
            body = {"error": "slow_down", "error_description": str(exc)}
            return JSONResponse(body, 429, headers={"Retry-After": str(exc.retry_after)})
        return await handler.handle(request)

    return Starlette(routes=[Route("/api/oauth/register", register, methods=["POST"])])


def _address() -> str:
    return f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


@pytest.fixture
def registrar():
    def make(oauth: OAuthSettings | None = None, address: str | None = None) -> TestClient:
        app = _register_app(oauth or OAuthSettings())
        return TestClient(app, client=(address or _address(), 40000))

    return make


def _register(http: TestClient, **metadata: Any):
    body = {
        "client_name": "Registered Client",
        "redirect_uris": ["http://127.0.0.1:40123/callback"],
        **metadata,
    }
    return http.post("/api/oauth/register", json=body)


def test_a_public_client_registers_and_is_found_by_its_ocl_id(registrar, owner_url):
    # When a public client registers
    r = _register(registrar(), token_endpoint_auth_method="none", client_uri="https://client.example/")
    # Then it gets an ocl_ id and no secret
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["client_id"].startswith("ocl_") and "client_secret" not in body
    # And the authorization server finds it again, with its metadata
    client = clients.get_client(get_database(), OAuthSettings(), body["client_id"])
    assert client is not None
    assert client.client_name == "Registered Client" and str(client.client_uri) == "https://client.example/"
    assert client.token_endpoint_auth_method == "none" and client.client_secret is None
    assert [str(u) for u in client.redirect_uris or []] == ["http://127.0.0.1:40123/callback"]
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT client_secret_hash, metadata FROM oauth_clients WHERE client_id = %s",
            (body["client_id"],),
        ).fetchone()
    assert row is not None and row[0] is None and "client_id" not in row[1]


def test_a_confidential_client_gets_an_ocs_secret_that_only_its_hash_keeps(registrar, owner_url):
    r = _register(registrar(), token_endpoint_auth_method="client_secret_post")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["client_secret"].startswith("ocs_") and body["client_secret_expires_at"] == 0
    db = get_database()
    assert clients.verify_client_secret(db, body["client_id"], body["client_secret"])
    assert not clients.verify_client_secret(db, body["client_id"], body["client_secret"] + "x")
    assert not clients.verify_client_secret(db, "ocl_" + "y" * 32, body["client_secret"])
    client = clients.get_client(db, OAuthSettings(), body["client_id"])
    assert client is not None and client.client_secret is None
    assert client.token_endpoint_auth_method == "client_secret_post"
    with psycopg.connect(owner_url) as conn:
        stored = conn.execute(
            "SELECT client_secret_hash, metadata::text FROM oauth_clients WHERE client_id = %s",
            (body["client_id"],),
        ).fetchone()
    assert stored is not None and len(stored[0]) == 64 and body["client_secret"] not in stored[1]


@pytest.mark.parametrize(
    ("metadata", "error", "words"),
    [
        (
            {"redirect_uris": [f"http://127.0.0.1:40123/cb{i}" for i in range(11)]},
            "invalid_redirect_uri",
            "redirect_uris lists 11 URLs; at most 10",
        ),
        (
            {"redirect_uris": ["https://client.example/cb#x"]},
            "invalid_redirect_uri",
            "must not carry a fragment",
        ),
        ({"redirect_uris": ["http://client.example/cb"]}, "invalid_redirect_uri", "http only on a loopback"),
        (
            {"redirect_uris": ["javascript:alert(1)"]},
            "invalid_redirect_uri",
            "must not use the javascript: scheme",
        ),
        ({"client_name": "n" * 201}, "invalid_client_metadata", "client_name is longer than 200"),
        ({"contacts": ["a@b.example"] * 11}, "invalid_client_metadata", "contacts lists 11 values"),
        ({"software_version": "v" * 201}, "invalid_client_metadata", "software_version is longer than 200"),
        ({"jwks": {"keys": ["k" * 40000]}}, "invalid_client_metadata", "larger than 32768"),
    ],
)
def test_registration_beyond_the_sdks_checks_is_refused_naming_the_field(registrar, metadata, error, words):
    r = _register(registrar(), **metadata)
    assert r.status_code == 400, r.text
    assert r.json()["error"] == error
    assert words in r.json()["error_description"]


def test_a_native_apps_own_redirect_scheme_registers(registrar):
    r = _register(
        registrar(), redirect_uris=["com.example.app:/oauth2redirect"], token_endpoint_auth_method="none"
    )
    assert r.status_code == 201, r.text


def test_registrations_from_one_address_are_throttled_with_retry_after(registrar, monkeypatch):
    # Given an address may register three clients per window
    monkeypatch.setenv("OAUTH_REGISTRATIONS_PER_ADDRESS", "3")
    oauth = OAuthSettings()
    address = _address()
    http = registrar(oauth, address)
    # When it registers three (one of them invalid: every attempt counts)
    assert _register(http).status_code == 201
    assert _register(http, redirect_uris=["https://client.example/cb#x"]).status_code == 400
    assert _register(http).status_code == 201
    # Then the fourth is refused with 429 and Retry-After
    r = _register(http)
    assert r.status_code == 429, r.text
    assert int(r.headers["retry-after"]) >= 1
    assert "too many client registrations" in r.json()["error_description"]
    # While another address still registers
    assert _register(registrar(oauth)).status_code == 201
