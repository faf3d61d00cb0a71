"""Every REST route x every kind of caller: authentication and scopes are enforced on all of them.

Routes are enumerated from the route-group apps in functions/routes.py (their OpenAPI), so a new route is
picked up automatically — and this test FAILS until the route is added to ``EXPECTED`` below with the scope
spec/001 gives it. For each route:

* no credential → 401;
* an API key holding every scope except the route's → 403;
* ``<domain>:r`` → allowed on reads (2xx or a non-auth 4xx), 403 on writes;
* ``<domain>:rw`` (the route's own scopes) → not 401/403;
* the account's JWT → not 401/403.

Public routes only need to answer without credentials; admin routes need an admin user (a normal user's JWT or
key is a 403). Paths use placeholder ids (random UUIDs): a 404 is fine, the point is that auth comes first.
"""

from __future__ import annotations

import importlib
import re
import uuid
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from conftest import make_account

from functions.routes import ROUTE_GROUPS

HTTP_METHODS = ("get", "put", "post", "delete", "patch")

PUBLIC = "public"  # no credential needed
AUTHENTICATED = "authenticated"  # any valid credential, no scope
ADMIN = "admin"  # a user with role admin
USER_SESSION = (
    "user session"  # the signed-in user's JWT only: an API key alone is a 401, one sent as the bearer a 403
)

WHOLE_ACCOUNT = tuple(
    f"{d}:rw" for d in ("todos", "notes", "reports", "bookmarks", "expenses", "memory", "skills", "knowledge")
)

