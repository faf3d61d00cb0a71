"""docs/openapi.json is the combined OpenAPI document of every route group; it must match what is served.

On failure run ``make openapi`` (``python -m infra.openapi --write``) and commit the result.
"""

from __future__ import annotations

import json
import subprocess
import sys

from infra import openapi


def test_docs_openapi_json_matches_the_served_route_groups():
    report = openapi.drift()
    assert report == "", "\n" + report


def test_the_check_command_exits_non_zero_with_a_readable_diff_when_the_document_drifted(tmp_path):
    # Given a committed document missing one operation and with one description edited
    doc = openapi.build()
    removed_path = "/api/todos/search"
    del doc["paths"][removed_path]
    doc["paths"]["/api/todos"]["get"]["description"] = "an outdated description"
    stale = tmp_path / "openapi.json"
    stale.write_text(openapi.render(doc), encoding="utf-8")
    # When the check runs against it
    r = subprocess.run(
        [sys.executable, "-m", "infra.openapi", "--check", "--path", str(stale)],
        cwd=openapi.ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Then it fails, naming the added and changed operations and showing a diff
    assert r.returncode == 1, r.stdout + r.stderr
    assert "out of date" in r.stderr and "--write" in r.stderr
    assert f"added operations:\n  GET {removed_path}" in r.stderr
    assert "changed operations:\n  GET /api/todos" in r.stderr
    assert '-        "description": "an outdated description",' in r.stderr
    # And it passes against a freshly written document
    assert openapi.main(["--write", "--path", str(stale)]) == 0
    assert openapi.main(["--check", "--path", str(stale)]) == 0


def test_the_document_is_rendered_deterministically():
    text = openapi.render(openapi.build())
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert openapi.render(openapi.build()) == text


def test_every_route_group_contributes_and_operation_ids_are_unique():
    from functions.routes import ROUTE_GROUPS

    doc = openapi.build()
    ops = [
        (m, p, op) for p, item in doc["paths"].items() for m, op in item.items() if m in openapi.HTTP_METHODS
    ]
    groups = {op["x-route-group"] for _, _, op in ops}
    assert groups == set(openapi.route_group_apps()), groups
    assert set(openapi.route_group_apps()) <= set(ROUTE_GROUPS)
    ids = [op["operationId"] for _, _, op in ops]
    assert len(ids) == len(set(ids))


def test_every_operation_has_a_description_for_agents():
    # docs/contributing.md: each route has a one-line docstring; it becomes the description agents read.
    doc = openapi.build()
    missing = sorted(
        f"{m.upper()} {p}"
        for p, item in doc["paths"].items()
        for m, op in item.items()
        if m in openapi.HTTP_METHODS and not op.get("description", "").strip()
    )
    assert not missing, f"operations without a docstring/description: {missing}"


def test_public_and_authenticated_operations_declare_their_security():
    doc = openapi.build()
    assert set(doc["components"]["securitySchemes"]) == {"ApiKeyHeader", "BearerAuth"}
    public = {
        f"{m.upper()} {p}"
        for p, item in doc["paths"].items()
        for m, op in item.items()
        if m in openapi.HTTP_METHODS and op["security"] == []
    }
    assert (
        public
        == {
            "POST /api/auth/register",
            "POST /api/auth/login",
            "GET /api/health",
            "GET /api/schema",
            "GET /api/openapi.json",
            "GET /api/guide",
            "GET /api/llms.txt",
            "GET /api/docs/{name}",
            # OAuth (issue 24): clients authenticate the OAuth way (client_id, PKCE, a client secret in the form)
            "GET /.well-known/oauth-authorization-server",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-protected-resource/api",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource/mcp/{module}",
            "GET /api/oauth/authorize",
            "POST /api/oauth/authorize",
            "POST /api/oauth/token",
            "POST /api/oauth/revoke",
            "POST /api/oauth/register",
            "POST /api/oauth/device_authorization",  # RFC 8628 §3.1: the client authenticates in the form, if at all
            # The login, consent and device-verification pages (the user signs in on the form itself)
            "GET /api/oauth/consent",
            "POST /api/oauth/consent",
            "GET /api/oauth/device",
            # account archive links (issue 25 §4): the signed, expiring token in the path is the credential
            "GET /api/account/archives/{token}",
            "PUT /api/account/archives/{token}",
            "POST /api/oauth/device",
        }
    )
    todo = doc["paths"]["/api/todos"]
    assert todo["get"]["x-required-scopes"] == ["todos:r"] and todo["post"]["x-required-scopes"] == [
        "todos:rw"
    ]
