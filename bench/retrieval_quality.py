"""Retrieval quality (issue 21): recall and MRR of memory search and knowledge search on a labelled dev set, for
the lexical leg alone, the dense (vector) leg alone and the hybrid ranking the API serves, overall and per category.

    .venv/bin/python bench/retrieval_quality.py memory [--data bench/data/retrieval_dev] [--top-k 10] [--json out.json]
    .venv/bin/python bench/retrieval_quality.py knowledge [--corpus bench/data/retrieval_dev_knowledge] [--top-k 10]
                                                          [--json out.json]

Postgres: a cluster of its own in .local/bench-quality-pg (port $AGENTMATE_QUALITY_BENCH_PG_PORT, default 26457),
a fresh migrated database, the application connecting as ``agentmate_app`` (RLS applies). The API is the local
runtime (``infra.local_app.build_local_app``: the route-group apps the Lambdas run) called in-process through
Starlette's TestClient, with an API key of a freshly registered account. Embedder and vector index are the local
defaults (the offline static embedder, the in-memory embedded index): nothing leaves the machine.

memory: the dataset's shape is documented in bench/data/retrieval_dev/README.md. One memory per turn is stored with
``POST /api/memory/entries`` (episodic, content ``"{speaker}: {text}"``, the turn's date as ``valid_from``, the
turn id as evidence), one scope per conversation (``project:<conversation id>``), sequentially (the API has no batch
store; one Lambda environment serves one request at a time), each store timed. Each question is searched with
``POST /api/memory/search`` (its conversation's scope, top_k = --top-k), timed. The leg-only rankings call the
retrieval core in-process on the same database, account and Retrieval with the very ``Query`` the API built for
that request (recorded as it passed, so namespace, filters, candidate counts and pools are the API's), ``legs``
set to one leg; every ranking is scored on its first 10 hits.

knowledge: bench/data/retrieval_dev_knowledge/ (README there): a Markdown package (``corpus/``) pushed as a snapshot
(``POST /api/knowledge/sources`` + ``/snapshots``), indexed (``POST /api/knowledge/index``), then each question
searched with ``POST /api/knowledge/search`` (top_k, include_content) and leg-only as above. A hit is gold when
its document path is the gold path and its chunk contains the gold phrase (whitespace- and case-folded), so the
labels survive chunking changes.

Figures: recall_any@5 and @10 (a gold turn/chunk in the top k), recall_all@10 (every gold one in the top 10),
MRR@10 (1 / rank of the first gold hit), per mode and category; for hybrid, the share of questions whose top 10
holds a hit the lexical leg found ("lexical contributed"); per mode the share of questions with no hit at all.
Deterministic: fixed order, no sampling. Nothing here asserts a quality threshold.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import common
from common import ROOT, machine, percentile, print_table

COMMAND = ".venv/bin/python bench/retrieval_quality.py"
PG_DIR = ROOT / ".local" / "bench-quality-pg"
PG_PORT = int(os.environ.get("AGENTMATE_QUALITY_BENCH_PG_PORT", "26457"))
DEFAULT_DATA = ROOT / "bench" / "data" / "retrieval_dev"
DEFAULT_CORPUS = ROOT / "bench" / "data" / "retrieval_dev_knowledge"
CATEGORIES = (
    "paraphrase",
    "identifier",
    "temporal",
    "multi_turn",
    "stopword_heavy",
    "near_duplicate",
    "inflection",
)
MODES = ("lexical", "dense", "hybrid")
LEGS: dict[str, frozenset[Any]] = {"lexical": frozenset({"lexical"}), "dense": frozenset({"vector"})}
SCOPE_TYPE = "project"
METRICS = ("recall_any@5", "recall_any@10", "recall_all@10", "mrr@10")


# ---- the memory dataset ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: str
    date: str
    text: str


@dataclass(frozen=True)
class Conversation:
    id: str
    title: str
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    id: str
    scope: str  # memory: the conversation id; knowledge: "" (one package)
    question: str
    answer: str
    gold: tuple[Any, ...]  # memory: turn ids; knowledge: (path, phrase) pairs
    category: str


@dataclass
class Dataset:
    conversations: list[Conversation] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


class DatasetError(ValueError):
    """The dev set does not have the documented shape; the message names the file and the item."""


def _need(obj: Any, key: str, kind: type, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DatasetError(f"{where}: missing {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, str) and not value.strip()):
        raise DatasetError(f"{where}: {key!r} must be a{' non-empty' if kind is str else ''} {kind.__name__}")
    return value


def _strings(obj: Any, key: str, where: str) -> tuple[str, ...]:
    values = _need(obj, key, list, where)
    if not values or not all(isinstance(v, str) and v.strip() for v in values):
        raise DatasetError(f"{where}: {key!r} must be a non-empty list of ids or names")
    return tuple(values)


def load_dataset(path: Path) -> Dataset:
    """Every ``*.json`` of the folder ``path`` (or the one file ``path``), in name order, concatenated; ids are
    checked globally unique and every question's evidence must be turns of its conversation."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise DatasetError(f"{path}: no *.json files")
    out = Dataset()
    turn_of: dict[str, str] = {}  # turn id -> conversation id
    seen: set[str] = set()

    def unique(item_id: str, where: str) -> None:
        if item_id in seen:
            raise DatasetError(f"{where}: id {item_id!r} is used twice")
        seen.add(item_id)

    for file in files:
        name = file.name
        try:
            doc = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{name}: not readable JSON ({exc})") from exc
        _need(doc, "license", str, name)
        for c_i, c in enumerate(_need(doc, "conversations", list, name)):
            where = f"{name}: conversations[{c_i}]"
            cid = _need(c, "id", str, where)
            unique(cid, where)
            speakers = _strings(c, "speakers", where)
            turns = []
            for t_i, t in enumerate(_need(c, "turns", list, where)):
                twhere = f"{where}.turns[{t_i}]"
                turn = Turn(
                    _need(t, "id", str, twhere),
                    _need(t, "speaker", str, twhere),
                    _need(t, "date", str, twhere),
                    _need(t, "text", str, twhere),
                )
                unique(turn.id, twhere)
                _parse_date(turn.date, twhere)
                if turn.speaker not in speakers:
                    raise DatasetError(f"{twhere}: speaker {turn.speaker!r} is not in speakers")
                turn_of[turn.id] = cid
                turns.append(turn)
            out.conversations.append(Conversation(cid, _need(c, "title", str, where), speakers, tuple(turns)))
        for q_i, q in enumerate(_need(doc, "questions", list, name)):
            where = f"{name}: questions[{q_i}]"
            qid = _need(q, "id", str, where)
            unique(qid, where)
            conv = _need(q, "conversation", str, where)
            evidence = _strings(q, "evidence", where)
            category = _need(q, "category", str, where)
            if category not in CATEGORIES:
                raise DatasetError(f"{where}: category {category!r} is not one of {', '.join(CATEGORIES)}")
            out.questions.append(
                Question(
                    qid,
                    conv,
                    _need(q, "question", str, where),
                    _need(q, "answer", str, where),
                    evidence,
                    category,
                )
            )
        out.files.append(name)
    conversations = {c.id for c in out.conversations}
    for q in out.questions:
        if q.scope not in conversations:
            raise DatasetError(f"question {q.id}: conversation {q.scope!r} does not exist")
        for tid in q.gold:
            if turn_of.get(tid) != q.scope:
                raise DatasetError(f"question {q.id}: evidence {tid!r} is not a turn of {q.scope}")
    return out


