"""Settings are grouped by concern, but every environment variable read before the regrouping is still read
(spec/001 fixes the names; deployments and tests set them)."""

from __future__ import annotations

from pydantic_settings import BaseSettings

from agentmate.auth.oauth.settings import OAuthSettings
from agentmate.auth.settings import AuthSettings
from agentmate.core.limits.settings import LimitSettings
from agentmate.core.settings import DatabaseSettings, HttpSettings, RetrievalSettings
from agentmate.jobs.settings import JobSettings
from agentmate.knowledge.quality.settings import ReviewSettings
from agentmate.knowledge.search.index import IndexSettings
from agentmate.llm.settings import ModelSettings
from agentmate.packages.limits import PackageSettings
from agentmate.portability.settings import PortabilitySettings

GROUPS: tuple[type[BaseSettings], ...] = (
    DatabaseSettings,
    RetrievalSettings,
    HttpSettings,
    AuthSettings,
    OAuthSettings,
    ModelSettings,
    JobSettings,
    PackageSettings,
    ReviewSettings,
    IndexSettings,
    PortabilitySettings,
    LimitSettings,
)

# Taken from the settings classes before the regrouping (core.settings.Settings, JobSettings, PackageSettings,
# ReviewSettings, IndexSettings): every name one of them accepted.
BEFORE = {
    "AGENTMATE_ENV",
    "COMPILER_API_KEY",
    "COMPILER_API_KEY_ARN",
    "COMPILER_BASE_URL",
    "COMPILER_INPUT_MICROS_PER_1K_TOKENS",
    "COMPILER_MAX_TOKENS",
    "COMPILER_MODEL",
    "COMPILER_OUTPUT_MICROS_PER_1K_TOKENS",
    "COMPILER_TEMPERATURE",
    "COMPILER_TIMEOUT_SECONDS",
    "DATABASE_SECRET_ARN",
    "DATABASE_URL",
    "DB_CONNECT_TIMEOUT_S",
    "DB_POOL_MAX_SIZE",
    "EMBEDDING_API_KEY",
    "EMBEDDING_API_KEY_ARN",
    "EMBEDDING_BASE_URL",
    "EMBEDDING_DIMENSIONS",
    "EMBEDDING_MODEL",
    "EMBEDDING_OFFLINE",
    "JOBS_FINISH_MARGIN_SECONDS",
    "JOBS_FUNCTION_TIMEOUT_SECONDS",
    "JOBS_MIN_LEASE_SECONDS",
    "JOBS_QUEUE_URL",
    "JOBS_SWEEP_BATCH",
    "JOBS_SWEEP_GRACE_SECONDS",
    "JOBS_UNREGISTERED_AFTER_SECONDS",
    "JWT_SECRET",
    "JWT_SECRET_ARN",
    "JWT_TTL_HOURS",
    "KNOWLEDGE_INDEX_INLINE_BUDGET_SECONDS",
    "LOGIN_BACKOFF_BASE_S",
    "LOGIN_BACKOFF_MAX_S",
    "LOGIN_FAILURES_PER_ADDRESS",
    "LOGIN_FAILURES_PER_EMAIL_ADDRESS",
    "LOGIN_FAILURE_WINDOW_S",
    "MAX_REQUEST_BODY_BYTES",
    "MCP_ALLOWED_HOSTS",
    "MCP_ALLOWED_ORIGINS",
    "PACKAGES_ALLOWED_HOSTS",
    "PACKAGES_ALLOWED_PRIVATE_NETWORKS",
    "PACKAGES_ALLOWED_SCHEMES",
    "PACKAGES_ARCHIVE_PROVIDERS",
    "PACKAGES_GIT_TOKENS",
    "PACKAGES_MAX_ARCHIVE_BYTES",
    "PACKAGES_MAX_ARCHIVE_MEMBERS",
    "PACKAGES_MAX_DOWNLOAD_BYTES",
    "PACKAGES_SYNC_BUDGET_S",
    "QDRANT_API_KEY",
    "QDRANT_API_KEY_ARN",
    "QDRANT_COLLECTION",
    "QDRANT_URL",
    "REGISTRATIONS_PER_ADDRESS",
    "REGISTRATION_WINDOW_S",
    "REVIEWER_API_KEY",
    "REVIEWER_API_KEY_ARN",
    "REVIEWER_BASE_URL",
    "REVIEWER_MAX_TOKENS",
    "REVIEWER_MODEL",
    "REVIEWER_TEMPERATURE",
    "REVIEWER_TIMEOUT_SECONDS",
    "VECTOR_PATH",
    "WIKI_REVIEW_BUDGET_SECONDS",
    "WIKI_REVIEW_MAX_PAGES",
    "WIKI_WORKER_CONCURRENCY",
    "WIKI_WORKER_HEARTBEAT_SECONDS",
    "WIKI_WORKER_MAX_RETRY_BACKOFF_SECONDS",
    "WIKI_WORKER_POLL_SECONDS",
    "WIKI_WORKER_RETRY_BACKOFF_SECONDS",
}