# (method, path template with parameters written as {}) → the scope(s) the route requires.
# From spec/001 ("API Endpoints": each endpoint's "(scope: …)", the scope table, "Auth (public)").
SPEC: dict[tuple[str, str], str | tuple[str, ...]] = {
    # Auth (public) / Auth (authenticated)
    ("POST", "/api/auth/register"): PUBLIC,
    ("POST", "/api/auth/login"): PUBLIC,
    ("GET", "/api/auth/me"): AUTHENTICATED,
    ("GET", "/api/auth/usage"): AUTHENTICATED,
    ("POST", "/api/auth/apikeys"): "manage_keys",  # "manage_keys: Create/delete API keys"
    ("GET", "/api/auth/apikeys"): "manage_keys",
    ("DELETE", "/api/auth/apikeys/{}"): "manage_keys",
    # Todos
    ("POST", "/api/todos"): "todos:rw",
    ("GET", "/api/todos"): "todos:r",
    ("GET", "/api/todos/search"): "todos:r",
    ("GET", "/api/todos/{}"): "todos:r",
    ("PATCH", "/api/todos/{}"): "todos:rw",
    ("DELETE", "/api/todos/{}"): "todos:rw",
    # Notes
    ("POST", "/api/notes"): "notes:rw",
    ("GET", "/api/notes"): "notes:r",
    ("GET", "/api/notes/search"): "notes:r",
    ("GET", "/api/notes/{}"): "notes:r",
    ("PATCH", "/api/notes/{}"): "notes:rw",
    ("DELETE", "/api/notes/{}"): "notes:rw",
    # Memory
    ("POST", "/api/memory/events"): "memory:rw",
    ("POST", "/api/memory/entries"): "memory:rw",
    ("GET", "/api/memory/entries"): "memory:r",
    ("GET", "/api/memory/entries/{}"): "memory:r",
    ("POST", "/api/memory/search"): "memory:r",
    ("GET", "/api/memory/timeline"): "memory:r",
    ("POST", "/api/memory/entries/{}/supersede"): "memory:rw",
    ("POST", "/api/memory/entries/{}/feedback"): "memory:rw",
    ("GET", "/api/memory/entries/{}/feedback"): "memory:r",
    ("POST", "/api/memory/checkpoints"): "memory:rw",
    ("GET", "/api/memory/resume"): "memory:r",
    ("GET", "/api/memory/entries/{}/attribution"): "memory:r",
    # Working memory
    ("POST", "/api/memory/working/sessions"): "memory:rw",
    ("GET", "/api/memory/working/sessions"): "memory:r",
    ("GET", "/api/memory/working/sessions/{}"): "memory:r",
    ("PATCH", "/api/memory/working/sessions/{}"): "memory:rw",
    ("DELETE", "/api/memory/working/sessions/{}"): "memory:rw",
    ("POST", "/api/memory/working/sessions/{}/items"): "memory:rw",
    ("GET", "/api/memory/working/sessions/{}/items"): "memory:r",
    ("DELETE", "/api/memory/working/sessions/{}/items/{}"): "memory:rw",
    # Context pack ("route scope: memory:r", plus per-layer scopes inside)
    ("POST", "/api/context/pack"): "memory:r",
    # Skills
    ("POST", "/api/skills/sources"): "skills:rw",
    ("GET", "/api/skills/sources"): "skills:r",
    ("GET", "/api/skills/sources/{}/revisions"): "skills:r",
    ("POST", "/api/skills/sources/{}/snapshots"): "skills:rw",
    ("POST", "/api/skills/sources/{}/sync"): "skills:rw",
    ("POST", "/api/skills/compile"): "skills:rw",
    ("GET", "/api/skills/catalog"): "skills:r",
    ("GET", "/api/skills/versions/{}/instructions"): "skills:r",
    ("GET", "/api/skills/versions/{}/resources"): "skills:r",
    ("GET", "/api/skills/versions/{}/resources/{}"): "skills:r",
    ("POST", "/api/skills/index"): "skills:rw",
    ("POST", "/api/skills/versions/{}/quality-runs"): "skills:rw",
    ("GET", "/api/skills/versions/{}/quality-runs"): "skills:r",
    ("GET", "/api/skills/quality-runs/{}"): "skills:r",
    ("POST", "/api/skills/search"): "skills:r",
    ("GET", "/api/skills/versions/active"): "skills:r",
    ("GET", "/api/skills/versions/{}/files"): "skills:r",
    ("POST", "/api/skills/versions/{}/activate"): "skills:rw",
    # Knowledge
    ("POST", "/api/knowledge/sources"): "knowledge:rw",
    ("GET", "/api/knowledge/sources"): "knowledge:r",
    ("GET", "/api/knowledge/sources/{}/revisions"): "knowledge:r",
    ("POST", "/api/knowledge/sources/{}/sync"): "knowledge:rw",
    ("POST", "/api/knowledge/sources/{}/snapshots"): "knowledge:rw",
    ("GET", "/api/knowledge/revisions/{}/documents"): "knowledge:r",
    ("GET", "/api/knowledge/revisions/{}/documents/{}"): "knowledge:r",
    ("GET", "/api/knowledge/catalog"): "knowledge:r",
    ("POST", "/api/knowledge/index"): "knowledge:rw",
    ("POST", "/api/knowledge/search"): "knowledge:r",
    ("GET", "/api/knowledge/documents/{}/links"): "knowledge:r",
    ("POST", "/api/knowledge/discover"): ("knowledge:r", "skills:r"),
    ("POST", "/api/knowledge/resolutions"): ("knowledge:rw", "skills:r"),
    ("GET", "/api/knowledge/resolutions"): "knowledge:r",
    ("GET", "/api/knowledge/resolutions/{}"): "knowledge:r",
    ("POST", "/api/knowledge/wiki/search"): "knowledge:r",
    ("GET", "/api/knowledge/wiki/index"): "knowledge:r",
    ("POST", "/api/knowledge/wiki/index"): "knowledge:rw",
    ("POST", "/api/knowledge/compile"): "knowledge:rw",
    ("GET", "/api/knowledge/queue"): "knowledge:r",
    ("GET", "/api/knowledge/builds"): "knowledge:r",
    ("GET", "/api/knowledge/builds/{}"): "knowledge:r",
    ("GET", "/api/knowledge/builds/{}/pages"): "knowledge:r",
    ("GET", "/api/knowledge/builds/{}/pages/{}"): "knowledge:r",
    ("GET", "/api/knowledge/builds/{}/diff"): "knowledge:r",
    ("GET", "/api/knowledge/builds/{}/events"): "knowledge:r",
    ("POST", "/api/knowledge/builds/{}/activate"): "knowledge:rw",
    # Operator repair ("POST /api/admin/retrieval/lexical/rebuild")
    ("POST", "/api/admin/retrieval/lexical/rebuild"): ADMIN,
    # Account suspension (issue 8: the account is active)
    ("POST", "/api/admin/accounts/{}/suspend"): ADMIN,
    ("POST", "/api/admin/accounts/{}/reactivate"): ADMIN,
}

