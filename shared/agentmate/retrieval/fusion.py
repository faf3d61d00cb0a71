"""Reciprocal rank fusion of the lexical and vector legs (prior-art §4.2).

Why RRF: the two legs score on incomparable scales (BM25 vs cosine), so only ranks are fused.
Each document gets sum(1 / (k + rank)) over the legs it appears in (rank is 1-based, k = 10, equal
weights). k = 10, not prior-art's 60, was chosen on the dev sets (bench/fusion_tuning.py, docs/decisions.md
D-retrieval-bm25): it ranked best by recall_all@10 among RRF constants, weights and score-normalised fusions,
which all fell within 0.03 of each other once the lexical leg matched natural-language queries. The reported score divides by 2 / (k + 1), so 1.0 means rank 1 in both legs and 0.5 means
rank 1 in one leg only; a search that ran with one leg down therefore never reports more than 0.5,
which is honest about the evidence.

Ties are broken by newer `updated_at` first, then id ascending, so the order is deterministic.
Scores are compared exactly, so float rounding never decides a tie: every term 1 / (k + rank) is an integer
multiple of 1 / L, L being the least common multiple of the k + rank values present, so the fused sums are
compared as integers (``fractions.Fraction`` did the same at ~10x the cost: 1.5 ms for two legs of 50).

Pure and standard-library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from math import lcm
from typing import Final, Literal

__all__ = ["DEFAULT_K", "Candidate", "FusedHit", "reciprocal_rank_fusion"]

DEFAULT_K = 10
Channel = Literal["lexical", "vector"]
LEXICAL: Final = "lexical"
VECTOR: Final = "vector"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One hit of one leg, in that leg's rank order: its id, raw leg score and last update time."""

    id: str
    score: float
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class FusedHit:
    """A fused result. `channels` lists the legs that found it (lexical first)."""

    id: str
    score: float  # normalised: 1.0 = rank 1 in both legs
    channels: tuple[Channel, ...]
    lexical_score: float | None  # raw BM25 (0084), None when the lexical leg did not find it
    vector_score: float | None  # raw cosine, None when the vector leg did not find it
    lexical_rank: int | None
    vector_rank: int | None
    updated_at: datetime | None

    @property
    def stage(self) -> str:
        """`lexical`, `vector` or `lexical+vector` (the prior art's stage label)."""
        return "+".join(self.channels)


def _ranked(leg: Iterable[Candidate] | None) -> dict[str, tuple[int, Candidate]]:
    """id -> (1-based rank, candidate); a repeated id keeps its first (best) position."""
    ranks: dict[str, tuple[int, Candidate]] = {}
    if leg is None:
        return ranks
    for cand in leg:
        if cand.id not in ranks:
            ranks[cand.id] = (len(ranks) + 1, cand)
    return ranks


def _recency_key(ts: datetime | None) -> float:
    # Newer first; a missing timestamp sorts as the oldest.
    return -ts.timestamp() if ts is not None else float("inf")


def reciprocal_rank_fusion(
    lexical: Sequence[Candidate] | None,
    vector: Sequence[Candidate] | None,
    *,
    k: int = DEFAULT_K,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse two ranked candidate lists; pass None or [] for a leg that failed or was skipped.

    Returns hits sorted by fused score DESC, then updated_at DESC, then id ASC, truncated to `limit`.
    """
    if k < 0:
        raise ValueError("k must be >= 0")
    lex = _ranked(lexical)
    vec = _ranked(vector)
    # Exact arithmetic in units of 1 / scale: ranks are 1..len(leg), so every k + rank divides scale.
    scale = lcm(*range(k + 1, k + max(len(lex), len(vec)) + 1)) if lex or vec else 1
    normaliser = 2 * scale  # score = fused / scale / (2 / (k + 1)) = fused * (k + 1) / (2 * scale)

    # Sort first, build the hits of the kept prefix only.
    scored: list[
        tuple[int, float, str, tuple[int, Candidate] | None, tuple[int, Candidate] | None, datetime | None]
    ] = []
    for doc_id in dict.fromkeys([*lex, *vec]):  # union, first-seen order (irrelevant after sort)
        lex_entry = lex.get(doc_id)
        vec_entry = vec.get(doc_id)
        fused = 0
        updated_at: datetime | None = None
        if lex_entry is not None:
            fused += scale // (k + lex_entry[0])
            updated_at = lex_entry[1].updated_at
        if vec_entry is not None:
            fused += scale // (k + vec_entry[0])
            updated_at = _newest(updated_at, vec_entry[1].updated_at)
        scored.append((-fused, _recency_key(updated_at), doc_id, lex_entry, vec_entry, updated_at))
    scored.sort(key=lambda item: item[:3])
    if limit is not None:
        scored = scored[: max(limit, 0)]
    hits = []
    for negated, _, doc_id, lex_entry, vec_entry, updated_at in scored:
        channels: list[Channel] = []
        if lex_entry is not None:
            channels.append(LEXICAL)
        if vec_entry is not None:
            channels.append(VECTOR)
        hits.append(
            FusedHit(
                id=doc_id,
                score=-negated * (k + 1) / normaliser,  # int / int: correctly rounded, as float(Fraction) was
                channels=tuple(channels),
                lexical_score=lex_entry[1].score if lex_entry else None,
                vector_score=vec_entry[1].score if vec_entry else None,
                lexical_rank=lex_entry[0] if lex_entry else None,
                vector_rank=vec_entry[0] if vec_entry else None,
                updated_at=updated_at,
            )
        )
    return hits


def _newest(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)