# Read since, each by the issue that added it.
ADDED = {
    # issue 24: OAuth
    "OAUTH_ISSUER_URL",
    "OAUTH_ACCESS_TOKEN_TTL_S",
    "OAUTH_REFRESH_TOKEN_TTL_S",
    "OAUTH_CODE_TTL_S",
    "OAUTH_REQUEST_TTL_S",
    "OAUTH_DEVICE_CODE_TTL_S",
    "OAUTH_DEVICE_INTERVAL_S",
    "OAUTH_USER_CODE_FAILURES_PER_ADDRESS",
    "OAUTH_USER_CODE_WINDOW_S",
    "OAUTH_REGISTRATIONS_PER_ADDRESS",
    "OAUTH_REGISTRATION_WINDOW_S",
    "OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS",
    "OAUTH_CIMD_CA_BUNDLE",
    "OAUTH_CIMD_MAX_BYTES",
    "OAUTH_CIMD_TIMEOUT_S",
    "OAUTH_CIMD_CACHE_S",
    # issue 25: account export and import
    "ACCOUNT_ARCHIVE_BUCKET",
    "ACCOUNT_ARCHIVE_DIR",
    "ACCOUNT_ARCHIVE_URL_TTL_S",
    "ACCOUNT_ARCHIVE_MAX_BYTES",
    "ACCOUNT_ARCHIVE_MAX_MEMBERS",
    "ACCOUNT_ARCHIVE_MAX_MEMBER_BYTES",
    "ACCOUNT_ARCHIVE_MAX_LINE_BYTES",
    # issue 26: a memory store's transaction waits this long for its overlapped embedding
    "MEMORY_EMBED_GRACE_MS",
    # issue 25: per-account limits
    "LIMIT_REQUESTS_PER_MINUTE",
    "LIMIT_REQUEST_BURST",
    "LIMIT_CONCURRENT_EXPENSIVE",
    "LIMIT_EXPENSIVE_LEASE_S",
    "LIMIT_RUNNING_JOBS",
    "LIMIT_MAX_MEMORIES",
    "LIMIT_MAX_WORKING_ITEMS",
    "LIMIT_MAX_PACKAGE_BYTES",
    "LIMIT_MAX_SOURCES",
    "LIMIT_MAX_BUILDS_PER_DAY",
    "LIMIT_CONCURRENT_PER_CREDENTIAL",
    "LIMIT_REFUSAL_HOLD_MS",
}


def _env_names(group: type[BaseSettings]) -> set[str]:
    prefix = group.model_config.get("env_prefix", "")
    names = set()
    for field, info in group.model_fields.items():
        assert info.alias is None and info.validation_alias is None, f"{group.__name__}.{field} is aliased"
        names.add(f"{prefix}{field}".upper())
    return names


def test_every_environment_variable_read_before_the_regrouping_is_still_read():
    read = set().union(*(_env_names(g) for g in GROUPS))
    assert BEFORE - read == set()


def test_no_group_reads_an_environment_variable_nobody_listed():
    read = set().union(*(_env_names(g) for g in GROUPS))
    assert read - BEFORE == ADDED


def test_the_compiler_and_the_reviewer_are_configured_in_one_group():
    for group in GROUPS:
        if group is not ModelSettings:
            assert not {n for n in _env_names(group) if n.startswith(("COMPILER_", "REVIEWER_"))}, group