# Routes beyond spec/001's REST listing. Each follows its domain's rule from the scope table ("Read X" for
# reads, "Read & write X" for changes) and its MCP tool's scope ("MCP tool calls enforce the same API key
# scopes as REST").
EXTENSIONS: dict[tuple[str, str], str | tuple[str, ...]] = {
    ("GET", "/api/health"): PUBLIC,
    ("GET", "/api/schema"): PUBLIC,
    ("GET", "/api/openapi.json"): PUBLIC,
    ("GET", "/api/guide"): PUBLIC,  # the agent integration guide (issue 10)
    ("GET", "/api/llms.txt"): PUBLIC,
    ("GET", "/api/docs/{}"): PUBLIC,  # the docs the guide links (issue 23)
    # OAuth discovery (issue 24): RFC 9728 protected-resource metadata, RFC 8414 authorization-server metadata
    ("GET", "/.well-known/oauth-protected-resource"): PUBLIC,
    ("GET", "/.well-known/oauth-protected-resource/api"): PUBLIC,
    ("GET", "/.well-known/oauth-protected-resource/mcp"): PUBLIC,
    ("GET", "/.well-known/oauth-protected-resource/mcp/{}"): PUBLIC,
    ("GET", "/.well-known/oauth-authorization-server"): PUBLIC,
    # the user's own credentials (issue 8): password change, sign-out everywhere, account deletion
    ("POST", "/api/auth/password"): USER_SESSION,
    ("POST", "/api/auth/logout-all"): USER_SESSION,
    ("DELETE", "/api/auth/account"): USER_SESSION,
    # the OAuth device grant (issue 24, RFC 8628): a client asks without credentials; the signed-in user decides
    ("POST", "/api/oauth/device_authorization"): PUBLIC,
    ("POST", "/api/oauth/device/approve"): USER_SESSION,
    ("POST", "/api/oauth/device/deny"): USER_SESSION,
    ("PATCH", "/api/notes/{}/append"): "notes:rw",  # note_append
    # reports / bookmarks / expenses: CRUD like todos (MCP report_*, bookmark_*, expense_* tools)
    ("POST", "/api/reports"): "reports:rw",
    ("GET", "/api/reports"): "reports:r",
    ("GET", "/api/reports/search"): "reports:r",
    ("GET", "/api/reports/sources"): "reports:r",  # report_list_sources
    ("GET", "/api/reports/{}"): "reports:r",
    ("PATCH", "/api/reports/{}"): "reports:rw",
    ("DELETE", "/api/reports/{}"): "reports:rw",
    ("POST", "/api/bookmarks"): "bookmarks:rw",
    ("GET", "/api/bookmarks"): "bookmarks:r",
    ("GET", "/api/bookmarks/search"): "bookmarks:r",
    ("GET", "/api/bookmarks/{}"): "bookmarks:r",
    ("PATCH", "/api/bookmarks/{}"): "bookmarks:rw",
    ("DELETE", "/api/bookmarks/{}"): "bookmarks:rw",
    ("POST", "/api/expenses"): "expenses:rw",
    ("GET", "/api/expenses"): "expenses:r",
    ("GET", "/api/expenses/search"): "expenses:r",
    ("GET", "/api/expenses/summary"): "expenses:r",  # expense_summary
    ("GET", "/api/expenses/{}"): "expenses:r",
    ("PATCH", "/api/expenses/{}"): "expenses:rw",
    ("DELETE", "/api/expenses/{}"): "expenses:rw",
    # memory journal reads (memory_get / memory_timeline family)
    ("GET", "/api/memory/events"): "memory:r",
    ("GET", "/api/memory/events/{}"): "memory:r",
    ("GET", "/api/memory/scopes"): "memory:r",
    # memory: find your session again, forget and retire, export (issue 10)
    ("GET", "/api/memory/journal/sessions"): "memory:r",
    ("PATCH", "/api/memory/entries/{}"): "memory:rw",
    ("DELETE", "/api/memory/entries/{}"): "memory:rw",
    ("DELETE", "/api/memory/entries"): "memory:rw",
    ("GET", "/api/memory/export"): "memory:r",
    # skills: execution logs and versions (skill_log_add, skill_logs_list, skill_version_publish, skill_stats,
    # skill_signals; "skills:r Read skill logs and versions")
    ("POST", "/api/skills/logs"): "skills:rw",
    ("GET", "/api/skills/logs"): "skills:r",
    ("POST", "/api/skills/versions"): "skills:rw",
    ("GET", "/api/skills/versions"): "skills:r",
    ("GET", "/api/skills/versions/{}"): "skills:r",
    ("GET", "/api/skills/stats"): "skills:r",
    ("GET", "/api/skills/signals"): "skills:r",
    # skills registry extras (not in spec/001's list; prior-art §2 has GET, DELETE is ours)
    ("GET", "/api/skills/sources/{}"): "skills:r",
    ("DELETE", "/api/skills/sources/{}"): "skills:rw",
    # knowledge registry extras, like the skills registry's: one source, and its deletion (issue 12)
    ("GET", "/api/knowledge/sources/{}"): "knowledge:r",
    ("DELETE", "/api/knowledge/sources/{}"): "knowledge:rw",
    # the job queue's reads (the wiki compile and other 202 work report a job; agentmate.jobs)
    ("GET", "/api/knowledge/jobs"): "knowledge:r",
    ("GET", "/api/knowledge/jobs/{}"): "knowledge:r",
    # wiki quality (issue 15): prior-art §2's lint, review and validation routes, which spec/001 does not list
    ("POST", "/api/knowledge/wiki/lint"): "knowledge:rw",
    ("GET", "/api/knowledge/wiki/lint/runs"): "knowledge:r",
    ("GET", "/api/knowledge/wiki/lint/runs/{}"): "knowledge:r",
    ("POST", "/api/knowledge/builds/{}/review"): "knowledge:rw",
    ("GET", "/api/knowledge/builds/{}/review"): "knowledge:r",
    ("POST", "/api/knowledge/validation/signals"): "knowledge:rw",
    ("GET", "/api/knowledge/validation/signals"): "knowledge:r",
    ("GET", "/api/knowledge/validation/summary"): "knowledge:r",
    ("POST", "/api/knowledge/validation/sweep"): "knowledge:rw",
    ("GET", "/api/knowledge/validation/skill-patterns"): "knowledge:r",
    # the tag roster (issue 23; prior-art §2's GET /api/tags): any credential; module=all lists the modules the key
    # may read and names the scope of the others; one module needs that module's read scope (below)
    ("GET", "/api/tags"): AUTHENTICATED,
    # OAuth (issue 24): the authorization server's endpoints authenticate clients their own way (OAuth's), and a
    # user's grants are managed like API keys
    ("GET", "/api/oauth/authorize"): PUBLIC,
    ("POST", "/api/oauth/authorize"): PUBLIC,
    ("POST", "/api/oauth/token"): PUBLIC,
    ("POST", "/api/oauth/revoke"): PUBLIC,
    ("POST", "/api/oauth/register"): PUBLIC,
    # The login, consent and device-verification pages: the user signs in on the form (CSRF-protected)
    ("GET", "/api/oauth/consent"): PUBLIC,
    ("POST", "/api/oauth/consent"): PUBLIC,
    ("GET", "/api/oauth/device"): PUBLIC,
    ("POST", "/api/oauth/device"): PUBLIC,
    ("GET", "/api/auth/grants"): "manage_keys",
    ("DELETE", "/api/auth/grants/{}"): "manage_keys",
    # account portability (issue 25 §4): an export is everything and an import writes everything, so each route
    # needs every domain's :rw (the account's JWT and a full-access key hold them); an archive link's token is
    # its own credential (signed, expiring)
    ("POST", "/api/account/exports"): WHOLE_ACCOUNT,
    ("GET", "/api/account/exports/{}"): WHOLE_ACCOUNT,
    ("POST", "/api/account/imports"): WHOLE_ACCOUNT,
    ("GET", "/api/account/imports/{}"): WHOLE_ACCOUNT,
    ("POST", "/api/account/imports/{}/start"): WHOLE_ACCOUNT,
    ("GET", "/api/account/archives/{}"): PUBLIC,
    ("PUT", "/api/account/archives/{}"): PUBLIC,
}