def _parse_date(value: str, where: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise DatasetError(f"{where}: date {value!r} is not ISO 8601") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# ---- the knowledge dataset ---------------------------------------------------------------------------------------


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def load_knowledge(corpus: Path) -> tuple[list[dict[str, str]], list[Question]]:
    """The package files under ``corpus/corpus`` (path relative to it) and the questions of ``questions.json``;
    every gold phrase must occur in its document (checked here, so a typo fails before any indexing)."""
    root = corpus / "corpus"
    files = [
        {"path": p.relative_to(root).as_posix(), "content": p.read_text(encoding="utf-8")}
        for p in sorted(root.rglob("*"))
        if p.is_file()
    ]
    if not any(f["path"] == "KNOWLEDGE.yaml" for f in files):
        raise DatasetError(f"{root}: no KNOWLEDGE.yaml")
    text_of = {f["path"]: _fold(f["content"]) for f in files}
    doc = json.loads((corpus / "questions.json").read_text(encoding="utf-8"))
    questions, seen = [], set()
    for q_i, q in enumerate(_need(doc, "questions", list, "questions.json")):
        where = f"questions.json: questions[{q_i}]"
        qid = _need(q, "id", str, where)
        if qid in seen:
            raise DatasetError(f"{where}: id {qid!r} is used twice")
        seen.add(qid)
        category = _need(q, "category", str, where)
        if category not in CATEGORIES:
            raise DatasetError(f"{where}: category {category!r} is not one of {', '.join(CATEGORIES)}")
        gold = []
        for g in _need(q, "gold", list, where):
            path, phrase = _need(g, "path", str, where), _need(g, "phrase", str, where)
            if _fold(phrase) not in text_of.get(path, ""):
                raise DatasetError(f"{where}: gold phrase {phrase!r} is not in {path}")
            gold.append((path, _fold(phrase)))
        if not gold:
            raise DatasetError(f"{where}: gold is empty")
        questions.append(
            Question(
                qid, "", _need(q, "question", str, where), str(q.get("answer", "")), tuple(gold), category
            )
        )
    return files, questions


# ---- scoring -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranked:
    """One hit of a ranking: the gold items it covers (turn ids, or indexes into a knowledge question's gold)."""

    covers: frozenset[Any]
    lexical: bool  # the lexical leg found it (its channels include lexical)


def score_question(gold: Iterable[Any], ranking: Sequence[Ranked]) -> dict[str, float]:
    gold_set = set(gold)
    first = next((i for i, r in enumerate(ranking[:10], start=1) if r.covers & gold_set), None)
    covered10 = set().union(*(r.covers for r in ranking[:10])) if ranking else set()
    covered5 = set().union(*(r.covers for r in ranking[:5])) if ranking else set()
    return {
        "recall_any@5": float(bool(covered5 & gold_set)),
        "recall_any@10": float(bool(covered10 & gold_set)),
        "recall_all@10": float(gold_set <= covered10),
        "mrr@10": 1.0 / first if first else 0.0,
        "lexical_contributed": float(any(r.lexical for r in ranking[:10])),
        "empty": float(not ranking),
    }


def aggregate(
    questions: Sequence[Question], scores: dict[str, dict[str, dict[str, float]]]
) -> dict[str, Any]:
    """``scores[mode][question id]`` -> per mode: overall and per category means, with the counts."""
    out: dict[str, Any] = {}
    for mode in MODES:
        groups: dict[str, list[dict[str, float]]] = {"overall": []}
        for q in questions:
            s = scores[mode][q.id]
            groups["overall"].append(s)
            groups.setdefault(q.category, []).append(s)
        out[mode] = {}
        for name in ("overall", *CATEGORIES):
            rows = groups.get(name, [])
            if not rows:
                continue
            out[mode][name] = {"n": len(rows), **{k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}}
    return out


def timing(values_ms: Sequence[float]) -> dict[str, float]:
    return {"n": len(values_ms), "p50_ms": percentile(values_ms, 50), "p95_ms": percentile(values_ms, 95)}


def print_report(report: dict[str, Any]) -> None:
    for mode in MODES:
        figures = report["figures"][mode]
        extra = ["lexical contributed"] if mode == "hybrid" else []
        rows = []
        for name, f in figures.items():
            rows.append(
                [
                    name,
                    f["n"],
                    *(f"{f[k]:.3f}" for k in METRICS),
                    f"{f['empty']:.3f}",
                    *([f"{f['lexical_contributed']:.3f}"] if mode == "hybrid" else []),
                ]
            )
        print_table(
            f"{report['variant']}: {mode} ({report['modes'][mode]})",
            ["category", "questions", *METRICS, "no hit", *extra],
            rows,
        )
    rows = [
        [name, t["n"], f"{t['p50_ms']:.2f}", f"{t['p95_ms']:.2f}"] for name, t in report["timings"].items()
    ]
    print_table(
        f"{report['variant']}: latency through the API",
        ["step", "calls", "p50 ms", "p95 ms"],
        rows,
        notes=report["notes"],
    )


# ---- the API (any client with .post(path, json=, headers=) answering status_code and .json()) ---------------------


Post = Callable[[str, dict[str, Any], tuple[int, ...]], tuple[dict[str, Any], float]]


def api_poster(client: Any, headers: dict[str, str]) -> Post:
    """A timed POST: returns the JSON body and the milliseconds the call took; a status not in ``expect`` is an
    error."""

    def post(path: str, body: dict[str, Any], expect: tuple[int, ...]) -> tuple[dict[str, Any], float]:
        t0 = time.perf_counter_ns()
        r = client.post(path, json=body, headers=headers)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if r.status_code not in expect:
            raise RuntimeError(f"POST {path}: {r.status_code} {r.text[:500]}")
        return r.json(), ms

    return post


class QueryRecorder:
    """Records each retrieval ``Query`` the API builds: the REST request runs in this process on the same
    Retrieval, so the leg-only runs replay exactly the API's query (namespace, filters, candidate counts, pools)
    with one leg, whatever the domain services pass today."""

    def __init__(self, retrieval: Any) -> None:
        self.retrieval, self.queries = retrieval, list[Any]()
        self._replaying = False
        begin = retrieval.begin_search

        def begin_search(account_id: uuid.UUID, query: Any) -> Any:
            if not self._replaying:
                self.queries.append(query)
            return begin(account_id, query)

        retrieval.begin_search = begin_search  # an instance attribute shadows the method until close()

    def original(self, db: Any, account_id: uuid.UUID, query: Any) -> Any:
        """The search the leg-only runs call directly: not recorded."""
        self._replaying = True
        try:
            return self.retrieval.search(db, account_id, query)
        finally:
            self._replaying = False

    def take_one(self) -> Any:
        queries, self.queries = self.queries, []
        if len(queries) != 1:
            raise RuntimeError(f"expected the API to run one retrieval search, it ran {len(queries)}")
        return queries[0]

    def close(self) -> None:
        del self.retrieval.begin_search


def _leg_rankings(
    db: Any,
    recorder: QueryRecorder,
    account_id: uuid.UUID,
    covers: Callable[[dict[str, Any]], frozenset[Any]],
) -> dict[str, list[Ranked]]:
    """The last API search's query again, once per leg alone."""
    query, out = recorder.take_one(), {}
    for mode, legs in LEGS.items():
        result = recorder.original(db, account_id, dataclasses.replace(query, legs=legs))
        out[mode] = [Ranked(covers(h.document), "lexical" in h.channels) for h in result.hits]
    return out


# ---- memory ----------------------------------------------------------------------------------------------------------


def memory_store(
    post: Post, dataset: Dataset, *, date_in_content: bool = False, now: datetime | None = None
) -> tuple[dict[str, frozenset[str]], list[float], dict[str, int]]:
    """One memory per turn through ``POST /api/memory/entries``. Returns memory id -> the turn ids it holds (an
    identical turn in the same scope is deduplicated into the existing memory), the store times and counts."""
    now = now or datetime.now(UTC)
    turns_of: dict[str, set[str]] = {}
    times: list[float] = []
    counts = {"turns": 0, "deduplicated": 0, "future_dates_not_kept": 0}
    for conv in dataset.conversations:
        for turn in conv.turns:
            date = _parse_date(turn.date, turn.id)
            content = f"{turn.speaker}: {turn.text}"
            if date_in_content:
                content = f"[{date.date().isoformat()}] {content}"
            body: dict[str, Any] = {
                "memory_type": "episodic",
                "content": content,
                "scope_type": SCOPE_TYPE,
                "scope_key": conv.id,
                "evidence": [{"source_type": "conversation_turn", "source_id": turn.id}],
                "metadata": {"turn_id": turn.id, "speaker": turn.speaker},
            }
            # valid_from is where the API keeps a memory's time; a future one would hide it from search today.
            if date <= now:
                body["valid_from"] = date.isoformat()
            else:
                counts["future_dates_not_kept"] += 1
            stored, ms = post("/api/memory/entries", body, (201, 200))  # 200: deduplicated
            times.append(ms)
            counts["turns"] += 1
            counts["deduplicated"] += int(bool(stored.get("deduplicated")))
            if stored["indexing"]["status"] != "indexed":
                raise RuntimeError(f"turn {turn.id}: indexing {stored['indexing']}")
            turns_of.setdefault(stored["id"], set()).add(turn.id)
    return {k: frozenset(v) for k, v in turns_of.items()}, times, counts


def memory_rankings(
    post: Post,
    db: Any,
    recorder: QueryRecorder,
    account_id: uuid.UUID,
    question: Question,
    turns_of: dict[str, frozenset[str]],
    top_k: int,
) -> tuple[dict[str, list[Ranked]], float]:
    """The question's hybrid ranking through ``POST /api/memory/search`` (timed) and its leg-only rankings
    through the retrieval core with the query memory search built for it."""
    body = {"query": question.question, "top_k": top_k, "scope_type": SCOPE_TYPE, "scope_key": question.scope}
    found, ms = post("/api/memory/search", body, (200,))
    rankings = {
        "hybrid": [
            Ranked(turns_of.get(i["entry"]["id"], frozenset()), "lexical" in i["channels"])
            for i in found["items"]
        ]
    }
    rankings.update(
        _leg_rankings(db, recorder, account_id, lambda d: turns_of.get(d["source_id"], frozenset()))
    )
    return rankings, ms


def run_memory(
    post: Post,
    db: Any,
    retrieval: Any,
    account_id: uuid.UUID,
    dataset: Dataset,
    *,
    top_k: int = 10,
    date_in_content: bool = False,
) -> dict[str, Any]:
    post("/api/memory/search", {"query": "warm up", "top_k": 1}, (200,))  # loads the embedder: not timed
    turns_of, store_ms, counts = memory_store(post, dataset, date_in_content=date_in_content)
    scores: dict[str, dict[str, dict[str, float]]] = {m: {} for m in MODES}
    search_ms = []
    recorder = QueryRecorder(retrieval)
    try:
        for q in dataset.questions:
            rankings, ms = memory_rankings(post, db, recorder, account_id, q, turns_of, top_k)
            search_ms.append(ms)
            for mode in MODES:
                scores[mode][q.id] = score_question(q.gold, rankings[mode])
    finally:
        recorder.close()
    per_category = {c: sum(q.category == c for q in dataset.questions) for c in CATEGORIES}
    return {
        "variant": "memory",
        "files": dataset.files,
        "counts": {
            "conversations": len(dataset.conversations),
            "questions": len(dataset.questions),
            "memories": len(turns_of),
            **counts,
            "questions_per_category": per_category,
        },
        "top_k": top_k,
        "modes": {
            "lexical": "retrieval core, lexical leg alone",
            "dense": "retrieval core, vector leg alone",
            "hybrid": "POST /api/memory/search",
        },
        "figures": aggregate(dataset.questions, scores),
        "per_question": {m: scores[m] for m in MODES},
        "timings": {
            "store (POST /api/memory/entries)": timing(store_ms),
            "search (POST /api/memory/search)": timing(search_ms),
        },
        "notes": [
            f"Turn date kept as {'a [YYYY-MM-DD] content prefix and ' if date_in_content else ''}"
            "valid_from; stores sequential, embedding included in both timings."
        ],
    }


# ---- knowledge -------------------------------------------------------------------------------------------------------


def knowledge_ingest(post: Post, files: list[dict[str, str]]) -> tuple[str, dict[str, float], dict[str, Any]]:
    """Register a local source, push the package as a snapshot and index it (repeated while the index run answers
    202 with work left). Returns the source id, the step times and the index outcome."""
    source, register_ms = post(
        "/api/knowledge/sources",
        {
            "type": "local",
            "repository_url": "file:///bench/retrieval_dev_knowledge",
            "package_path": "retrieval-dev",
        },
        (201,),
    )
    _, push_ms = post(f"/api/knowledge/sources/{source['id']}/snapshots", {"files": files}, (201,))
    index_ms, outcome = 0.0, None
    for _ in range(20):
        # 202: the inline budget was spent; asking again continues where it stopped (embedded chunks are kept).
        report, ms = post("/api/knowledge/index", {"source_id": source["id"]}, (200, 202))
        index_ms += ms
        if report["items"]:
            outcome = report["items"][0]
            break
    if outcome is None or outcome["failed_chunks"]:
        raise RuntimeError(f"knowledge indexing did not finish: {outcome}")
    return source["id"], {"register": register_ms, "snapshot push": push_ms, "index": index_ms}, outcome


def _knowledge_covers(question: Question, path: str, content: str) -> frozenset[int]:
    folded = _fold(content)
    return frozenset(i for i, (p, phrase) in enumerate(question.gold) if p == path and phrase in folded)


def knowledge_rankings(
    post: Post, db: Any, recorder: QueryRecorder, account_id: uuid.UUID, question: Question, top_k: int
) -> tuple[dict[str, list[Ranked]], float]:
    found, ms = post(
        "/api/knowledge/search", {"query": question.question, "top_k": top_k, "include_content": True}, (200,)
    )
    rankings = {
        "hybrid": [
            Ranked(_knowledge_covers(question, i["path"], i["content"]), "lexical" in i["channels"])
            for i in found["items"]
        ]
    }

    rankings.update(
        _leg_rankings(
            db,
            recorder,
            account_id,
            lambda d: _knowledge_covers(question, d["metadata"]["path"], d["content"]),
        )
    )
    return rankings, ms


def run_knowledge(
    post: Post, db: Any, retrieval: Any, account_id: uuid.UUID, corpus: Path, *, top_k: int = 10
) -> dict[str, Any]:
    files, questions = load_knowledge(corpus)
    post("/api/knowledge/search", {"query": "warm up", "top_k": 1}, (200,))  # loads the embedder: not timed
    _, ingest_ms, outcome = knowledge_ingest(post, files)
    scores: dict[str, dict[str, dict[str, float]]] = {m: {} for m in MODES}
    search_ms = []
    recorder = QueryRecorder(retrieval)
    try:
        for q in questions:
            # Gold is scored by index into q.gold, so recall_all means every gold chunk.
            rankings, ms = knowledge_rankings(post, db, recorder, account_id, q, top_k)
            search_ms.append(ms)
            for mode in MODES:
                scores[mode][q.id] = score_question(range(len(q.gold)), rankings[mode])
    finally:
        recorder.close()
    return {
        "variant": "knowledge",
        "files": [f["path"] for f in files],
        "counts": {
            "documents": outcome["documents"],
            "chunks": outcome["chunks"],
            "questions": len(questions),
            "questions_per_category": {c: sum(q.category == c for q in questions) for c in CATEGORIES},
        },
        "top_k": top_k,
        "modes": {
            "lexical": "retrieval core, lexical leg alone",
            "dense": "retrieval core, vector leg alone",
            "hybrid": "POST /api/knowledge/search",
        },
        "figures": aggregate(questions, scores),
        "per_question": {m: scores[m] for m in MODES},
        "timings": {
            **{f"{k} (once)": timing([v]) for k, v in ingest_ms.items()},
            "search (POST /api/knowledge/search)": timing(search_ms),
        },
        "notes": [
            f"{outcome['documents']} documents, {outcome['chunks']} chunks; index time includes embedding."
        ],
    }


# ---- running it ------------------------------------------------------------------------------------------------------


@dataclass
class Session:
    post: Post
    db: Any
    retrieval: Any
    account_id: uuid.UUID


def open_session(client: Any) -> Session:
    """A fresh account and an API key (memory + knowledge) on ``client``, the process's Database and Retrieval
    (the ones the app's dependencies serve)."""
    from agentmate.core.db import get_database
    from agentmate.retrieval.service import get_retrieval

    email, password = f"quality-{uuid.uuid4().hex[:12]}@example.com", common.PASSWORD
    reg, _ = api_poster(client, {})("/api/auth/register", {"email": email, "password": password}, (201,))
    login, _ = api_poster(client, {})("/api/auth/login", {"email": email, "password": password}, (200,))
    key, _ = api_poster(client, {"Authorization": f"Bearer {login['token']}"})(
        "/api/auth/apikeys", {"name": "quality", "scopes": ["memory:rw", "knowledge:rw"]}, (201,)
    )
    return Session(
        api_poster(client, {"X-Api-Key": key["key"]}),
        get_database(),
        get_retrieval(),
        uuid.UUID(reg["account_id"]),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="variant", required=True)
    mem = sub.add_parser("memory", help="memory search over a conversation dev set")
    mem.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a folder of *.json files (or one file)")
    mem.add_argument(
        "--date-in-content",
        action="store_true",
        help="also prefix each memory with [YYYY-MM-DD] (default: the date is only valid_from)",
    )
    kn = sub.add_parser("knowledge", help="knowledge search over a Markdown corpus with gold chunks")
    kn.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    for p in (mem, kn):
        p.add_argument("--top-k", type=int, default=10, choices=range(1, 21), metavar="1..20")
        p.add_argument("--json", type=Path, help="write every figure (and per-question scores) here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    dataset = (
        load_dataset(args.data) if args.variant == "memory" else None
    )  # fail on a bad file before Postgres

    common.prepare_database("agentmate_bench_quality", pg_dir=PG_DIR, pg_port=PG_PORT)
    warnings.filterwarnings("ignore", "No application metrics")
    from starlette.testclient import TestClient

    from infra.local_app import build_local_app

    with TestClient(build_local_app(), base_url="http://127.0.0.1:26001") as client:
        s = open_session(client)
        if dataset is not None:
            report = run_memory(
                s.post,
                s.db,
                s.retrieval,
                s.account_id,
                dataset,
                top_k=args.top_k,
                date_in_content=args.date_in_content,
            )
        else:
            report = run_knowledge(s.post, s.db, s.retrieval, s.account_id, args.corpus, top_k=args.top_k)
    embedder = s.retrieval.embedder()
    report["embedder"] = f"{embedder.name} ({embedder.dimensions} dims)"
    report["command"] = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    report["machine"] = machine()
    report["notes"] = [
        *report["notes"],
        f"Embedder: {report['embedder']}; counts: {json.dumps(report['counts'])}",
        f"Command: {report['command']}",
        f"Machine: {report['machine']}. Run time {time.perf_counter() - started:.0f} s.",
    ]
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
