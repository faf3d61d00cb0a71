"""The language models (spec/001 "Model configuration"): the wiki compiler and its reviewer, each configured
here and only here, OpenAI-compatible ``/chat/completions``. Validated once per execution environment
(``get_model_settings``) and passed as a value.

An empty base URL or key falls back to the embedding endpoint and key (spec/001): the three ``EMBEDDING_*``
fields below read the same variables as ``core.settings.RetrievalSettings``, as the fall-back of both roles.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field

from agentmate.core.settings import EnvironmentSettings, secret


class ModelSettings(EnvironmentSettings):
    compiler_base_url: str = ""
    compiler_api_key: str = ""
    compiler_api_key_arn: str | None = None
    compiler_model: str = "qwen3.7-plus"
    compiler_temperature: float = Field(default=0.2, ge=0, le=2)
    compiler_max_tokens: int = Field(default=32768, ge=1, le=1_000_000)
    compiler_timeout_seconds: float = Field(default=900, gt=0, le=3600)
    compiler_input_micros_per_1k_tokens: int = Field(default=0, ge=0)
    compiler_output_micros_per_1k_tokens: int = Field(default=0, ge=0)

    reviewer_base_url: str = ""
    reviewer_api_key: str = ""
    reviewer_api_key_arn: str | None = None
    reviewer_model: str = "qwen-max"
    reviewer_temperature: float = Field(default=0, ge=0, le=2)
    # One reviewer call. A review reply is a short findings array, not an open-ended wiki.
    reviewer_timeout_seconds: float = Field(default=180, ge=10, le=900)
    reviewer_max_tokens: int = Field(default=4096, ge=256, le=200_000)

    # The fall-back endpoint of both roles (the embedding endpoint).
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    embedding_api_key_arn: str | None = None

    def resolved_compiler_api_key(self) -> str:
        return secret(self.compiler_api_key_arn) if self.compiler_api_key_arn else self.compiler_api_key

    def resolved_reviewer_api_key(self) -> str:
        return secret(self.reviewer_api_key_arn) if self.reviewer_api_key_arn else self.reviewer_api_key

    def resolved_embedding_api_key(self) -> str:
        return secret(self.embedding_api_key_arn) if self.embedding_api_key_arn else self.embedding_api_key


@lru_cache(maxsize=1)
def get_model_settings() -> ModelSettings:
    return ModelSettings()
