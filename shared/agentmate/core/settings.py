"""Settings grouped by concern, each validated once per execution environment (a cached getter) and passed as a
value to the code that uses it. The groups that more than one layer reads live here, in the bottom layer:

- ``DatabaseSettings``: the application role's connection and pool (``core.db``).
- ``RetrievalSettings``: the embedder and the vector store (``retrieval``; ``llm`` falls back to its endpoint).
- ``HttpSettings``: what the two HTTP faces accept (``api`` for REST, ``mcp``).

A group that one lower layer owns lives with it: ``auth.settings.AuthSettings`` (JWT, login throttling),
``llm.settings.ModelSettings`` (the compiler and reviewer models), ``jobs.settings.JobSettings``,
``packages.limits.PackageSettings``, and knowledge's ``quality.settings.ReviewSettings`` and
``IndexSettings``. Environment variable names are spec/001's (``tests/unit/test_settings_env_names.py``).

Secrets may be given directly (``JWT_SECRET``) or as a Secrets Manager ARN (``JWT_SECRET_ARN``); the ARN is
resolved lazily on first use so functions that never touch a secret never import boto3, and its value is kept
for ``SECRET_TTL_S`` and then fetched again, so a rotated secret reaches a long-lived execution environment. A
SnapStart snapshot captures no secret value: the cache is emptied before the snapshot and after a restore
(``core.snapstart``).
"""

from __future__ import annotations

import sys
import threading
import time
from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentmate.core import snapstart

Environment = Literal["dev", "test", "prod"]


class EnvironmentSettings(BaseSettings):
    """The base of every group: the deployment's environment (``AGENTMATE_ENV``), read from the process
    environment only, case-insensitively, other variables ignored."""

    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    agentmate_env: Environment = "dev"


class DatabaseSettings(EnvironmentSettings):
    # Application role: subject to row-level security.
    database_url: str = "postgresql://agentmate_app@127.0.0.1:26432/agentmate"
    database_secret_arn: str | None = None
    db_pool_max_size: int = Field(default=8, ge=1, le=64)
    db_connect_timeout_s: float = 5.0

    def resolved_database_url(self) -> str:
        return secret(self.database_secret_arn) if self.database_secret_arn else self.database_url


class RetrievalSettings(EnvironmentSettings):
    # Embeddings. Empty base URL = the offline default embedder.
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    embedding_api_key_arn: str | None = None
    embedding_model: str = "text-embedding-v4"
    embedding_dimensions: int = Field(default=1024, ge=8, le=8192)
    embedding_offline: Literal["static", "hashing"] = "static"
    # How long a memory store's transaction waits for its overlapped embedding before it commits the entry with
    # its projection pending and finishes the indexing holding no pooled connection (issue 26).
    memory_embed_grace_ms: int = Field(default=150, ge=0, le=5000)
    # The vector store.
    qdrant_url: str = ""
    qdrant_api_key: str = ""
    qdrant_api_key_arn: str | None = None
    qdrant_collection: str = "agentmate_retrieval"
    # Embedded vector engine folder for the local runtime ("" = in memory).
    vector_path: str = ""

    def resolved_embedding_api_key(self) -> str:
        return secret(self.embedding_api_key_arn) if self.embedding_api_key_arn else self.embedding_api_key

    def resolved_qdrant_api_key(self) -> str:
        return secret(self.qdrant_api_key_arn) if self.qdrant_api_key_arn else self.qdrant_api_key


class HttpSettings(EnvironmentSettings):
    # Request bodies above this answer 413 before parsing (routes may raise it: agentmate.api.routing.max_body).
    max_request_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    # The MCP transport's Host/Origin allowlist (comma-separated; ``*`` for any port).
    mcp_allowed_hosts: str = "127.0.0.1:*,localhost:*,[::1]:*"
    mcp_allowed_origins: str = "http://127.0.0.1:*,http://localhost:*"


SECRET_TTL_S = 300.0
_secrets: dict[str, tuple[str, float]] = {}  # arn -> (value, monotonic time fetched)
_secrets_lock = threading.Lock()


def _clock() -> float:
    return time.monotonic()


def secret(arn: str) -> str:
    """A Secrets Manager secret's value, kept for ``SECRET_TTL_S`` per execution environment, then fetched again
    (a rotation reaches every environment within the TTL). Called on every request: a hit is a dict lookup."""
    now = _clock()
    cached = _secrets.get(arn)
    if cached is not None and now - cached[1] < SECRET_TTL_S:
        return cached[0]
    from aws_lambda_powertools.utilities import parameters

    # force_fetch: this cache is the only one, so a value is never older than its TTL here
    value = parameters.get_secret(arn, force_fetch=True)
    text = value if isinstance(value, str) else value.decode()
    with _secrets_lock:
        _secrets[arn] = (text, now)
    return text


@snapstart.before_snapshot
@snapstart.after_restore
def forget_secrets() -> None:
    """Drop every cached secret value (and powertools' copies and clients, if it was used): none is captured in
    a snapshot, and a restored environment fetches each again on first use."""
    with _secrets_lock:
        _secrets.clear()
    base = sys.modules.get("aws_lambda_powertools.utilities.parameters.base")
    if base is not None:
        base.clear_caches()


@lru_cache(maxsize=1)
def get_database_settings() -> DatabaseSettings:
    return DatabaseSettings()


@lru_cache(maxsize=1)
def get_retrieval_settings() -> RetrievalSettings:
    return RetrievalSettings()


@lru_cache(maxsize=1)
def get_http_settings() -> HttpSettings:
    return HttpSettings()
