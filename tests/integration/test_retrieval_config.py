"""Which embedder and vector index the execution environment builds from Settings, and the test override hooks."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentmate.core.settings import Settings
from agentmate.retrieval import config, vector_index
from agentmate.retrieval.embedders import HashingEmbedder, OpenAIEmbedder, StaticModelEmbedder
from agentmate.retrieval.vector_index import EmbeddedIndex, VectorIndexError

SECRET = "s" * 40


@pytest.fixture
def restore() -> Iterator[None]:
    yield
    config.set_embedder(None)
    config.set_vector_index(None)


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

    monkeypatch.setattr(vector_index, "QdrantServerIndex", FakeServerIndex)
    server = config.build_vector_index(
        Settings(qdrant_url="https://q.example", qdrant_api_key="qk", qdrant_collection="c1"), 32
    )
    assert isinstance(server, FakeServerIndex)
    assert built == {"url": "https://q.example", "api_key": "qk", "collection": "c1", "dimensions": 32}
    # In prod the embedded index is refused: each Lambda environment would hold its own partial copy
    with pytest.raises(VectorIndexError, match="QDRANT_URL"):
        config.build_vector_index(Settings(agentmate_env="prod", jwt_secret=SECRET), 32)


def test_overrides_replace_and_restore_the_configured_parts(restore):
    configured = config.get_embedder()
    replacement = HashingEmbedder(16)
    config.set_embedder(replacement)
    assert config.get_embedder() is replacement
    config.set_embedder(None)
    assert config.get_embedder() is configured
    sentinel = object()
    config.set_vector_index(sentinel)
    assert config.get_vector_index() is sentinel
