"""Each route group's Lambda ``handler`` invoked with real API Gateway HTTP API (payload 2.0) events, as AWS
invokes it: Mangum + the Powertools decorators + the FastAPI app."""

from __future__ import annotations

import importlib
import json
import logging
import uuid
from typing import Any

import pytest
from apigw import LambdaContext, http_event, parse_response

from functions.routes import ROUTE_GROUPS

# make_handler flushes metrics only when an invocation recorded some, so no "no metrics" warning is expected.

PASSWORD = "correct horse battery"


def _handler_modules() -> list[str]:
    return [m for m in ROUTE_GROUPS if callable(getattr(importlib.import_module(m), "handler", None))]


HANDLER_MODULES = _handler_modules()


def _handler_for(prefix: str):
    for module, prefixes in ROUTE_GROUPS.items():
        if prefix in prefixes:
            return importlib.import_module(module).handler
    raise LookupError(prefix)


def invoke(handler, method: str, path: str, **kwargs: Any):
    context = kwargs.pop("context", None) or LambdaContext()
    raw = handler(http_event(method, path, **kwargs), context)
    assert isinstance(raw, dict) and "statusCode" in raw, raw
    return parse_response(raw)


def _local_source(
    handler, base: str, headers: dict[str, str], repository_url: str, package_path: str, **kw: Any
):
    """A local source registered through ``handler`` (``POST {base}/sources``): its id."""
    r = invoke(
        handler,
        "POST",
        f"{base}/sources",
        headers=headers,
        json_body={"type": "local", "repository_url": repository_url, "package_path": package_path},
        **kw,
    )
    assert r.status_code == 201, r.body
    return r.json()["id"]


def test_every_route_group_exposes_a_lambda_handler():
    # The MCP server runs as a container (no zip handler); every other group must have one.
    missing = [m for m in ROUTE_GROUPS if m not in HANDLER_MODULES and not m.startswith("functions.mcp")]
    assert not missing, f"route groups without a module-level handler: {missing}"
    assert "functions.auth.app" in HANDLER_MODULES and "functions.todos.app" in HANDLER_MODULES


def test_register_login_create_and_get_a_todo_through_the_handlers():
    auth = _handler_for("/api/auth")
    todos = _handler_for("/api/todos")
    email = f"lambda-{uuid.uuid4().hex[:12]}@example.com"
    # Given a user registered and logged in through the auth function
    r = invoke(auth, "POST", "/api/auth/register", json_body={"email": email, "password": PASSWORD})
    assert r.status_code == 201, r.body
    account_id = r.json()["account_id"]
    r = invoke(auth, "POST", "/api/auth/login", json_body={"email": email, "password": PASSWORD})
    assert r.status_code == 200, r.body
    jwt_headers = {"Authorization": f"Bearer {r.json()['token']}"}
    r = invoke(auth, "GET", "/api/auth/me", headers=jwt_headers)
    assert r.status_code == 200 and r.json()["account_id"] == account_id
    # And an API key created through it
    r = invoke(
        auth,
        "POST",
        "/api/auth/apikeys",
        headers=jwt_headers,
        json_body={"name": "lambda", "scopes": ["todos:rw"]},
    )
    assert r.status_code == 201, r.body
    key = r.json()["key"]
    # When a todo is created and read through the todos function
    r = invoke(
        todos,
        "POST",
        "/api/todos",
        headers={"X-Api-Key": key, "Idempotency-Key": "lambda-1"},
        json_body={"title": "From Lambda", "tags": ["AWS"]},
    )
    assert r.status_code == 201, r.body
    todo = r.json()
    assert todo["tags"] == ["aws"]
    r = invoke(todos, "GET", f"/api/todos/{todo['id']}", headers={"Authorization": f"Bearer {key}"})
    # Then it is returned as JSON, private and uncached
    assert r.status_code == 200, r.body
    assert r.json() == todo
    assert r.headers["content-type"] == "application/json"
    assert r.headers["cache-control"] == "private, no-store"
    # And a list with a query string and an idempotent replay behave as over HTTP
    r = invoke(todos, "GET", "/api/todos", headers={"X-Api-Key": key}, query={"tag": " AWS ", "limit": "5"})
    assert r.status_code == 200 and [t["id"] for t in r.json()["items"]] == [todo["id"]]
    r = invoke(
        todos,
        "POST",
        "/api/todos",
        headers={"X-Api-Key": key, "Idempotency-Key": "lambda-1"},
        json_body={"title": "From Lambda", "tags": ["AWS"]},
    )
    assert r.status_code == 201 and r.headers["idempotent-replay"] == "true" and r.json() == todo