# Routes whose scope depends on a query parameter's value (the operation declares them as
# ``x-required-scopes-by-<parameter>``): each value is checked as a route of its own, and is the REST twin of an
# MCP tool (``GET /api/tags?module=todos`` of ``todos_tags``).
BY_QUERY: dict[tuple[str, str], str | tuple[str, ...]] = {
    ("GET", "/api/tags?module=todos"): "todos:r",
    ("GET", "/api/tags?module=notes"): "notes:r",
    ("GET", "/api/tags?module=reports"): "reports:r",
    ("GET", "/api/tags?module=bookmarks"): "bookmarks:r",
    ("GET", "/api/tags?module=expenses"): "expenses:r",
}

EXPECTED = {**SPEC, **EXTENSIONS, **BY_QUERY}
ALL_SCOPES = [
    f"{d}:{m}"
    for d in ("todos", "notes", "reports", "bookmarks", "expenses", "memory", "skills", "knowledge")
    for m in ("r", "rw")
] + ["manage_keys"]

# Bodies for routes whose authorisation runs after body validation (in the service), so an empty body would
# stop at the 400 before the scope check is reached.
BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/api/auth/apikeys"): {"name": "matrix", "scopes": ["manage_keys"]},
}


def template(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # as served, e.g. /api/todos/{todo_id}
    group: str
    parameters: tuple[tuple[str, str, str | None], ...]  # (name, type, format) of the path parameters
    query: str = ""  # "module=todos": a route whose scope depends on this query value (BY_QUERY)
    declared: tuple[str, ...] = ()  # the scopes the operation declares for that value

    @property
    def key(self) -> tuple[str, str]:
        return (self.method, template(self.path) + (f"?{self.query}" if self.query else ""))

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}" + (f"?{self.query}" if self.query else "")

    def url(self) -> str:
        path = self.path
        for name, typ, fmt in self.parameters:
            value = (
                str(uuid.uuid4())
                if fmt == "uuid"
                else ("1" if typ in ("integer", "number") else "placeholder")
            )
            path = re.sub(r"\{" + re.escape(name) + r"(:[^}]*)?\}", value, path)
        return path + (f"?{self.query}" if self.query else "")


