"""Platform settings, validated once per execution environment.

Secrets may be given directly (``JWT_SECRET``) or as a Secrets Manager ARN (``JWT_SECRET_ARN``); the ARN
is resolved lazily on first use so functions that never touch a secret never import boto3. There is no default
signing secret: the local runtime generates a random one on first start and keeps it in ``.local/jwt-secret``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MIN_JWT_SECRET_CHARS = 32


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    agentmate_env: Literal["dev", "test", "prod"] = "dev"

    # Application role: subject to row-level security.
    database_url: str = "postgresql://agentmate_app@127.0.0.1:26432/agentmate"
    database_secret_arn: str | None = None
    db_pool_max_size: int = Field(default=8, ge=1, le=64)
    db_connect_timeout_s: float = 5.0

    jwt_secret: str = ""
    jwt_secret_arn: str | None = None
    jwt_ttl_hours: int = Field(default=72, ge=1, le=24 * 30)

    # Login protection (docs/decisions.md "Login throttling"): failed logins per (email, client address) and per
    # client address within the window, then a block that starts at the base and doubles with each further
    # failure; registrations per client address within their window.
    login_failures_per_email_address: int = Field(default=5, ge=1)
    login_failures_per_address: int = Field(default=30, ge=1)
    login_failure_window_s: int = Field(default=15 * 60, ge=1)
    login_backoff_base_s: int = Field(default=60, ge=1)
    login_backoff_max_s: int = Field(default=60 * 60, ge=1)
    registrations_per_address: int = Field(default=20, ge=1)
    registration_window_s: int = Field(default=60 * 60, ge=1)

    # Retrieval (embeddings + vectors). Empty base URL = the offline default embedder.
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    embedding_api_key_arn: str | None = None
    embedding_model: str = "text-embedding-v4"
    embedding_dimensions: int = Field(default=1024, ge=8, le=8192)
    embedding_offline: Literal["static", "hashing"] = "static"
    qdrant_url: str = ""
    qdrant_api_key: str = ""
    qdrant_api_key_arn: str | None = None
    qdrant_collection: str = "agentmate_retrieval"
    # Embedded vector engine folder for the local runtime ("" = in memory).
    vector_path: str = ""

    # Request bodies above this answer 413 before parsing (routes may raise it: agentmate.api.routing.max_body).
    max_request_body_bytes: int = Field(default=1024 * 1024, ge=1024)

    # Chat models (spec/001 "Model configuration"): the wiki compiler and its reviewer, OpenAI-compatible
    # /chat/completions. An empty base URL or key falls back to the embedding endpoint and key (agentmate.llm).
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

    mcp_allowed_hosts: str = "127.0.0.1:*,localhost:*,[::1]:*"
    mcp_allowed_origins: str = "http://127.0.0.1:*,http://localhost:*"

    @model_validator(mode="after")
    def _require_signing_secret(self) -> Settings:
        if not self.jwt_secret_arn and len(self.jwt_secret) < MIN_JWT_SECRET_CHARS:
            raise ValueError(
                f"JWT_SECRET (at least {MIN_JWT_SECRET_CHARS} random characters) or JWT_SECRET_ARN "
                "must be set; the local runtime (python -m infra.devserver) generates one in "
                ".local/jwt-secret"
            )
        return self

    def resolved_jwt_secret(self) -> str:
        return _secret(self.jwt_secret_arn) if self.jwt_secret_arn else self.jwt_secret

    def resolved_database_url(self) -> str:
        return _secret(self.database_secret_arn) if self.database_secret_arn else self.database_url

    def resolved_embedding_api_key(self) -> str:
        return _secret(self.embedding_api_key_arn) if self.embedding_api_key_arn else self.embedding_api_key

    def resolved_compiler_api_key(self) -> str:
        return _secret(self.compiler_api_key_arn) if self.compiler_api_key_arn else self.compiler_api_key

    def resolved_reviewer_api_key(self) -> str:
        return _secret(self.reviewer_api_key_arn) if self.reviewer_api_key_arn else self.reviewer_api_key

    def resolved_qdrant_api_key(self) -> str:
        return _secret(self.qdrant_api_key_arn) if self.qdrant_api_key_arn else self.qdrant_api_key


@lru_cache(maxsize=16)
def _secret(arn: str) -> str:
    from aws_lambda_powertools.utilities import parameters

    value = parameters.get_secret(arn, max_age=300)
    return value if isinstance(value, str) else value.decode()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
