"""What matching KNOWLEDGE.yaml include/exclude globs costs (issue 20), as ratios to baselines measured in the run.

The regex translation it replaced backtracked: ``*a*a*a*a*a*a*a*ab`` against one 60-character path took 47 s and
held the GIL meanwhile. ``packages.globs.GlobSet`` reads a path once, with a constant number of int operations per
character on one bit per pattern character. Printed (nothing asserted):

- safe: a typical manifest (``docs/**``, ``**/*.md``, ``*.yaml``; exclude ``docs/drafts/**``, ``**/*.png``) over
  2,000 ordinary paths, new matcher against the old regex translation (the price of never backtracking);
- worst: the limits' worst case, 64 include + 64 exclude globs of star-heavy patterns that stay alive to the end,
  4,096 pattern characters in all (the manifest cap), over 2,000 paths of 512 characters (a git sync's maximum),
  against a trivial baseline (a Python loop touching every character of every path once) and in absolute time;
  ``--uncapped`` adds 128 globs of 256 characters (what the count and length limits alone would allow);
- pathological: the issue's pattern against n 'a's, new matcher and (up to ``--old-upto`` a's) the old regex.

    PYTHONPATH=shared .venv/bin/python bench/glob_bench.py
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "shared"), str(REPO)]

from agentmate.packages.globs import GlobSet  # noqa: E402
from tests.unit.test_package_globs import old_regex  # noqa: E402  (the pre-issue-20 translation, kept by its test)


def best_of(runs: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def old_selects(include: list[str], exclude: list[str], paths: list[str]) -> int:
    inc, exc = [old_regex(g) for g in include], [old_regex(g) for g in exclude]
    return sum(
        1 for p in paths if (not inc or any(r.match(p) for r in inc)) and not any(r.match(p) for r in exc)
    )


def new_selects(include: list[str], exclude: list[str], paths: list[str]) -> int:
    globs = GlobSet(include, exclude)
    n = 0
    for p in paths:
        inc, exc = globs.match(p)
        n += (inc or not include) and not exc
    return n


def touch_every_character(paths: list[str]) -> int:
    n = 0
    for p in paths:
        for _ch in p:
            n += 1
    return n


def worst_patterns(count: int, length: int) -> tuple[list[str], list[str]]:
    """Star-heavy patterns that never die and never match a path of 'a's and '/'s (each ends in 'b')."""
    inc = [("*a" * length)[: length - 1] + "b" for _ in range(count // 2)]
    exc = [("**a?" * length)[: length - 1] + "b" for _ in range(count // 2)]
    return inc, exc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--uncapped", action="store_true")
    ap.add_argument(
        "--old-upto", type=int, default=32, help="run the old regex up to this many a's (60: ~1 min)"
    )
    args = ap.parse_args()

    safe_paths = [
        f"{d}/{sub}/page-{i}.{ext}"
        for i in range(args.files // 8)
        for d in ("docs", "src")
        for sub in ("guide", "drafts")
        for ext in ("md", "png")
    ][: args.files]
    include, exclude = ["docs/**", "**/*.md", "*.yaml"], ["docs/drafts/**", "**/*.png"]
    assert old_selects(include, exclude, safe_paths) == new_selects(include, exclude, safe_paths)
    old = best_of(args.runs, lambda: old_selects(include, exclude, safe_paths))
    new = best_of(args.runs, lambda: new_selects(include, exclude, safe_paths))
    print(
        f"safe: {len(safe_paths)} paths, 5 globs: old regex {old * 1e3:.1f} ms, new {new * 1e3:.1f} ms "
        f"= {new / old:.1f}x the old"
    )

    long_paths = ["/".join(["a" * 255, "a" * 255]) + "a" * (i % 2) for i in range(args.files)]
    base = best_of(args.runs, lambda: touch_every_character(long_paths))
    shapes = [(16, 256), (128, 32)] + ([(128, 256)] if args.uncapped else [])
    for count, length in shapes:
        inc, exc = worst_patterns(count, length)
        globs = GlobSet(inc, exc)
        t = best_of(1, lambda inc=inc, exc=exc: new_selects(inc, exc, long_paths))
        globs.match(long_paths[0])
        label = "uncapped" if count * length > 4096 else "cap"
        print(
            f"worst ({label}): {count} globs of {length} chars, {len(long_paths)} paths of "
            f"{len(long_paths[0])} chars: {t:.2f} s = {t / base:.0f}x the character loop ({base * 1e3:.0f} ms); "
            f"{globs.steps} steps on one path (bound {GlobSet.max_steps(long_paths[0])}), {globs.width} bits"
        )

    pattern = "*a" * 7 + "*ab"
    rx, globs = old_regex(pattern), GlobSet([pattern])
    for n in (12, 16, 20, 24, 28, 32, 60):
        path = "a" * n
        new_t = best_of(args.runs, lambda path=path: globs.match(path))
        line = f"pathological '{pattern}' on {n} a's: new {new_t * 1e6:.0f} us ({globs.steps} steps)"
        if n <= args.old_upto:
            old_t = best_of(1, lambda path=path: rx.match(path))
            line += f", old regex {old_t * 1e3:.1f} ms = {old_t / new_t:.0f}x"
        print(line)


if __name__ == "__main__":
    main()
