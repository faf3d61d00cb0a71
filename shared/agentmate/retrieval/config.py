"""The embedder and vector index of this execution environment, built once from Settings.

- ``EMBEDDING_BASE_URL`` set → the OpenAI-compatible client; otherwise the offline default
  (``EMBEDDING_OFFLINE``: ``static`` = the bundled model2vec model, ``hashing`` = feature hashing).
- ``QDRANT_URL`` set → the Qdrant server index; otherwise the embedded index (in memory when ``VECTOR_PATH``
  is empty, else persisted in that folder) — except in ``prod``, where a missing ``QDRANT_URL`` is an error (each
  Lambda environment would otherwise hold its own partial index).

Building is lazy (first use) and a failure is not cached, so a transient error is retried on the next request.
Tests and tools replace either part with ``set_embedder`` / ``set_vector_index`` (``None`` restores the
configured one); ``reset`` drops everything built so far.
"""

from __future__ import annotations

import threading
from typing import Any

from agentmate.core.settings import Settings, get_settings
from agentmate.retrieval.embedders import Embedder

_lock = threading.RLock()
_embedder: Embedder | None = None
_index: Any = None
_embedder_override: Embedder | None = None
_index_override: Any = None

OFFLINE_HASHING_DIMENSIONS = 256


def build_embedder(settings: Settings) -> Embedder:
    from agentmate.retrieval import embedders

    if settings.embedding_base_url:
        return embedders.OpenAIEmbedder(
            base_url=settings.embedding_base_url,
            api_key=settings.resolved_embedding_api_key(),
            model=settings.embedding_model,
            dimensions=settings.embedding_dimensions,
        )
    if settings.embedding_offline == "hashing":
        return embedders.HashingEmbedder(OFFLINE_HASHING_DIMENSIONS)
    return embedders.default_offline_embedder()


def build_vector_index(settings: Settings, dimensions: int) -> Any:
    from agentmate.retrieval import vector_index

    if settings.qdrant_url:
        index: Any = vector_index.QdrantServerIndex(
            url=settings.qdrant_url,
            api_key=settings.resolved_qdrant_api_key() or None,
            collection=settings.qdrant_collection,
        )
    elif settings.agentmate_env == "prod":
        # In Lambda the embedded index would be a private, throwaway copy per execution environment: refuse it,
        # so the vector leg reports itself degraded instead of silently answering from a partial index.
        raise vector_index.VectorIndexError(
            "QDRANT_URL is not set: the embedded vector index is for local runs"
        )
    else:
        index = vector_index.EmbeddedIndex(path=settings.vector_path or None)
    index.ensure_collection(dimensions)
    return index


def get_embedder() -> Embedder:
    global _embedder
    if _embedder_override is not None:
        return _embedder_override
    if _embedder is None:
        with _lock:
            if _embedder is None:
                _embedder = build_embedder(get_settings())
    return _embedder


def get_vector_index() -> Any:
    """The vector index (its vector size follows the configured embedder)."""
    global _index
    if _index_override is not None:
        return _index_override
    if _index is None:
        with _lock:
            if _index is None:
                _index = build_vector_index(get_settings(), get_embedder().dimensions)
    return _index


def set_embedder(embedder: Embedder | None) -> None:
    """Use this embedder instead of the configured one (``None`` = back to the configured one)."""
    global _embedder_override
    _embedder_override = embedder


def set_vector_index(index: Any) -> None:
    """Use this vector index instead of the configured one (``None`` = back to the configured one)."""
    global _index_override
    _index_override = index


def reset() -> None:
    """Forget overrides and everything built (the next use rebuilds from settings)."""
    global _embedder, _index, _embedder_override, _index_override
    with _lock:
        _embedder = _index = _embedder_override = _index_override = None
