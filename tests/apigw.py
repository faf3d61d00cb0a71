"""API Gateway HTTP API (payload format 2.0) events and a Lambda context, for invoking a route group's
``handler`` exactly as AWS does. Shared by tests/integration/test_lambda_handlers.py and bench/warm_invoke.py.

Reference: https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode


@dataclass
class LambdaContext:
    """The attributes of ``awslambdaric``'s context object that Powertools and Mangum read."""

    function_name: str = "agentmate-test-function"
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/agentmate-test-function"
    log_stream_name: str = "2026/01/01/[$LATEST]0123456789abcdef"
    deadline_ms: int = field(default_factory=lambda: int(time.time() * 1000) + 30_000)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:eu-west-1:123456789012:function:{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.deadline_ms - int(time.time() * 1000))


def http_event(
    method: str,
    path: str,
    *,
    query: dict[str, Any] | str | None = None,
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    body: str | bytes | None = None,
    base64_body: bool = False,
    route_key: str | None = None,
    request_id: str | None = None,
    source_ip: str = "203.0.113.7",
) -> dict[str, Any]:
    """An HTTP API v2 event for ``method path``; header names are lower-cased as API Gateway delivers them.

    ``route_key`` defaults to ``"$default"`` (the catch-all route); pass e.g. ``"GET /api/todos/{proxy+}"``
    to mimic a declared route. ``json_body`` is serialised; ``body`` is sent as-is (base64 when asked).
    """
    method = method.upper()
    raw_query = query if isinstance(query, str) else urlencode(query or {}, doseq=True)
    hdrs = {k.lower(): v for k, v in (headers or {}).items()}
    hdrs.setdefault("host", "abc123.execute-api.eu-west-1.amazonaws.com")
    hdrs.setdefault("user-agent", "agentmate-tests")
    hdrs.setdefault("x-forwarded-proto", "https")
    hdrs.setdefault("x-forwarded-port", "443")
    hdrs.setdefault("x-forwarded-for", source_ip)
    payload: str | None = None
    is_b64 = False
    if json_body is not None:
        payload = json.dumps(json_body)
        hdrs.setdefault("content-type", "application/json")
    elif body is not None:
        payload = body.decode() if isinstance(body, bytes) and not base64_body else body  # type: ignore[assignment]
    if payload is not None and base64_body:
        raw = payload.encode() if isinstance(payload, str) else payload
        payload = base64.b64encode(raw).decode()
        is_b64 = True
    if payload is not None:
        hdrs.setdefault("content-length", str(len(payload)))
    request_id = request_id or base64.b32encode(uuid.uuid4().bytes)[:16].decode()
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key or "$default",
        "rawPath": path,
        "rawQueryString": raw_query,
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": hdrs["host"],
            "domainPrefix": hdrs["host"].split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": hdrs["user-agent"],
            },
            "requestId": request_id,
            "routeKey": route_key or "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": is_b64,
    }
    if raw_query:
        params: dict[str, list[str]] = {}
        for k, v in parse_qsl(raw_query, keep_blank_values=True):
            params.setdefault(k, []).append(v)
        event["queryStringParameters"] = {k: ",".join(v) for k, v in params.items()}
    if payload is not None:
        event["body"] = payload
    return event


@dataclass
class LambdaResponse:
    """A parsed HTTP API v2 Lambda response."""

    status_code: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


def parse_response(raw: dict[str, Any]) -> LambdaResponse:
    body = raw.get("body", "") or ""
    if raw.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    headers = {k.lower(): v for k, v in (raw.get("headers") or {}).items()}
    return LambdaResponse(raw["statusCode"], headers, body)