def _param_type(schema: dict[str, Any]) -> tuple[str, str | None]:
    for option in [schema, *schema.get("anyOf", [])]:
        if option.get("type") and option.get("type") != "null":
            return option["type"], option.get("format")
    return "string", None


def rest_routes() -> list[Route]:
    routes: list[Route] = []
    for module in ROUTE_GROUPS:
        app = importlib.import_module(module).app
        if not callable(getattr(app, "openapi", None)):
            continue  # not a REST app (e.g. a non-FastAPI MCP server)
        for path, item in app.openapi().get("paths", {}).items():
            if not path.startswith(("/api/", "/.well-known/")):
                continue
            for method, operation in item.items():
                if method not in HTTP_METHODS:
                    continue
                params = tuple(
                    (p["name"], *_param_type(p.get("schema", {})))
                    for p in operation.get("parameters", [])
                    if p.get("in") == "path"
                )
                routes.append(Route(method.upper(), path, module, params))
                routes += _by_query(routes[-1], operation)
    return sorted(routes, key=lambda r: (r.path, r.method, r.query))


def _by_query(route: Route, operation: dict[str, Any]) -> list[Route]:
    """One Route per query value the operation declares its own scopes for (``x-required-scopes-by-<name>``)."""
    out = []
    for extension, by_value in operation.items():
        if extension.startswith("x-required-scopes-by-"):
            name = extension.removeprefix("x-required-scopes-by-")
            for value, scopes in by_value.items():
                out.append(
                    Route(
                        route.method,
                        route.path,
                        route.group,
                        route.parameters,
                        f"{name}={value}",
                        tuple(scopes),
                    )
                )
    return out


