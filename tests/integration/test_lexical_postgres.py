# ruff: noqa: RUF001  (full-width and CJK characters are the point of these tests)
"""The lexical projection against a real PostgreSQL: no input may make to_tsquery/to_tsvector raise.

Starts a throwaway server (unix socket only, no TCP port) from the PostgreSQL binaries when they are
installed, in two databases: one with the C locale (what `initdb --no-locale` gives) and one with
C.UTF-8 (where the text-search parser classifies non-ASCII letters through the locale). Skipped when
no PostgreSQL binaries or no psycopg are available.
"""

from __future__ import annotations

import glob
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from agentmate.retrieval.lexical import projection, tsquery
from tests.unit.retrieval.test_lexical import NASTY_PIECES, random_nasty

psycopg = pytest.importorskip("psycopg")


def _pg_bin() -> str | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    for path in reversed(candidates):
        if os.path.exists(os.path.join(path, "initdb")):
            return path
    return None


@pytest.fixture(scope="module")
def pg_dsns() -> Iterator[dict[str, str]]:
    pg_bin = _pg_bin()
    if pg_bin is None:
        pytest.skip("no PostgreSQL binaries")
    as_root = os.geteuid() == 0
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    tmp = tempfile.mkdtemp(prefix="lexpg-")
    if as_root:
        shutil.chown(tmp, "postgres")
    data = os.path.join(tmp, "data")

    def run(*args: str) -> None:
        subprocess.run([*run_as, *args], check=True, capture_output=True, timeout=60)

    try:
        run(
            f"{pg_bin}/initdb",
            "-D",
            data,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
        )
        run(
            f"{pg_bin}/pg_ctl",
            "-D",
            data,
            "-l",
            os.path.join(tmp, "server.log"),
            "-w",
            "-o",
            f"-k {tmp} -c listen_addresses= -c fsync=off -c synchronous_commit=off",
            "start",
        )
    except (subprocess.CalledProcessError, FileNotFoundError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        pytest.skip(f"cannot start PostgreSQL: {exc}")
    try:
        base = f"host={tmp} user=postgres dbname=postgres"
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(
                "CREATE DATABASE lex_cutf8 TEMPLATE template0 ENCODING 'UTF8' "
                "LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"
            )
        yield {"C": base, "C.UTF-8": f"host={tmp} user=postgres dbname=lex_cutf8"}
    finally:
        subprocess.run(
            [*run_as, f"{pg_bin}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(tmp, ignore_errors=True)


def _inputs() -> list[str]:
    rng = random.Random(42)
    return [*NASTY_PIECES, "".join(NASTY_PIECES)] + [random_nasty(rng) for _ in range(1500)]


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_no_input_makes_postgres_raise(pg_dsns: dict[str, str], locale: str) -> None:
    unmatched: list[str] = []
    with psycopg.connect(pg_dsns[locale], autocommit=True) as conn:
        for text in _inputs():
            q = tsquery(text)
            if q is not None:
                conn.execute("SELECT to_tsquery('simple', %s)", (q,)).fetchone()
            clean = text.replace("\x00", "")  # Postgres text cannot hold NUL; the caller strips it
            proj = projection(clean, clean)
            row = conn.execute(
                "SELECT to_tsvector('simple', %(p)s) @@ to_tsquery('simple', %(q)s)",
                {"p": proj, "q": q or "'x'"},
            ).fetchone()
            if q is not None and "\x00" not in text and locale == "C":
                # A text always matches its own query: index and query share one tokenizer.
                # (Under C.UTF-8 the server's parser may drop characters its libc does not know,
                # such as recently assigned ideographs, on both sides: no match, but no error.)
                assert row == (True,), (text, proj, q)
            elif q is not None and row != (True,):
                unmatched.append(text)
        assert len(unmatched) < len(_inputs()) // 20, unmatched[:20]


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
def test_projection_matches_paraphrase_fragments_and_ranks(pg_dsns: dict[str, str], locale: str) -> None:
    docs = {
        "zh": ("知识库检索", "混合检索把全文检索和向量检索结合起来。"),
        "en": ("Retry policy", "Webhooks use pax_global_header and exponential backoff."),
        "ja": ("ラーメン", "東京のラーメン屋さん"),
    }
    cases = [
        ("向量检索", "zh"),
        ("检索", "zh"),
        ("backoff webhooks", "en"),
        ("global", "en"),
        ("ラーメン屋", "ja"),
        ("ＥＸＰＯＮＥＮＴＩＡＬ", "en"),
    ]
    with psycopg.connect(pg_dsns[locale], autocommit=True) as conn:
        for query, expected in cases:
            matched = [
                key
                for key, (title, content) in docs.items()
                if conn.execute(
                    "SELECT to_tsvector('simple', %s) @@ to_tsquery('simple', %s)",
                    (projection(title, content), tsquery(query)),
                ).fetchone()[0]
            ]
            assert matched == [expected], (query, matched)
        rank = conn.execute(
            "SELECT ts_rank_cd(to_tsvector('simple', %s), to_tsquery('simple', %s))",
            (projection(*docs["zh"]), tsquery("检索")),
        ).fetchone()[0]
        assert rank > 0
        # and a word that is absent does not match
        assert not conn.execute(
            "SELECT to_tsvector('simple', %s) @@ to_tsquery('simple', %s)",
            (projection(*docs["en"]), tsquery("webhooks kafka")),
        ).fetchone()[0]


def test_huge_document_projection_fits_a_tsvector(pg_dsns: dict[str, str]) -> None:
    huge = " ".join(f"w{i:07d}x{'y' * 60}" for i in range(20000))  # ~1.4 MB of distinct words
    with psycopg.connect(pg_dsns["C"], autocommit=True) as conn:
        n = conn.execute("SELECT length(to_tsvector('simple', %s))", (projection("t", huge),)).fetchone()[0]
        assert 10000 < n < 20001
