"""CPU time of importing one function module from several checkouts, interleaved run by run, with the
hello-world baseline in the same loop (so machine noise hits every variant alike).

    .venv/bin/python bench/paired_import.py --module functions.memory.app --runs 9 CHECKOUT [CHECKOUT ...]

A checkout is any directory holding this repository's tree (e.g. `git worktree add /tmp/before <commit>`); each
import runs in a fresh interpreter of this virtualenv with that checkout's `shared/` and root on the path.
Prints the median CPU ms and its ratio to the baseline's median.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from common import ROOT, import_environment

PROBE = ("import importlib, sys, time; c = time.process_time(); importlib.import_module(sys.argv[1]); "
         "print(round((time.process_time() - c) * 1000, 1))")


def cpu_ms(checkout: str, module: str) -> float:
    env = import_environment(checkout)  # .pyc written and used, as in Lambda's layer
    out = subprocess.run([sys.executable, "-c", PROBE, module], cwd=checkout, env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", default="functions.memory.app")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("checkouts", nargs="+")
    args = parser.parse_args()
    samples: dict[str, list[float]] = {c: [] for c in args.checkouts}
    baseline: list[float] = []
    for checkout in args.checkouts:  # warm-up: writes the .pyc files
        cpu_ms(checkout, args.module)
    cpu_ms(str(ROOT), "bench.baseline_hello.app")
    for _ in range(args.runs):
        for checkout in args.checkouts:
            samples[checkout].append(cpu_ms(checkout, args.module))
        baseline.append(cpu_ms(str(ROOT), "bench.baseline_hello.app"))
    base = statistics.median(baseline)
    print(f"| checkout | {args.module} CPU ms (median of {args.runs}) | vs baseline |")
    print("|---|---:|---:|")
    print(f"| baseline_hello | {base:.0f} | 1.00x |")
    for checkout, values in samples.items():
        median = statistics.median(values)
        print(f"| {checkout} | {median:.0f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()
