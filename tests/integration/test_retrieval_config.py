"""Which embedder and vector index Settings select, and how a Retrieval object builds and uses its parts."""

from __future__ import annotations

import pytest

from agentmate.core.settings import RetrievalSettings as Settings
from agentmate.retrieval import config, qdrant_index
from agentmate.retrieval.embedded_index import EmbeddedIndex
from agentmate.retrieval.embedders import EmbeddingError, HashingEmbedder, OpenAIEmbedder, StaticModelEmbedder
from agentmate.retrieval.service import Retrieval, get_retrieval
from agentmate.retrieval.vector_index import VectorIndex, VectorIndexError

SECRET = "s" * 40


def test_the_embedder_follows_the_settings():
    openai = config.build_embedder(
        Settings(embedding_base_url="http://127.0.0.1:9/v1", embedding_api_key="k", embedding_dimensions=64)
    )
    assert isinstance(openai, OpenAIEmbedder) and openai.dimensions == 64
    openai.close()
    assert isinstance(config.build_embedder(Settings(embedding_offline="hashing")), HashingEmbedder)
    static = config.build_embedder(Settings())
    assert isinstance(static, StaticModelEmbedder) and static.dimensions == 256


def test_the_vector_index_follows_the_settings(tmp_path, monkeypatch):
    index = config.build_vector_index(Settings(vector_path=str(tmp_path / "vectors")), 32)
    assert isinstance(index, EmbeddedIndex) and (tmp_path / "vectors").is_dir()
    index.close()
    memory = config.build_vector_index(Settings(vector_path=""), 32)
    assert isinstance(memory, EmbeddedIndex)
    memory.close()
    # A Qdrant URL selects the server index, with the configured collection and key
    built: dict[str, object] = {}

    class FakeServerIndex:
        def __init__(self, **kwargs: object) -> None:
            built.update(kwargs)

        def ensure_collection(self, dimensions: int) -> None:
            built["dimensions"] = dimensions

    monkeypatch.setattr(qdrant_index, "QdrantServerIndex", FakeServerIndex)
    server = config.build_vector_index(
        Settings(qdrant_url="https://q.example", qdrant_api_key="qk", qdrant_collection="c1"), 32
    )
    assert isinstance(server, FakeServerIndex)
    assert built == {"url": "https://q.example", "api_key": "qk", "collection": "c1", "dimensions": 32}
    # In prod the embedded index is refused: each Lambda environment would hold its own partial copy
    with pytest.raises(VectorIndexError, match="QDRANT_URL"):
        config.build_vector_index(Settings(agentmate_env="prod", jwt_secret=SECRET), 32)


def test_a_retrieval_uses_the_parts_it_is_given_and_builds_the_others_from_its_settings():
    embedder, index = HashingEmbedder(16), EmbeddedIndex()
    given = Retrieval(embedder=embedder, index=index)
    assert given.embedder() is embedder and given.vector_index() is index
    given.close()  # what it was given stays open: the owner closes it
    index.ensure_collection(16)
    assert index.count("acct", "ns") == 0
    index.close()
    built = Retrieval(settings=Settings(embedding_offline="hashing", vector_path=""))
    assert isinstance(built.embedder(), HashingEmbedder) and built.embedder().dimensions == 256
    assert isinstance(built.vector_index(), EmbeddedIndex) and isinstance(built.vector_index(), VectorIndex)
    assert built.vector_index() is built.vector_index()
    built.close()


def test_a_failed_build_is_not_cached(monkeypatch):
    attempts: list[int] = []

    def flaky(settings: Settings) -> HashingEmbedder:
        attempts.append(1)
        if len(attempts) == 1:
            raise EmbeddingError("endpoint not reachable yet")
        return HashingEmbedder(8)

    monkeypatch.setattr(config, "build_embedder", flaky)
    retrieval = Retrieval(settings=Settings(embedding_offline="hashing"))
    with pytest.raises(EmbeddingError):
        retrieval.embedder()
    assert retrieval.embedder().dimensions == 8 and len(attempts) == 2


def test_the_execution_environment_builds_one_retrieval():
    assert get_retrieval() is get_retrieval()
