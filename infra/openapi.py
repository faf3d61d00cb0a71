"""The combined OpenAPI document of every route group, and the drift gate for docs/openapi.json.

    python -m infra.openapi            # print the combined document
    python -m infra.openapi --write    # regenerate docs/openapi.json
    python -m infra.openapi --check    # exit 1 with a readable diff when docs/openapi.json is stale

Each route group (functions/routes.py) is its own FastAPI app serving its own ``/api/openapi.json``; this merges
their ``openapi()`` documents (paths + components) into one. Two groups declaring the same path, operation id or
an incompatible component of the same name is an error, not a silent overwrite. Security is derived from the
routes' dependencies: an operation that resolves the caller lists the API key / bearer schemes and the scopes
it checks (``x-required-scopes``); the public ones declare ``security: []``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(ROOT / "shared")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

DOC_PATH = ROOT / "docs" / "openapi.json"
# The copy the layer ships, served at GET /api/openapi.json (a Lambda only holds its own group's routes).
LAYER_COPY = ROOT / "shared" / "agentmate" / "api" / "openapi.json"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DESCRIPTION = (
    "Backend as toolset for AI agents. Every route group is served by its own function; this document merges "
    "them. Authenticate with `X-Api-Key: ak_…`, `Authorization: Bearer ak_…` or `Authorization: Bearer <jwt>`. "
    "API keys carry scopes (`x-required-scopes` on each operation; `X:rw` implies `X:r`, an empty list is full "
    "access). Errors are RFC 9457 `application/problem+json` with `errors[]` naming every invalid field. "
    "No unknown query parameters or body fields: a name an operation does not declare is a 400 naming it. "
    "`GET /api/schema` lists allowed values and required fields."
)
SECURITY_SCHEMES = {
    "ApiKeyHeader": {
        "type": "apiKey",
        "in": "header",
        "name": "X-Api-Key",
        "description": "An API key (`ak_…`), limited to its scopes",
    },
    "BearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "A JWT from POST /api/auth/login (full access) or an `ak_…` API key",
    },
}


class MergeError(RuntimeError):
    pass


def route_group_apps() -> dict[str, Any]:
    """module name → app, for every route group whose app can describe itself (FastAPI)."""
    from functions.routes import ROUTE_GROUPS

    apps: dict[str, Any] = {}
    for module_name in ROUTE_GROUPS:
        app = importlib.import_module(module_name).app
        if callable(getattr(app, "openapi", None)):
            apps[module_name] = app
    return apps


def _dependency_calls(dependant: Any) -> list[Any]:
    calls: list[Any] = []
    for dep in getattr(dependant, "dependencies", []):
        if dep.call is not None:
            calls.append(dep.call)
        calls.extend(_dependency_calls(dep))
    return calls


def _security_by_operation(app: Any) -> dict[tuple[str, str], tuple[list[dict[str, list[str]]], list[str]]]:
    """(path, method) → (the security requirement, scopes its dependencies declare with
    ``Security(..., scopes=[...])``). Routes for the user's own session (``UserSession``) take the JWT only."""
    from fastapi import routing

    from agentmate.api.deps import current_principal, route_scopes, user_session

    # FastAPI >= 0.16x keeps included routers nested; iter_route_contexts flattens them (older: app.routes).
    contexts = (
        routing.iter_route_contexts(app.routes) if hasattr(routing, "iter_route_contexts") else app.routes
    )
    out: dict[tuple[str, str], tuple[list[dict[str, list[str]]], list[str]]] = {}
    for route in contexts:
        original = getattr(route, "original_route", route)
        if not isinstance(original, routing.APIRoute) or not route.include_in_schema:
            continue
        dependant = getattr(route, "dependant", None) or original.dependant
        calls = _dependency_calls(dependant)
        requirement: list[dict[str, list[str]]] = []
        if user_session in calls:
            requirement = [{"BearerAuth": []}]
        elif current_principal in calls:
            requirement = [{"ApiKeyHeader": []}, {"BearerAuth": []}]
        scopes = route_scopes(dependant)
        for method in route.methods or ():
            out[(route.path_format, method.lower())] = (requirement, scopes)
    return out


def build() -> dict[str, Any]:
    """The merged document of every route group."""
    apps = route_group_apps()
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    owners: dict[tuple[str, str], str] = {}
    operation_ids: dict[str, str] = {}
    openapi_version = "3.1.0"
    info: dict[str, Any] = {}
    for module_name, app in apps.items():
        doc = app.openapi()
        openapi_version = doc.get("openapi", openapi_version)
        info = info or dict(doc.get("info", {}))
        security = _security_by_operation(app)
        for path, item in doc.get("paths", {}).items():
            merged = paths.setdefault(path, {})
            for method, operation in item.items():
                if method not in HTTP_METHODS:
                    if method in merged and merged[method] != operation:
                        raise MergeError(f"{path}: conflicting {method!r} in {module_name}")
                    merged[method] = operation
                    continue
                if (path, method) in owners:
                    raise MergeError(
                        f"{method.upper()} {path} is served by both {owners[(path, method)]} and "
                        f"{module_name}"
                    )
                owners[(path, method)] = module_name
                op_id = operation.get("operationId")
                if op_id:
                    if op_id in operation_ids:
                        raise MergeError(
                            f"operationId {op_id!r} is used by {operation_ids[op_id]} and "
                            f"{method.upper()} {path}"
                        )
                    operation_ids[op_id] = f"{method.upper()} {path}"
                operation = dict(operation)
                requirement, scopes = security.get((path, method), ([], []))
                operation["security"] = requirement
                if scopes:
                    operation["x-required-scopes"] = scopes
                operation["x-route-group"] = module_name
                merged[method] = operation
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            if name in schemas and schemas[name] != schema:
                raise MergeError(
                    f"component schema {name!r} differs between route groups (latest: {module_name})"
                )
            schemas[name] = schema
    _add_creation_links(paths, schemas)
    return {
        "openapi": openapi_version,
        "info": {**info, "description": DESCRIPTION},
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": SECURITY_SCHEMES},
    }


