"""A real browser for the tests of the OAuth pages: Debian's headless chromium driven by Selenium through
chromedriver, one browser per test module (``browser`` fixture), a fresh profile each time.

``scripts/setup.sh`` installs ``chromium`` and ``chromium-driver``; when either is missing the fixture fails
saying so (never a silent skip: a suite that skips its browser tests proves nothing about the pages).

A test module takes its fixtures with ``pytest_plugins = ["tests.browser"]``; ``serve_app(app)`` serves an ASGI
app on a loopback port.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("AGENTMATE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("AGENTMATE_CHROMEDRIVER", "/usr/bin/chromedriver")
INSTALL_HINT = "apt-get install chromium chromium-driver (scripts/setup.sh installs them)"
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1000,1200",
)
PAGE_LOAD_TIMEOUT_S = 30  # a bound on a hung page, not a measurement


def _require(path: str, what: str) -> None:
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{what} not found at {path}: {INSTALL_HINT}", pytrace=False)


def start_chromium(profile: Path) -> Any:
    """A headless chromium with a fresh profile in ``profile``; fails the test when it is not installed."""
    _require(CHROMIUM, "chromium")
    _require(CHROMEDRIVER, "chromedriver")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless chromium per test module (a fresh profile); each test starts with no cookies."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    driver = start_chromium(profile)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def fresh_browser(browser: Any) -> Any:
    """The module's browser with its cookies cleared and its console drained (every cookie this test set is
    gone afterwards too)."""
    browser.delete_all_cookies()
    browser.get_log("browser")
    yield browser
    browser.delete_all_cookies()


@contextmanager
def serve_app(app: Any, name: str = "uvicorn-browser") -> Iterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1:<free port> in a thread (the e2e runtime's way)."""
    from tests.e2e.conftest import serve

    with serve(app, name) as url:
        yield url


@dataclass
class LoopbackPage:
    """A client's redirect URI: a plain HTTP server on loopback that records every request it receives."""

    url: str
    hits: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def callback(self, path: str = "/callback") -> str:
        return self.url + path


@pytest.fixture
def loopback_page() -> Iterator[LoopbackPage]:
    """A loopback HTTP server (a client's redirect URI) answering every GET with a small page."""
    page = LoopbackPage("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path != "/favicon.ico":
                page.hits.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            body = b"<!doctype html><title>client</title><p id='client-landed'>back at the client</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="loopback-client", daemon=True)
    thread.start()
    page.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield page
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def wait_for(driver: Any, condition: Any, timeout_s: float = PAGE_LOAD_TIMEOUT_S) -> Any:
    """Selenium's explicit wait (a bound on a hung page, not a measurement)."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout_s).until(condition)


def csp_violations(driver: Any) -> list[str]:
    """The console's Content-Security-Policy messages since the last call."""
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e["message"]]


@pytest.fixture(scope="module")
def pages_server() -> Iterator[str]:
    """The OAuth pages served on a loopback port, that URL being the issuer (``OAUTH_ISSUER_URL``); yields it.
    The auth group's FastAPI app shape (``build_app``: the contract middleware, the error handlers)."""
    from agentmate.api.app import build_app
    from agentmate.auth.oauth import pages
    from agentmate.auth.settings import get_auth_settings

    with (
        serve_app(build_app([pages.router]), "uvicorn-oauth-pages") as url,
        pytest.MonkeyPatch.context() as mp,
    ):
        mp.setenv("OAUTH_ISSUER_URL", url)
        get_auth_settings.cache_clear()
        try:
            yield url
        finally:
            get_auth_settings.cache_clear()
    get_auth_settings.cache_clear()
