"""Issue 2 (a): cold start of every route-group function against a hello-world baseline, in the same run.

    .venv/bin/python bench/cold_start.py [--runs 7]

For each function in functions/routes.py (and bench/baseline_hello/app.py) a fresh interpreter imports the
module — which builds the FastAPI app and the Mangum handler, exactly what Lambda's init phase does — and
then serves one first request through the handler without credentials (``GET /api/health`` for the auth group,
a route of the group answered 401 for the others, ``GET /hello`` for the baseline; none touches Postgres). Runs are
interleaved across functions, one discarded warm-up run per function first (so .pyc caches exist), and the
median of ``--runs`` is reported. Goal: import + build ≤ 1.25x the baseline (judged on CPU time, which a
busy machine distorts less than wall time; both are shown).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from common import ROOT, bench_environment, import_environment, machine, print_table, ratio

BASELINE = "bench.baseline_hello.app"
GOAL = 1.25

PROBE = r"""
import json, resource, sys, time, warnings
t0, c0 = time.perf_counter(), time.process_time()
import importlib
module = importlib.import_module(sys.argv[1])
t1, c1 = time.perf_counter(), time.process_time()
out = {"import_ms": (t1 - t0) * 1000, "import_cpu_ms": (c1 - c0) * 1000}
with open("/proc/self/statm") as f:  # current resident set (ru_maxrss would include the parent's, from fork)
    rss_import = int(f.read().split()[1]) * resource.getpagesize() / 1024
handler = getattr(module, "handler", None)
if callable(handler) and sys.argv[2]:
    warnings.filterwarnings("ignore", "No application metrics")
    from tests.apigw import LambdaContext, http_event
    event = http_event(sys.argv[3], sys.argv[2], **({"json_body": {}} if sys.argv[3] != "GET" else {}))
    t2 = time.perf_counter()
    response = handler(event, LambdaContext())
    out["first_invoke_ms"] = (time.perf_counter() - t2) * 1000
    out["status"] = response["statusCode"]
out["rss_mb"] = rss_import / 1024
print(json.dumps(out))
"""


def _first_route(module: str) -> tuple[str, str]:
    """A route of the group for the first request: its health check, else a parameterless GET, else any."""
    import importlib

    app = importlib.import_module(module).app
    paths = app.openapi().get("paths", {}) if callable(getattr(app, "openapi", None)) else {}
    if "/api/health" in paths:
        return "GET", "/api/health"
    ops = [
        (m.upper(), p) for p, item in paths.items() for m in item if m in ("get", "post", "patch", "delete")
    ]
    ops.sort(key=lambda op: ("{" in op[1], op[0] != "GET", op[1]))
    return ops[0] if ops else ("GET", "")


def targets() -> list[tuple[str, str, str, str]]:
    """(label, module, method, first request path) for the baseline and every route group."""
    from functions.routes import ROUTE_GROUPS

    out = [("baseline_hello (FastAPI+Mangum+psycopg)", BASELINE, "GET", "/hello")]
    for module in ROUTE_GROUPS:
        out.append((module.split(".")[1], module, *_first_route(module)))
    return out


def run_once(module: str, method: str, path: str, env: dict[str, str]) -> dict[str, float]:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, module, path, method],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed to import:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_ms"] = wall
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh interpreters per function (median; >= 5)")
    args = parser.parse_args(argv)
    runs = max(args.runs, 5)
    env = {**import_environment(), **bench_environment("postgresql://agentmate_app@127.0.0.1:9/not-used")}
    env.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    todo = targets()
    samples: dict[str, list[dict[str, float]]] = {module: [] for _, module, _, _ in todo}
    for _, module, method, path in todo:  # warm-up: compile .pyc once, discarded
        run_once(module, method, path, env)
    for _ in range(runs):
        for _, module, method, path in todo:
            samples[module].append(run_once(module, method, path, env))

    def med(module: str, key: str) -> float:
        values = [s[key] for s in samples[module] if key in s]
        return statistics.median(values) if values else float("nan")

    base_import, base_cpu = med(BASELINE, "import_ms"), med(BASELINE, "import_cpu_ms")
    base_wall = med(BASELINE, "wall_ms")
    rows = []
    for label, module, method, path in todo:
        imp, cpu = med(module, "import_ms"), med(module, "import_cpu_ms")
        rows.append(
            [
                label,
                f"{imp:.1f}",
                ratio(imp, base_import),
                f"{cpu:.1f}",
                ratio(cpu, base_cpu),
                "—" if module == BASELINE else ("ok" if cpu <= GOAL * base_cpu else "OVER"),
                f"{method} {path} → {samples[module][0].get('status', '-')}",
                f"{med(module, 'first_invoke_ms'):.1f}",
                f"{med(module, 'wall_ms'):.1f}",
                ratio(med(module, "wall_ms"), base_wall),
                f"{med(module, 'rss_mb'):.0f}",
            ]
        )
    print_table(
        f"Cold start (median of {runs} fresh interpreters per function)",
        [
            "function",
            "import+build ms",
            "vs baseline",
            "import+build CPU ms",
            "CPU vs baseline",
            f"CPU ≤{GOAL}x",
            "first request (no credentials)",
            "first invoke ms",
            "process wall ms",
            "wall vs baseline",
            "RSS MB",
        ],
        rows,
        notes=[
            f"Machine: {machine()}.",
            "import+build: `import functions.<group>.app` in a fresh interpreter (app + Mangum handler built at "
            "import; CPU = that import's process time, steadier than wall time on a shared machine and used for the "
            "goal column). first invoke: the first request through the handler after import. process wall: "
            "interpreter start to exit, measured by the parent (includes interpreter start-up).",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