ROUTES = rest_routes()


# --- the table itself -----------------------------------------------------------------------------------------


def test_every_rest_route_has_an_expected_scope():
    missing = [r.id for r in ROUTES if r.key not in EXPECTED]
    assert not missing, (
        "routes missing from the expected-scope table in tests/integration/test_scope_matrix.py "
        f"(add each with the scope spec/001 gives it): {missing}"
    )


def test_every_query_dependent_scope_in_the_table_is_declared_by_its_route():
    declared = {r.key for r in ROUTES if r.query}
    assert set(BY_QUERY) == declared, (
        f"only in BY_QUERY {sorted(set(BY_QUERY) - declared)}, only declared {sorted(declared - set(BY_QUERY))}"
    )


def test_the_route_groups_serve_rest_routes():
    assert len(ROUTES) >= 20
    assert {r.group for r in ROUTES} >= {"functions.auth.app", "functions.todos.app"}


def test_the_scopes_declared_by_the_routes_match_the_table():
    """The scope a route's dependency checks (what the OpenAPI document tells agents) is the expected one."""
    from infra import openapi

    doc = openapi.build()
    wrong = []
    for r in ROUTES:
        declared = r.declared or doc["paths"][r.path][r.method.lower()].get("x-required-scopes")
        expected = EXPECTED.get(r.key)
        if declared and expected not in (PUBLIC, AUTHENTICATED, ADMIN, USER_SESSION, None):
            want = [expected] if isinstance(expected, str) else list(expected)
            if sorted(declared) != sorted(want):
                wrong.append(f"{r.id}: declares {declared}, spec says {want}")
    assert not wrong, wrong


# --- the matrix ---------------------------------------------------------------------------------------------------


class Callers:
    """One account (plus one admin) for the whole module; keys cached per scope set."""

    def __init__(self, client: Any, owner_url: str) -> None:
        self.client = client
        self.user = make_account(client)
        self.admin = make_account(client)
        with psycopg.connect(owner_url) as conn:
            conn.execute("UPDATE users SET role = 'admin' WHERE id = %s", (self.admin.user_id,))
        self.admin_jwt = self._login(self.admin)

    def _login(self, account: Any) -> dict[str, str]:
        r = self.client.post("/api/auth/login", json={"email": account.email, "password": account.password})
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['token']}"}

    def key(self, *scopes: str) -> dict[str, str]:
        return self.user.headers(*sorted(set(scopes)))


@pytest.fixture(scope="module")
def callers(client, owner_url) -> Callers:
    return Callers(client, owner_url)


def _domains(scopes: tuple[str, ...]) -> set[str]:
    return {s.split(":")[0] for s in scopes}


def _call(client: Any, route: Route, headers: dict[str, str]):
    kwargs: dict[str, Any] = {"headers": headers}
    if route.method in ("POST", "PUT", "PATCH"):
        kwargs["json"] = BODIES.get(route.key, {})
    return client.request(route.method, route.url(), **kwargs)


