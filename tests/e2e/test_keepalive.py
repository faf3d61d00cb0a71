"""An unexpected error is a 500 problem+json that keeps the keep-alive connection (issue 8, finding 2).

Starlette's ServerErrorMiddleware renders a 500 and then re-raises, and uvicorn closes the connection after an
exception: the client's next request on it failed with ECONNRESET. A real uvicorn on loopback, one pooled
httpx connection, an induced failure in between two requests.
"""

from __future__ import annotations

import httpx
from fastapi import APIRouter, Request

from agentmate.api.app import build_app
from tests.e2e.conftest import serve


def _app():  # the builder every Lambda uses, so the error handling under test is the production one
    router = APIRouter(prefix="/api/boom")

    @router.get("/fail")
    def fail() -> dict[str, str]:
        raise RuntimeError("induced failure: secret-internal-detail")

    @router.get("/peer")
    def peer(request: Request) -> dict[str, int]:
        return {"port": request.client.port if request.client else -1}

    return build_app([router])


def test_the_connection_survives_an_unexpected_error():
    from infra.local_app import build_local_app

    boom = _app()
    # "/mcp" overridden too: this test needs no MCP session manager (each one runs once per process).
    with (
        serve(build_local_app(extra={"/api/boom": boom, "/mcp": boom}), "uvicorn-keepalive") as url,
        httpx.Client(
            base_url=url,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            timeout=10,
        ) as client,
    ):
        before = client.get("/api/boom/peer")
        assert before.status_code == 200
        failed = client.get("/api/boom/fail")
        assert failed.status_code == 500
        assert failed.headers["content-type"] == "application/problem+json"
        assert failed.headers["cache-control"] == "private, no-store"
        assert failed.json() == {
            "type": "about:blank",
            "title": "Internal Server Error",
            "status": 500,
            "detail": "internal server error",
            "errors": [],
        }
        assert "secret-internal-detail" not in failed.text
        assert failed.headers.get("connection", "").lower() != "close"
        after = client.get("/api/boom/peer")
        assert after.status_code == 200
        assert after.json()["port"] == before.json()["port"]  # the same TCP connection, not a reconnect
        assert client.get("/api/health").status_code == 200
