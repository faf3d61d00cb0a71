"""Cold start (issue 26 §3, docs/benchmarks.md "Issue 26: cold start"): what a function imports at init.

A route-group function imports its routers and their schemas at init (FastAPI declares the routes from them) but
the use cases behind the routes only when a request calls one (``core.lazy``). Each check imports the function in
a fresh interpreter, as Lambda's init does, and names the modules that must not be loaded yet; then it runs the
SnapStart warm-up of ``core.lazy`` and checks the same modules are loaded, so a restored snapshot has them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

DEFERRED = {
    "functions.knowledge.app": (
        "agentmate.knowledge.catalog.service",
        "agentmate.knowledge.sources.service",
        "agentmate.knowledge.search.service",
        "agentmate.knowledge.search.index",
        "agentmate.knowledge.discovery.discover",
        "agentmate.knowledge.discovery.resolutions",
        "agentmate.packages.service",
        "agentmate.retrieval.service",
    ),
    "functions.knowledge_wiki.app": (
        "agentmate.knowledge.wiki.service",
        "agentmate.knowledge.wiki.retrieval",
        "agentmate.knowledge.wiki.compiler",
        "agentmate.knowledge.quality.lint_service",
        "agentmate.knowledge.quality.review_service",
        "agentmate.knowledge.quality.validation_service",
        "agentmate.retrieval.service",
        "agentmate.llm.client",
    ),
    "functions.memory.app": (
        "agentmate.memory.service.checkpoints",
        "agentmate.memory.service.curation",
        "agentmate.memory.service.entries",
        "agentmate.memory.service.events",
        "agentmate.memory.service.forget",
        "agentmate.memory.service.projection",
        "agentmate.memory.service.provenance",
        "agentmate.memory.service.ranking",
        "agentmate.memory.service.scopes",
        "agentmate.memory.repository",
        "agentmate.working.service",
        "agentmate.working.repository",
        "agentmate.retrieval.service",
    ),
    "functions.context.app": (
        "agentmate.context.service",
        "agentmate.context.layers",
        "agentmate.memory.service",
        "agentmate.skills",
        "agentmate.knowledge",
        "agentmate.notes",
        "agentmate.todos",
        "agentmate.working",
        "agentmate.retrieval.service",
    ),
}

PROBE = """
import json, sys
import importlib
importlib.import_module(sys.argv[1])
watched = json.loads(sys.argv[2])
at_init = sorted(m for m in watched if m in sys.modules)
from agentmate.core import lazy, snapstart
assert lazy.load_declared in snapstart.before_snapshot_hooks()
lazy.load_declared()
print(json.dumps({"at_init": at_init, "after_warm_up": sorted(m for m in watched if m in sys.modules)}))
"""


def _fresh_interpreter(probe: str, *args: str) -> Any:
    """The JSON ``probe`` prints last, run by a fresh interpreter with this checkout on the path."""
    done = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": f"{ROOT / 'shared'}:{ROOT}", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("function", sorted(DEFERRED))
def test_function_init_defers_its_use_cases_until_a_request_or_the_snapshot(function: str) -> None:
    watched = DEFERRED[function]
    seen = _fresh_interpreter(PROBE, function, json.dumps(watched))
    assert seen["at_init"] == [], f"{function} loads at init: {seen['at_init']}"
    assert seen["after_warm_up"] == sorted(watched), "the SnapStart warm-up must load what init deferred"


# Each half of the knowledge routes declares only its own routers at init (issue 26 §3): the split is what brings
# the knowledge function within the cold-start goal, so neither may load the other's routers (and their schemas).
NOT_IMPORTED = {
    "functions.knowledge.app": ("agentmate.knowledge.wiki.router", "agentmate.knowledge.quality.router"),
    "functions.knowledge_wiki.app": (
        "agentmate.knowledge.sources.router",
        "agentmate.knowledge.catalog.router",
        "agentmate.knowledge.search.router",
        "agentmate.knowledge.discovery.router",
        "agentmate.knowledge.jobs_router",
    ),
}


@pytest.mark.parametrize("function", sorted(NOT_IMPORTED))
def test_each_knowledge_function_imports_only_its_own_routers(function: str) -> None:
    probe = "import importlib, json, sys; importlib.import_module(sys.argv[1]); print(json.dumps(sorted(sys.modules)))"
    loaded = set(_fresh_interpreter(probe, function))
    assert sorted(loaded & set(NOT_IMPORTED[function])) == [], (
        f"{function} imports another function's routers"
    )
