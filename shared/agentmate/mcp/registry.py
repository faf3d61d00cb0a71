"""Which MCP tools exist: the single place a module's tools are registered.

Adding a module's tools is one row in ``agentmate.core.mcp_modules.MODULE_TABLE`` (``MODULES`` here is
derived from it: endpoint name → tool module). The tool module declares
``tools = ToolSet("<name>", instructions=...)`` and decorates each function with
``@tools.tool("<scope>", rest="<METHOD> <REST path>")``. Both the per-module endpoint (``/mcp/<name>``) and
the aggregate endpoint (``/mcp``) are built from ``load()``; the scope of every tool is checked by the
server before the tool runs, and ``tests/e2e/test_mcp_parity.py`` checks it against the REST twin's.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from agentmate.core.mcp_modules import MODULE_TABLE
from agentmate.core.scopes import SCOPES

F = TypeVar("F", bound=Callable[..., Any])

# Endpoint name → tool module, from the one table of MCP modules (its order is the aggregate tool list's).
MODULES: dict[str, str] = {m.name: m.tools for m in MODULE_TABLE}

_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_REST = re.compile(r"^(GET|POST|PUT|PATCH|DELETE) /api/\S+$")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    fn: Callable[..., Any]
    scope: str
    rest: str
    """The REST twin as ``"<METHOD> <path template>"``; it must require the same scope."""
    title: str | None = None
    destructive: bool = False
    idempotent: bool = False
    hints: type[BaseModel] | None = None
    """A strict domain model whose ``field_hints`` explain unknown arguments (e.g. ``content`` on an event:
    "event content belongs inside payload")."""
    patch: type[BaseModel] | None = None
    """An update tool's PATCH model (``agentmate.core.patch.PatchModel``): arguments it does not list as
    ``nullable`` are non-nullable in the tool's input schema, as in the REST PATCH body."""
    also: tuple[str, ...] = ()
    """Scopes required besides ``scope``, as the REST twin requires them (knowledge discovery reads the skills
    domain: ``knowledge:r`` and ``skills:r``)."""

    @property
    def scopes(self) -> tuple[str, ...]:
        return (self.scope, *self.also)

    @property
    def arguments(self) -> frozenset[str]:
        return frozenset(inspect.signature(self.fn).parameters)

    @property
    def description(self) -> str:
        """The docstring on one line: what agents read in ``tools/list``."""
        return " ".join((self.fn.__doc__ or "").split())

    @property
    def read_only(self) -> bool:
        return self.scope.endswith(":r")


@dataclass
class ToolSet:
    """One module's tools (one ``/mcp/<module>`` endpoint)."""

    module: str
    instructions: str
    specs: list[ToolSpec] = field(default_factory=list)

    def tool(
        self,
        scope: str,
        *,
        rest: str,
        title: str | None = None,
        destructive: bool = False,
        idempotent: bool | None = None,
        hints: type[BaseModel] | None = None,
        patch: type[BaseModel] | None = None,
        also: tuple[str, ...] = (),
    ) -> Callable[[F], F]:
        """Register ``fn`` as a tool named after the function; its docstring is the description."""
        for s in (scope, *also):
            if s not in SCOPES:
                raise ValueError(f"unknown scope {s!r}")
        if not _REST.match(rest):
            raise ValueError(f"rest twin must look like 'GET /api/...': {rest!r}")

        def register(fn: F) -> F:
            name = fn.__name__
            if not _NAME.match(name):
                raise ValueError(f"tool name must be snake_case: {name!r}")
            if not (fn.__doc__ or "").strip():
                raise ValueError(f"tool {name} needs a docstring: it is the description agents read")
            if any(s.name == name for s in self.specs):
                raise ValueError(f"duplicate tool {name!r}")
            self.specs.append(
                ToolSpec(
                    name=name,
                    fn=fn,
                    scope=scope,
                    rest=rest,
                    title=title,
                    destructive=destructive,
                    idempotent=scope.endswith(":r") if idempotent is None else idempotent,
                    hints=hints,
                    patch=patch,
                    also=also,
                )
            )
            return fn

        return register


def load(modules: dict[str, str] | None = None) -> dict[str, ToolSet]:
    """Import every registered tool module; tool names are unique across modules."""
    sets: dict[str, ToolSet] = {}
    seen: dict[str, str] = {}
    for name, module_path in (MODULES if modules is None else modules).items():
        toolset = importlib.import_module(module_path).tools
        if not isinstance(toolset, ToolSet) or toolset.module != name:
            raise TypeError(f"{module_path}.tools must be ToolSet({name!r}, ...)")
        for spec in toolset.specs:
            if spec.name in seen:
                raise ValueError(f"tool {spec.name!r} is registered by both {seen[spec.name]} and {name}")
            seen[spec.name] = name
        sets[name] = toolset
    return sets