def test_a_base64_encoded_request_body_is_decoded():
    auth = _handler_for("/api/auth")
    email = f"lambda-b64-{uuid.uuid4().hex[:8]}@example.com"
    r = invoke(
        auth,
        "POST",
        "/api/auth/register",
        body=json.dumps({"email": email, "password": PASSWORD}),
        base64_body=True,
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 201, r.body
    assert r.json()["email"] == email


@pytest.mark.parametrize("module", HANDLER_MODULES)
def test_every_handler_answers_an_unknown_path_with_a_json_404(module):
    handler = importlib.import_module(module).handler
    for path in ("/api/__no_such_route__", f"{ROUTE_GROUPS[module][0]}/__no/such/route__"):
        r = invoke(handler, "GET", path)
        assert r.status_code == 404, (path, r.body)
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["cache-control"] == "private, no-store"
        problem = r.json()
        assert problem["status"] == 404 and path in problem["detail"]


def test_malformed_json_is_a_400_problem():
    auth = _handler_for("/api/auth")
    r = invoke(
        auth,
        "POST",
        "/api/auth/register",
        body='{"email": "a@example.com", "password": ',
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 400, r.body
    assert r.headers["content-type"] == "application/problem+json"
    assert r.headers["cache-control"] == "private, no-store"
    problem = r.json()
    assert problem["title"] == "Validation failed"
    assert [e["field"] for e in problem["errors"]] == ["body"]


def test_malformed_json_to_an_authenticated_route_is_a_400_problem(client, account):
    todos = _handler_for("/api/todos")
    r = invoke(
        todos,
        "POST",
        "/api/todos",
        body="{not json",
        headers={"X-Api-Key": account.key("todos:rw"), "Content-Type": "application/json"},
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "body"


def test_unauthenticated_calls_through_a_handler_are_401_problems():
    todos = _handler_for("/api/todos")
    r = invoke(todos, "GET", "/api/todos")
    assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"
    assert r.headers["cache-control"] == "private, no-store"


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


def test_the_request_id_is_logged_as_the_correlation_id_with_the_lambda_context(client, account, monkeypatch):
    from agentmate.core.observability import logger
    from agentmate.todos import service

    # Given a todos service that fails unexpectedly, and a handler capturing the structured log
    def boom(*_: Any, **__: Any) -> None:
        raise RuntimeError("database exploded: secret internals")

    monkeypatch.setattr(service, "get", boom)
    capture = _Capture()
    capture.setFormatter(logger.registered_formatter)
    logger.addHandler(capture)
    todos = _handler_for("/api/todos")
    context = LambdaContext(function_name="agentmate-todos")
    request_id = f"req-{uuid.uuid4().hex[:12]}"
    try:
        # When a request fails inside the function
        r = invoke(
            todos,
            "GET",
            f"/api/todos/{uuid.uuid4()}",
            headers={"X-Api-Key": account.key("todos:r")},
            request_id=request_id,
            context=context,
        )
    finally:
        logger._logger.removeHandler(capture)
    # Then the caller gets a generic 500 problem
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    assert "secret internals" not in r.body
    # And the error is logged with the API Gateway request id as correlation id, the Lambda context and account
    errors = [line for line in capture.lines if line.get("level") == "ERROR"]
    assert errors, capture.lines
    line = errors[-1]
    assert line["correlation_id"] == request_id
    assert line["function_name"] == "agentmate-todos"
    assert line["function_request_id"] == context.aws_request_id
    assert line["function_arn"] == context.invoked_function_arn
    assert line["account_id"] == account.account_id
    assert "secret internals" in line.get("exception", "")


def test_skills_function_serves_the_registry_loop(client, account):
    skills = _handler_for("/api/skills")
    h = {"X-Api-Key": account.key("skills:rw")}
    # Given a local source registered and a snapshot pushed through the skills function
    source_id = _local_source(skills, "/api/skills", h, "file:///s", "lambda-skill")
    skill = "---\nname: lambda-skill\ndescription: Runs in Lambda\ntriggers: [lambda]\n---\n# Do\nIt works.\n"
    r = invoke(
        skills,
        "POST",
        f"/api/skills/sources/{source_id}/snapshots",
        headers=h,
        json_body={"files": [{"path": "SKILL.md", "content": skill}], "activate": True, "index": True},
    )
    assert r.status_code == 201, r.body
    version_id = r.json()["version"]["id"]
    # Then the catalog, search and instructions are served by the same function
    r = invoke(skills, "GET", "/api/skills/catalog", headers=h, query={"limit": "5"})
    assert r.status_code == 200 and r.json()["items"][0]["skill_version_id"] == version_id
    r = invoke(skills, "POST", "/api/skills/search", headers=h, json_body={"query": "lambda"})
    assert r.status_code == 200 and r.json()["items"][0]["skill_version_id"] == version_id
    r = invoke(skills, "GET", f"/api/skills/versions/{version_id}/instructions", headers=h)
    assert r.status_code == 200 and r.json()["instructions"] == "# Do\nIt works."
    assert r.headers["cache-control"] == "private, no-store"


def test_knowledge_function_serves_the_registry(client, account):
    knowledge = _handler_for("/api/knowledge")
    h = {"X-Api-Key": account.key("knowledge:rw")}
    # Given a local source registered and a snapshot pushed through the knowledge function
    source_id = _local_source(knowledge, "/api/knowledge", h, "file:///kb", "ops/runbook")
    r = invoke(
        knowledge,
        "POST",
        f"/api/knowledge/sources/{source_id}/snapshots",
        headers=h,
        json_body={
            "files": [
                {"path": "KNOWLEDGE.yaml", "content": "name: Runbook\ncapabilities: [ops]\n"},
                {"path": "restart.md", "content": "# Restart\nDrain first.\n"},
            ]
        },
    )
    assert r.status_code == 201, r.body
    revision_id = r.json()["revision"]["id"]
    # Then the catalog and the documents are served by the same function
    r = invoke(knowledge, "GET", "/api/knowledge/catalog", headers=h, query={"domain": "ops"})
    assert r.status_code == 200 and [c["name"] for c in r.json()["items"]] == ["Runbook"]
    r = invoke(knowledge, "GET", f"/api/knowledge/revisions/{revision_id}/documents", headers=h)
    doc = r.json()["items"][0]
    r = invoke(knowledge, "GET", f"/api/knowledge/revisions/{revision_id}/documents/{doc['id']}", headers=h)
    assert r.status_code == 200 and r.json()["content"] == "# Restart\nDrain first.\n"
    assert r.headers["cache-control"] == "private, no-store"


def test_knowledge_wiki_function_serves_the_wiki_and_its_quality_routes(client, account):
    # The wiki and its quality checks are their own function (issue 26 §3): API Gateway routes their paths to it
    knowledge = _handler_for("/api/knowledge")
    wiki = _handler_for("/api/knowledge/wiki")
    assert wiki is not knowledge
    h = {"X-Api-Key": account.key("knowledge:rw")}
    # Given a source registered through the knowledge function
    source_id = _local_source(
        knowledge, "/api/knowledge", h, "file:///kb", "ops/wiki", route_key="ANY /api/knowledge/{proxy+}"
    )
    # When the wiki function is invoked on each of its prefixes, as API Gateway's more specific routes send them
    r = invoke(
        wiki,
        "POST",
        "/api/knowledge/compile",
        headers=h,
        json_body={"source_id": source_id},
        route_key="ANY /api/knowledge/compile",
    )
    # Then it answers them (no compiler model is configured here: the operator gap is a 501 naming the setting)
    assert r.status_code == 501 and "COMPILER_BASE_URL" in r.json()["detail"], r.body
    r = invoke(wiki, "GET", "/api/knowledge/builds", headers=h, route_key="ANY /api/knowledge/builds")
    assert r.status_code == 200 and r.json()["items"] == [], r.body
    missing = uuid.uuid4()
    r = invoke(
        wiki,
        "GET",
        f"/api/knowledge/builds/{missing}",
        headers=h,
        route_key="ANY /api/knowledge/builds/{proxy+}",
    )
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json", r.body
    r = invoke(
        wiki, "GET", "/api/knowledge/wiki/lint/runs", headers=h, route_key="ANY /api/knowledge/wiki/{proxy+}"
    )
    assert r.status_code == 200 and r.json()["items"] == [], r.body
    r = invoke(
        wiki,
        "GET",
        "/api/knowledge/validation/summary",
        headers=h,
        route_key="ANY /api/knowledge/validation/{proxy+}",
    )
    assert r.status_code == 200, r.body
    assert r.headers["cache-control"] == "private, no-store"
    # And the knowledge function no longer declares them (its init builds only its own routes)
    r = invoke(knowledge, "GET", "/api/knowledge/builds", headers=h)
    assert r.status_code == 404, r.body