def _allowed(r) -> bool:
    """Authorised: neither 401 nor 403, and no server error (501 = an operator gap the spec allows)."""
    return r.status_code not in (401, 403) and (r.status_code < 500 or r.status_code == 501)


@pytest.mark.parametrize("route", ROUTES, ids=[r.id for r in ROUTES])
def test_route_enforces_authentication_and_scopes(client, callers: Callers, route: Route):
    expected = EXPECTED.get(route.key)
    if expected is None:
        pytest.fail(f"{route.id} is missing from the expected-scope table")
    failures: list[str] = []

    def check(label: str, headers: dict[str, str], ok) -> None:
        r = _call(client, route, headers)
        if not ok(r):
            failures.append(f"{label}: {r.status_code} {r.text[:300]}")

    if expected == PUBLIC:
        check("no credential", {}, _allowed)
        assert not failures, failures
        return

    check("no credential", {}, lambda r: r.status_code == 401)
    check("malformed bearer", {"Authorization": "Bearer nope"}, lambda r: r.status_code == 401)

    if expected == AUTHENTICATED:
        check("key with one unrelated scope", callers.key("bookmarks:r"), _allowed)
        check("JWT", callers.user.jwt_headers, _allowed)
    elif expected == USER_SESSION:
        fresh = make_account(client)  # these routes revoke or delete the caller's own credentials

        def bearer_only(r):
            return r.status_code == 401 and r.headers.get("www-authenticate") == 'Bearer realm="agentmate"'

        check("full-access key (X-Api-Key, no Authorization)", fresh.headers(), bearer_only)
        check("key with every scope (X-Api-Key)", fresh.headers(*ALL_SCOPES), bearer_only)
        check(
            "full-access key as the bearer",
            {"Authorization": f"Bearer {fresh.key()}"},
            lambda r: r.status_code == 403,
        )
        check("JWT", fresh.jwt_headers, _allowed)
        other = make_account(client)  # the JWT counts, whatever X-Api-Key is beside it
        check("JWT beside an X-Api-Key", {**other.headers(), **other.jwt_headers}, _allowed)
    elif expected == ADMIN:
        check("normal user's JWT", callers.user.jwt_headers, lambda r: r.status_code == 403)
        check("normal user's full-access key", callers.key(), lambda r: r.status_code == 403)
        check("normal user's key with every scope", callers.key(*ALL_SCOPES), lambda r: r.status_code == 403)
        check("admin's JWT", callers.admin_jwt, _allowed)
    else:
        required = (expected,) if isinstance(expected, str) else tuple(expected)
        unrelated = [s for s in ALL_SCOPES if s not in required and s.split(":")[0] not in _domains(required)]
        check(
            f"key with every other scope {unrelated}", callers.key(*unrelated), lambda r: r.status_code == 403
        )
        if route.key != ("POST", "/api/auth/apikeys"):  # a minted key may not exceed its parent (test_auth)
            check(f"key with exactly {list(required)}", callers.key(*required), _allowed)
        readers = tuple(s if s == "manage_keys" else s.split(":")[0] + ":r" for s in required)
        is_write = any(s.endswith(":rw") for s in required)
        if readers != required:
            check(
                f"read-only key {list(readers)} on a write",
                callers.key(*readers),
                lambda r: r.status_code == 403,
            )
        elif "manage_keys" not in required:
            check(f"read key {list(readers)} on a read", callers.key(*readers), _allowed)
        if len(required) > 1:
            for s in required:
                check(
                    f"key with only {s} of {list(required)}", callers.key(s), lambda r: r.status_code == 403
                )
        if not is_write and "manage_keys" not in required:
            rw = tuple(s.split(":")[0] + ":rw" for s in required)
            check(f"key with {list(rw)} (rw implies r)", callers.key(*rw), _allowed)
        check("full-access key (no scopes)", callers.key(), _allowed)
        check("JWT", callers.user.jwt_headers, _allowed)
    assert not failures, "\n".join(failures)
