"""The fields every search surface reports per hit about the two legs (memory, knowledge, wiki and skill search
use the same names and meanings), and the ``min_similarity`` request field they share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:  # schemas load at cold start; the retrieval service does not need to
    from agentmate.retrieval.service import Hit

LEXICAL_SCORE = (
    "Raw lexical (BM25) score: higher is better, unbounded, comparable only within one search; null "
    "when the lexical leg did not find it"
)
VECTOR_SCORE = (
    "Raw vector (cosine) similarity, what min_similarity compares; null when the vector leg did not find it"
)
LEXICAL_MATCHED = (
    "The lexical leg found every query term in it (stop words aside, English words matched across "
    "inflections); such a hit always passes min_similarity"
)
MIN_SIMILARITY = (
    "Drop hits whose raw vector similarity (vector_score) is below this, unless the lexical leg matched "
    "every query term (lexical_matched). The fused score cannot say 'nothing relevant'; this can. The "
    "threshold depends on the embedder: see the guide for the offline embedder's"
)


class HitLegs(BaseModel):
    """Which legs found a hit and what each scored."""

    channels: list[Literal["lexical", "vector"]] = Field(description="The legs that found it (lexical first)")
    lexical_score: float | None = Field(description=LEXICAL_SCORE)
    vector_score: float | None = Field(description=VECTOR_SCORE)
    lexical_matched: bool = Field(description=LEXICAL_MATCHED)


def legs_of(hit: Hit) -> dict[str, Any]:
    """A hit's ``HitLegs`` fields, to splat into a surface's hit model."""
    return {
        "channels": list(hit.channels),
        "lexical_score": hit.lexical_score,
        "vector_score": hit.vector_score,
        "lexical_matched": hit.lexical_matched,
    }
