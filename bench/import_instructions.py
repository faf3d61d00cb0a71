"""Instructions executed importing a function module (what Lambda's init phase runs), counted by valgrind, against
the hello-world baseline: a cold-start measure that other load on the machine does not move.

    .venv/bin/python bench/import_instructions.py [--module functions.memory.app ...] [CHECKOUT ...]

CPU-time ratios (bench/cold_start.py, bench/paired_import.py) move by ±0.1 on a shared two-core machine; the
instruction count of one import is the same to ~0.5% run after run (``PYTHONHASHSEED=0``; .pyc files are written
by a warm-up import first). It is a proxy: instructions are not cycles (cache misses, page faults and the
kernel's share are not in it), so use it to find and compare regressions, and confirm with CPU time.

Each checkout (default: this one) is a directory holding this repository's tree (``git worktree add /tmp/before
<commit>``); its ``shared/`` and root go on the path of this virtualenv's interpreter. Without ``--module``
every group in the checkout's ``functions/routes.py`` is measured. Needs ``valgrind`` (~30 s per import).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from common import ROOT, import_environment

BASELINE = "bench.baseline_hello.app"


def _env(checkout: str) -> dict[str, str]:
    return {**import_environment(checkout), "PYTHONHASHSEED": "0"}


def instructions(checkout: str, module: str) -> int:
    """Instructions (valgrind's ``I refs``) of a fresh interpreter importing ``module`` from ``checkout``."""
    subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=checkout,
        env=_env(checkout),
        check=True,
        capture_output=True,
    )  # writes the .pyc files, so the count has no compilation in it
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                "-c",
                f"import {module}",
            ],
            cwd=checkout,
            env=_env(checkout),
            check=True,
            capture_output=True,
            text=True,
        )
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if found is None:
        raise RuntimeError(proc.stderr[-2000:])
    return int(found.group(1))


def _modules(checkout: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", "from functions.routes import ROUTE_GROUPS; print(*ROUTE_GROUPS)"],
        cwd=checkout,
        env=_env(checkout),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--module", action="append", help="a function module (repeatable); default: every group"
    )
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at once")
    parser.add_argument("checkouts", nargs="*", default=[str(ROOT)])
    args = parser.parse_args()
    modules = args.module or list(dict.fromkeys(m for c in args.checkouts for m in _modules(c)))
    jobs = [(str(ROOT), BASELINE)] + [(c, m) for m in modules for c in args.checkouts]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: _safe(*job), jobs), strict=True))
    base = counts[(str(ROOT), BASELINE)]
    assert base is not None
    print(f"| function | {' | '.join(args.checkouts)} |")
    print("|---|" + "---:|" * len(args.checkouts))
    print(f"| baseline_hello ({base / 1e6:.0f} M instructions) |" + " 1.00x |" * len(args.checkouts))
    for module in modules:
        cells = []
        for checkout in args.checkouts:
            count = counts[(checkout, module)]
            cells.append("—" if count is None else f"{count / base:.3f}x ({count / 1e6:.0f} M)")
        print(f"| {module.split('.')[1]} | {' | '.join(cells)} |")


def _safe(checkout: str, module: str) -> int | None:
    try:
        return instructions(checkout, module)
    except subprocess.CalledProcessError:
        return None  # the module does not exist in that checkout


if __name__ == "__main__":
    main()
