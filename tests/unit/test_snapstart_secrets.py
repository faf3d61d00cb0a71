"""Secrets given as Secrets Manager ARNs (moto's in-process Secrets Manager, through powertools as in Lambda):
kept for their TTL, fetched again after it, never captured in a SnapStart snapshot, and fetched afresh after a
restore — so a rotation reaches every execution environment, restored or long-lived."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from agentmate.core import settings, snapstart


@pytest.fixture
def secrets_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "moto")  # moto's in-process service accepts any credentials
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "moto")
    settings.forget_secrets()
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")
    settings.forget_secrets()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(settings, "_clock", lambda: now[0])
    return now


def test_a_rotated_secret_is_fetched_again_once_its_ttl_is_over(secrets_manager, clock):
    arn = secrets_manager.create_secret(Name="db-url", SecretString="v1")["ARN"]
    assert settings.secret(arn) == "v1"
    # When the secret is rotated
    secrets_manager.put_secret_value(SecretId=arn, SecretString="v2")
    # Then the cached value serves until its TTL is over, and the new one after it
    clock[0] += settings.SECRET_TTL_S - 1
    assert settings.secret(arn) == "v1"
    clock[0] += 1
    assert settings.secret(arn) == "v2"


def test_no_secret_value_is_captured_in_a_snapshot_and_a_restore_fetches_the_current_one(
    secrets_manager, clock
):
    arn = secrets_manager.create_secret(Name="jwt", SecretString="before")["ARN"]
    # Given a secret read during init
    assert settings.secret(arn) == "before"
    # When the snapshot is taken, no value of it remains in memory (ours or powertools' cache)
    snapstart.run_before_snapshot()
    assert settings._secrets == {}
    from aws_lambda_powertools.utilities.parameters.constants import DEFAULT_PROVIDERS

    assert DEFAULT_PROVIDERS == {}
    # And a copy restored after a rotation, within what would have been the TTL, reads the new value
    secrets_manager.put_secret_value(SecretId=arn, SecretString="after")
    snapstart.run_after_restore()
    assert settings.secret(arn) == "after"


def test_the_database_url_resolves_its_arn_through_the_refreshing_cache(secrets_manager, clock):
    arn = secrets_manager.create_secret(Name="db", SecretString="postgresql://a@h/db")["ARN"]
    db = settings.DatabaseSettings(database_secret_arn=arn)
    assert db.resolved_database_url() == "postgresql://a@h/db"
    secrets_manager.put_secret_value(SecretId=arn, SecretString="postgresql://b@h/db")
    clock[0] += settings.SECRET_TTL_S
    assert db.resolved_database_url() == "postgresql://b@h/db"