def _add_creation_links(paths: dict[str, dict[str, Any]], schemas: dict[str, Any]) -> None:
    """OpenAPI links from each create (``POST /api/x`` answering 201 with an ``id``) to every operation on the
    created item (``/api/x/{x_id}`` and the paths under it): the id the create returns is what those take.

    Stated here, by the one URL convention every route group follows, rather than left to a client's guess by
    parameter name (schemathesis' dependency analysis guessed that the memory journal's free-text
    ``session_id`` fills working memory's UUID ``{session_id}``; scripts/schemathesis.toml uses these links).
    Other path parameters of a target (``{seq}``) are left to the client.
    """
    for collection, item in paths.items():
        created = item.get("post", {}).get("responses", {}).get("201")
        if "{" in collection or created is None:
            continue
        schema = created.get("content", {}).get("application/json", {}).get("schema", {})
        if "$ref" in schema:
            schema = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {})
        if "id" not in schema.get("properties", {}):
            continue
        links: dict[str, Any] = {}
        for target, target_item in paths.items():
            if not target.startswith(collection + "/{"):
                continue
            parameter = target[len(collection) + 2 :].split("}", 1)[0]
            for method, operation in target_item.items():
                if method in HTTP_METHODS and operation.get("operationId"):
                    links[operation["operationId"]] = {
                        "operationId": operation["operationId"],
                        "parameters": {f"path.{parameter}": "$response.body#/id"},
                        "description": f"{method.upper()} {target} of the created item",
                    }
        if links:
            created["links"] = links


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _operations(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        f"{m.upper()} {p}": op
        for p, item in doc.get("paths", {}).items()
        for m, op in item.items()
        if m in HTTP_METHODS
    }


def drift(path: Path = DOC_PATH, max_lines: int = 400) -> str:
    """Empty when ``path`` matches the served document; otherwise a human-readable report."""
    current = render(build())
    if path == DOC_PATH and (not LAYER_COPY.exists() or LAYER_COPY.read_text(encoding="utf-8") != current):
        return f"{LAYER_COPY.relative_to(ROOT)} is out of date; run: make openapi\n"
    if not path.exists():
        return f"{path} does not exist; run: make openapi (python -m infra.openapi --write)\n"
    committed = path.read_text(encoding="utf-8")
    if committed == current:
        return ""
    report: list[str] = [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} is out of date with "
        "the served API; run: make openapi (python -m infra.openapi --write)"
    ]
    try:
        old_ops, new_ops = _operations(json.loads(committed)), _operations(json.loads(current))
    except json.JSONDecodeError:
        old_ops, new_ops = {}, {}
    for label, keys in (
        ("added operations", sorted(new_ops.keys() - old_ops.keys())),
        ("removed operations", sorted(old_ops.keys() - new_ops.keys())),
        (
            "changed operations",
            sorted(k for k in new_ops.keys() & old_ops.keys() if new_ops[k] != old_ops[k]),
        ),
    ):
        if keys:
            report.append(f"{label}:")
            report.extend(f"  {k}" for k in keys)
    diff = list(
        difflib.unified_diff(
            committed.splitlines(),
            current.splitlines(),
            "docs/openapi.json (committed)",
            "served",
            lineterm="",
            n=2,
        )
    )
    if len(diff) > max_lines:
        diff = [*diff[:max_lines], f"... {len(diff) - max_lines} more diff lines"]
    report.extend(diff)
    return "\n".join(report) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Combined OpenAPI document of every route group")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {DOC_PATH.relative_to(ROOT)}")
    mode.add_argument("--check", action="store_true", help="exit 1 when the committed document drifted")
    parser.add_argument("--path", type=Path, default=DOC_PATH)
    args = parser.parse_args(argv)
    if args.check:
        report = drift(args.path)
        if report:
            sys.stderr.write(report)
            return 1
        print(f"{args.path.name} is up to date ({len(_operations(build()))} operations)")
        return 0
    text = render(build())
    if args.write:
        args.path.parent.mkdir(parents=True, exist_ok=True)
        args.path.write_text(text, encoding="utf-8")
        if args.path == DOC_PATH:
            LAYER_COPY.write_text(text, encoding="utf-8")
        print(f"wrote {args.path} ({len(_operations(json.loads(text)))} operations)")
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
