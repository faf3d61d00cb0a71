"""Issue 20 item 4: the cost of hostile tar headers, against a realistic forge tarball read in the same run.

    PYTHONPATH=shared:. .venv/bin/python bench/archive_bench.py [--runs 5] [--digits 30000]

Rows (median CPU time of ``--runs``): the baseline reads a GitHub-style tarball (``pax_global_header`` with the
commit id, 50 files, one long name) through ``read_tar``; then the issue's tarball (a pax header of 120,000
digits, 290 bytes compressed) through ``read_tar`` (refused from its 512-byte header); the worst pax header
``read_tar`` accepts (64 KiB of records whose values are 256-digit runs, the longest allowed); and, for scale,
the interpreter's own ``tarfile`` parsing a ``--digits`` digit pax header, the quadratic path the pre-scan keeps
``tarfile`` away from (120,000 digits take ~17 s here, so the default is smaller).
"""

from __future__ import annotations

import argparse
import io
import statistics
import tarfile
import time
from collections.abc import Callable

from common import machine, print_table, ratio

from agentmate.packages.archive import MAX_DIGIT_RUN, MAX_EXTENDED_HEADER
from agentmate.packages.git import read_tar
from agentmate.packages.limits import PackageLimits, SyncLimits
from agentmate.packages.net import Deadline
from tests.integration.packages.gitserver import github_tar, gz_tar, pax_records, tar_entry


def _cpu(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        try:
            action()
        except Exception:  # a refusal is the expected outcome of the hostile rows
            pass
        times.append(time.process_time() - start)
    return statistics.median(times) * 1000


def _read(body: bytes) -> Callable[[], object]:
    return lambda: read_tar(io.BytesIO(body), "pkg", PackageLimits(), SyncLimits(), Deadline(60))


def _tarfile(body: bytes) -> Callable[[], object]:
    def parse() -> None:
        with tarfile.open(fileobj=io.BytesIO(body), mode="r|gz") as tar:
            for _ in tar:
                pass

    return parse


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--digits", type=int, default=30_000)
    args = parser.parse_args()
    sha = "f83db5759a2b5f24e81ed91e694229bcdf9017c4"
    files = {f"pkg/doc{i}.md": (f"# Doc {i}\n" + "text " * 200).encode() for i in range(50)}
    files["pkg/" + "long-folder/" * 12 + "file.md"] = b"long\n"
    baseline = github_tar(f"repo-{sha}", sha, files)
    issue = gz_tar(tar_entry(b"pax", b"x", b"1" * 120_000))
    value = b"7" * MAX_DIGIT_RUN
    records = pax_records([(b"k%d" % i, value) for i in range(MAX_EXTENDED_HEADER // (len(value) + 12))])
    worst = gz_tar(tar_entry(b"h", b"x", records), tar_entry(f"repo-{sha}/pkg/a.md".encode(), b"0", b"a"))
    old = gz_tar(tar_entry(b"pax", b"x", b"1" * args.digits))

    base_ms = _cpu(_read(baseline), args.runs)
    rows = [["forge tarball (baseline)", len(baseline), f"{base_ms:.1f}", "1.00x"]]
    for label, body, action in [
        ("120,000-digit pax header, read_tar (refused)", issue, _read(issue)),
        (
            f"worst accepted pax header ({len(records)} B, {MAX_DIGIT_RUN}-digit runs), read_tar",
            worst,
            _read(worst),
        ),
        (f"{args.digits:,}-digit pax header, tarfile alone", old, _tarfile(old)),
    ]:
        ms = _cpu(action, args.runs)
        rows.append([label, len(body), f"{ms:.1f}", ratio(ms, base_ms)])
    print_table(
        "Hostile tar headers (CPU ms, median)",
        ["case", "compressed bytes", "CPU ms", "vs baseline"],
        rows,
        [machine()],
    )


if __name__ == "__main__":
    main()
