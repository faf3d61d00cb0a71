"""Settings refuse a missing or short JWT secret in every environment: there is no placeholder to fall back on
(the local runtime generates its own secret in .local/, tests/unit/test_local_secret.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentmate.auth.settings import AuthSettings as Settings

STRONG = "s" * 32


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    # The test session exports AGENTMATE_ENV/JWT_SECRET; each test here states its own.
    for name in ("AGENTMATE_ENV", "JWT_SECRET", "JWT_SECRET_ARN"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("env", ["dev", "test", "prod"])
def test_leaving_the_secret_unset_is_refused_in_every_environment(env):
    with pytest.raises(ValidationError, match="JWT_SECRET"):
        Settings(agentmate_env=env)


def test_the_environment_variables_are_checked_the_same_way(monkeypatch):
    monkeypatch.setenv("AGENTMATE_ENV", "prod")
    with pytest.raises(ValidationError, match="JWT_SECRET"):
        Settings()
    monkeypatch.setenv("JWT_SECRET", STRONG)
    assert Settings().resolved_jwt_secret() == STRONG


@pytest.mark.parametrize("env", ["dev", "prod"])
@pytest.mark.parametrize("secret", ["", "short", "x" * 31])
def test_a_secret_shorter_than_32_characters_is_refused(env, secret):
    with pytest.raises(ValidationError, match="at least 32 random characters"):
        Settings(agentmate_env=env, jwt_secret=secret)


def test_a_strong_secret_is_accepted_in_prod():
    settings = Settings(agentmate_env="prod", jwt_secret=STRONG)
    assert settings.resolved_jwt_secret() == STRONG


def test_a_secret_arn_is_accepted_in_prod_without_being_resolved_at_construction():
    # Constructing must not call Secrets Manager: the ARN is resolved lazily on first use.
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:agentmate-jwt-AbCdEf"
    settings = Settings(agentmate_env="prod", jwt_secret_arn=arn)
    assert settings.jwt_secret_arn == arn and settings.jwt_secret == ""


def test_an_unknown_environment_name_is_refused():
    with pytest.raises(ValidationError, match="agentmate_env"):
        Settings(agentmate_env="production", jwt_secret=STRONG)


def test_login_protection_defaults_are_the_documented_ones():
    s = Settings(jwt_secret=STRONG)
    assert (s.login_failures_per_email_address, s.login_failures_per_address, s.login_failure_window_s) == (
        5,
        30,
        900,
    )
