"""A module imported on first attribute access, for cold start (issue 9, docs/benchmarks.md).

A router imports its schemas at import time (FastAPI needs them to declare the routes) but its use cases only
when a request calls one: a Lambda environment serves a few routes of its group, so the modules behind the others
(compilers, quality checks, git sync) are never paid for. Declare it so type checkers see the real module:

    if TYPE_CHECKING:
        from agentmate.skills.registry import service as registry
    else:
        registry = lazy_module("agentmate.skills.registry.service")

Under SnapStart the init phase runs once, before the snapshot, so there the deferral would only move the import
onto a restored environment's first request: a warm-up hook (``core.snapstart.warm_up``) loads every lazy module
not yet loaded before the snapshot is taken.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from agentmate.core import snapstart


class LazyModule:
    """Stands in for a module; the first attribute read imports it (the import system's lock makes concurrent
    first reads safe), later reads go straight to it, so monkeypatching the real module still applies."""

    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._module or self.load(), attr)

    def load(self) -> ModuleType:
        """Import the module now (if it is not loaded yet) and return it."""
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{'' if self._module is None else ' (loaded)'}>"


_declared: list[LazyModule] = []  # every lazy module declared in this process, for the snapshot warm-up


def lazy_module(name: str) -> Any:
    module = LazyModule(name)
    _declared.append(module)
    return module


@snapstart.warm_up
def load_declared() -> None:
    """Before a SnapStart snapshot: import every lazy module declared so far, so a restored environment's first
    request finds its use cases loaded (the snapshot keeps them; without SnapStart nothing calls this)."""
    for module in list(_declared):
        module.load()


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """A package's module ``__getattr__`` (PEP 562) that imports each exported name's submodule on first use, so
    importing one submodule (``agentmate.jobs.schemas`` for a response model) does not load the package's whole
    API. ``exports`` maps a submodule to the names it provides; declare the same imports under ``TYPE_CHECKING``
    for type checkers:

        __getattr__ = lazy_exports(__name__, {"models": ("Job", "JobView"), "service": ("enqueue",)})
    """
    where = {name: f"{package}.{sub}" for sub, names in exports.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later reads are plain module attributes
        return value

    return __getattr__
