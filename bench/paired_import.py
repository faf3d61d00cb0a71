"""CPU time of importing one function module from several checkouts, interleaved run by run, with the
hello-world baseline in the same loop (so machine noise hits every variant alike).

    .venv/bin/python bench/paired_import.py [--module functions.memory.app ...] [--runs 9] CHECKOUT [CHECKOUT ...]

A checkout is any directory holding this repository's tree (e.g. `git worktree add /tmp/before <commit>`); each
import runs in a fresh interpreter of this virtualenv with that checkout's `shared/` and root on the path.
Without ``--module`` every group of this checkout's functions/routes.py is measured (a group missing from a checkout
shows "—"). Prints, per function, the median CPU ms and its ratio to the baseline's median of the same loop, and
the change of that ratio from the first checkout to the last.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from common import ROOT, import_environment

PROBE = (
    "import importlib, sys, time; c = time.process_time(); importlib.import_module(sys.argv[1]); "
    "print(round((time.process_time() - c) * 1000, 1))"
)


def cpu_ms(checkout: str, module: str) -> float:
    env = import_environment(checkout)  # .pyc written and used, as in Lambda's layer
    out = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        cwd=checkout,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(out.split()[-1])


def modules(checkout: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", "from functions.routes import ROUTE_GROUPS; print(*ROUTE_GROUPS)"],
        cwd=checkout,
        env=import_environment(checkout),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()


def has_module(checkout: str, module: str) -> bool:
    try:
        cpu_ms(checkout, module)  # also the warm-up: writes the .pyc files
        return True
    except subprocess.CalledProcessError:
        return False  # the group does not exist in that checkout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--module",
        action="append",
        help="a function module (repeatable); default: every group of this checkout's functions/routes.py",
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("checkouts", nargs="+")
    args = parser.parse_args()
    cpu_ms(str(ROOT), "bench.baseline_hello.app")
    rows = []
    for module in args.module or modules(str(ROOT)):
        present = [c for c in args.checkouts if has_module(c, module)]
        samples: dict[str, list[float]] = {c: [] for c in present}
        baseline: list[float] = []
        for _ in range(args.runs):
            for checkout in present:
                samples[checkout].append(cpu_ms(checkout, module))
            baseline.append(cpu_ms(str(ROOT), "bench.baseline_hello.app"))
        base = statistics.median(baseline)
        ratios = {c: statistics.median(v) / base for c, v in samples.items()}
        cells = [
            f"{ratios[c]:.2f}x ({statistics.median(samples[c]):.0f} ms)" if c in ratios else "—"
            for c in args.checkouts
        ]
        first, last = args.checkouts[0], args.checkouts[-1]
        change = f"{ratios[last] - ratios[first]:+.2f}" if first in ratios and last in ratios else "—"
        rows.append(f"| {module.split('.')[1]} | {base:.0f} | {' | '.join(cells)} | {change} |")
        print(rows[-1], file=sys.stderr, flush=True)  # progress
    print(
        f"\nMedian import CPU of {args.runs} fresh interpreters per checkout, interleaved with the baseline "
        "(ratio to the baseline's median of the same loop)\n"
    )
    print(f"| function | baseline ms | {' | '.join(args.checkouts)} | change (last - first) |")
    print("|---|---:|" + "---:|" * len(args.checkouts) + "---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
