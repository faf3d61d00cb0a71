"""A route group is registered in every place that serves it (docs/contributing.md, "Adding a domain"):
``functions/routes.py`` (local dispatch), ``functions/<group>/app.py`` (the Lambda), ``template.yaml`` (API
Gateway routes to that function), and for MCP the tool registry and the ``/api/health`` endpoint list.
Each test names the place a new domain forgot."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

import yaml
from fastapi.routing import APIRoute

import agentmate
from agentmate.core.mcp_modules import MCP_MODULES
from agentmate.mcp import registry
from functions.routes import API_FALLBACK, ROUTE_GROUPS
from infra.local_app import Dispatcher

ROOT = Path(__file__).resolve().parents[2]


class _CfnLoader(yaml.SafeLoader):
    """template.yaml with its CloudFormation tags (!Ref, !If, …) read as plain values."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _functions() -> dict[str, dict[str, Any]]:
    """Zip functions of template.yaml by ``functions.<group>.app`` module → their HttpApi event paths."""
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=_CfnLoader)
    out: dict[str, dict[str, Any]] = {}
    for name, resource in template["Resources"].items():
        props = resource.get("Properties") or {}
        if resource.get("Type") != "AWS::Serverless::Function" or "CodeUri" not in props:
            continue
        group = props["CodeUri"].strip("/").replace("/", ".")
        paths = {
            e["Properties"]["Path"]
            for e in (props.get("Events") or {}).values()
            if e.get("Type") == "HttpApi"
        }
        out[f"{group}.app"] = {"resource": name, "handler": props.get("Handler"), "paths": paths}
    return out


def test_every_route_group_has_a_lambda_app_with_a_handler():
    for module in ROUTE_GROUPS:
        app_module = importlib.import_module(module)
        assert hasattr(app_module, "app") and callable(getattr(app_module, "handler", None)), (
            f"{module} needs `app = build_app([...])` and `handler = make_handler(app)`"
        )


# Zip functions woken by events other than HTTP (SQS, schedules): tests/contract/test_worker_template.py.
EVENT_FUNCTIONS = {"functions.compile_worker.app"}


def test_template_routes_each_prefix_to_the_function_of_its_group():
    functions = {module: fn for module, fn in _functions().items() if module not in EVENT_FUNCTIONS}
    assert set(functions) == set(ROUTE_GROUPS), (
        "template.yaml zip functions and functions/routes.py ROUTE_GROUPS differ: "
        f"only in template {sorted(set(functions) - set(ROUTE_GROUPS))}, "
        f"only in routes.py {sorted(set(ROUTE_GROUPS) - set(functions))}"
    )
    for module, prefixes in ROUTE_GROUPS.items():
        fn = functions[module]
        assert fn["handler"] == "app.handler", f"{fn['resource']}: Handler must be app.handler"
        for prefix in prefixes:
            assert {prefix, f"{prefix}/{{proxy+}}"} & fn["paths"], (
                f"template.yaml {fn['resource']} has no HttpApi event for {prefix} (or {prefix}/{{proxy+}})"
            )
    assert "/api/{proxy+}" in functions[API_FALLBACK]["paths"], "the fallback group must catch /api/{proxy+}"


def _api_routes(routes: list[Any], prefix: str = "") -> list[tuple[str, APIRoute]]:
    """(full path, route) of every APIRoute, through included routers (FastAPI keeps them nested)."""
    out: list[tuple[str, APIRoute]] = []
    for route in routes:
        if isinstance(route, APIRoute):
            out.append((prefix + route.path, route))
        elif hasattr(route, "original_router"):
            out += _api_routes(route.original_router.routes, prefix + route.include_context.prefix)
    return out


def _group_routes() -> dict[str, list[tuple[str, APIRoute]]]:
    groups = {module: _api_routes(importlib.import_module(module).app.routes) for module in ROUTE_GROUPS}
    assert all(groups.values()), "a route group serves no route"
    return groups


def test_every_route_of_a_group_is_under_a_prefix_the_group_is_dispatched():
    for module, routes in _group_routes().items():
        prefixes = ROUTE_GROUPS[module]
        for path, _ in routes:
            served = any(path == p or path.startswith(p + "/") for p in prefixes)
            assert served or module == API_FALLBACK, (
                f"{path} is in {module} but functions/routes.py sends none of its prefixes there"
            )


def _gateway_route(routes: dict[str, str], path: str) -> str | None:
    """The function API Gateway (HTTP API) invokes for ``path``: a literal route equal to the path wins, else
    the greedy ``{proxy+}`` route with the longest prefix (every route template.yaml declares is one of the two)."""
    if path in routes:
        return routes[path]
    greedy = [r for r in routes if r.endswith("/{proxy+}") and path.startswith(r[: -len("{proxy+}")])]
    return routes[max(greedy, key=len)] if greedy else None


def test_api_gateway_sends_every_route_to_the_function_that_serves_it():
    # The knowledge routes are split between two functions by longer prefixes (issue 26 §3): API Gateway must pick
    # the same function for each route as the local runtime's longest-prefix dispatch does
    routes: dict[str, str] = {}
    for module, fn in _functions().items():
        for path in fn["paths"]:
            assert path not in routes, f"{path} is declared by {routes.get(path)} and {module}"
            routes[path] = module
    local = Dispatcher({p: module for module, prefixes in ROUTE_GROUPS.items() for p in prefixes})  # type: ignore[misc]
    # (module names stand in for the apps: the dispatcher only compares prefixes)
    for module, served in _group_routes().items():
        for path, _ in served:
            concrete = re.sub(r"\{[^}]+\}", "x", path)
            assert _gateway_route(routes, concrete) == module, (
                f"{path} is served by {module} but template.yaml routes it to {_gateway_route(routes, concrete)}"
            )
            dispatched = (
                local.match(concrete) or API_FALLBACK
            )  # unmatched /api paths go to the fallback group
            assert dispatched == module, (
                f"{path} is served by {module} but the local runtime sends it to {dispatched}"
            )


def test_every_domain_router_is_served_by_a_route_group():
    served = {(m, path) for routes in _group_routes().values() for path, r in routes for m in r.methods}
    for info in pkgutil.iter_modules(agentmate.__path__):
        try:
            module = importlib.import_module(f"agentmate.{info.name}.router")
        except ModuleNotFoundError:
            continue
        for path, route in _api_routes(getattr(getattr(module, "router", None), "routes", [])):
            for method in route.methods:
                assert (method, path) in served, (
                    f"agentmate.{info.name}.router: {method} {path} is in no functions/<group>/app.py"
                )


def test_every_tool_module_is_registered_and_listed_by_health():
    tools_dir = ROOT / "shared/agentmate/mcp/tools"
    tool_files = {p.stem for p in tools_dir.glob("*.py") if p.stem != "__init__"} | {
        p.parent.name for p in tools_dir.glob("*/__init__.py")
    }  # a package endpoint (knowledge: one file per area)
    registered = {path.rsplit(".", 1)[1] for path in registry.MODULES.values()}
    assert tool_files == registered, (
        f"mcp/tools modules not in mcp/registry.MODULES: {tool_files - registered}"
    )
    assert list(MCP_MODULES) == list(registry.MODULES), (
        "GET /api/health lists MCP endpoints from core/mcp_modules.MCP_MODULES; keep it equal to registry.MODULES"
    )
