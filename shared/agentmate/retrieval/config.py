"""Which embedder and vector index Settings select (``service.Retrieval`` builds its parts with these).

- ``EMBEDDING_BASE_URL`` set → the OpenAI-compatible client; otherwise the offline default
  (``EMBEDDING_OFFLINE``: ``static`` = the bundled model2vec model, ``hashing`` = feature hashing) — except in
  ``prod``, where a missing ``EMBEDDING_BASE_URL`` is an error: the Lambda layer carries no offline embedder (its
  model2vec stack is the ``local`` extra of the local runtime and the tests; docs/deploy.md §3).
- ``QDRANT_URL`` set → the Qdrant server index; otherwise the embedded index (in memory when ``VECTOR_PATH``
  is empty, else persisted in that folder) — except in ``prod``, where a missing ``QDRANT_URL`` is an error (each
  Lambda environment would otherwise hold its own partial index).

The implementations are imported here, on first use, never at module import (cold start matters).
"""

from __future__ import annotations

from agentmate.core.settings import RetrievalSettings
from agentmate.retrieval.embedders import Embedder, EmbeddingError
from agentmate.retrieval.vector_index import VectorIndex, VectorIndexError

OFFLINE_HASHING_DIMENSIONS = 256


def build_embedder(settings: RetrievalSettings) -> Embedder:
    from agentmate.retrieval import embedders

    if settings.embedding_base_url:
        return embedders.OpenAIEmbedder(
            base_url=settings.embedding_base_url,
            api_key=settings.resolved_embedding_api_key(),
            model=settings.embedding_model,
            dimensions=settings.embedding_dimensions,
        )
    if settings.agentmate_env == "prod":
        raise EmbeddingError(
            "EMBEDDING_BASE_URL is not set: a deployment embeds over HTTP (the offline embedder is for local runs)"
        )
    if settings.embedding_offline == "hashing":
        return embedders.HashingEmbedder(OFFLINE_HASHING_DIMENSIONS)
    return embedders.default_offline_embedder()


def build_vector_index(settings: RetrievalSettings, dimensions: int) -> VectorIndex:
    index: VectorIndex
    if settings.qdrant_url:
        from agentmate.retrieval import qdrant_index

        index = qdrant_index.QdrantServerIndex(
            url=settings.qdrant_url,
            api_key=settings.resolved_qdrant_api_key() or None,
            collection=settings.qdrant_collection,
        )
    elif settings.agentmate_env == "prod":
        # In Lambda the embedded index would be a private, throwaway copy per execution environment: refuse it,
        # so the vector leg reports itself degraded instead of silently answering from a partial index.
        raise VectorIndexError("QDRANT_URL is not set: the embedded vector index is for local runs")
    else:
        from agentmate.retrieval import embedded_index

        index = embedded_index.EmbeddedIndex(path=settings.vector_path or None)
    index.ensure_collection(dimensions)
    return index
