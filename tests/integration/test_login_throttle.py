"""Login protection (issue 8 item 3): failed logins are throttled per (email, client address) and per client
address — never per email alone — with state in Postgres, answering 429 problem+json with Retry-After;
registration is throttled per client address; an unknown email costs the same password check as a known one.
The client address is the socket peer (API Gateway's sourceIp in Lambda), never X-Forwarded-For."""

from __future__ import annotations

import importlib
import random
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from apigw import LambdaContext, http_event, parse_response
from starlette.testclient import TestClient

from agentmate.auth import security, throttle
from agentmate.auth.settings import get_auth_settings as get_settings

WRONG = "not the password at all"


def _address() -> str:
    return f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


@pytest.fixture
def from_address(app):
    """A client whose requests come from a socket address of its own (a fresh one per call)."""

    def make(address: str | None = None) -> TestClient:
        return TestClient(app, base_url="http://127.0.0.1:26001", client=(address or _address(), 40000))

    return make


def _login(client, email: str, password: str, **kwargs):
    return client.post("/api/auth/login", json={"email": email, "password": password}, **kwargs)


def _assert_throttled(r, max_retry_after: int = 60) -> None:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert 1 <= int(r.headers["retry-after"]) <= max_retry_after
    assert "retry in" in r.json()["detail"]


def test_five_failures_from_one_address_block_that_address_for_that_email_but_not_another_address(
    from_address, account
):
    attacker = from_address()
    # Given five wrong passwords for one account from one address
    for _ in range(5):
        assert _login(attacker, account.email, WRONG).status_code == 401
    # Then even the right password is refused from that address, with Retry-After
    _assert_throttled(_login(attacker, account.email, account.password))
    # While the account's owner, elsewhere, still logs in (never a lock-out per email alone)
    assert _login(from_address(), account.email, account.password).status_code == 200


def test_thirty_failures_from_one_address_block_it_for_every_email(from_address, account):
    attacker = from_address()
    # Given 30 failures spread over 30 different (unknown) emails from one address
    for i in range(30):
        assert _login(attacker, f"nobody-{i}-{uuid.uuid4().hex[:6]}@example.com", WRONG).status_code == 401
    # Then that address cannot try any email, even with a right password
    _assert_throttled(_login(attacker, account.email, account.password))
    # And another address is unaffected
    assert _login(from_address(), account.email, account.password).status_code == 200


def test_a_successful_login_resets_the_count_for_that_email_and_address(from_address, account):
    user = from_address()
    for _ in range(2):
        for _ in range(4):
            assert _login(user, account.email, WRONG).status_code == 401
        assert _login(user, account.email, account.password).status_code == 200


def test_x_forwarded_for_does_not_change_the_client_address(from_address, account):
    attacker = from_address()
    for i in range(5):
        spoofed = {"X-Forwarded-For": f"192.0.2.{i + 1}", "X-Real-IP": f"192.0.2.{i + 1}"}
        assert _login(attacker, account.email, WRONG, headers=spoofed).status_code == 401
    _assert_throttled(
        _login(attacker, account.email, account.password, headers={"X-Forwarded-For": "192.0.2.99"})
    )


def test_each_failure_after_a_block_doubles_it(from_address, account, owner_url):
    address = _address()
    attacker = from_address(address)
    bucket = throttle.login_buckets(get_settings(), account.email, address)[0].key
    for _ in range(5):
        _login(attacker, account.email, WRONG)
    first = int(_login(attacker, account.email, WRONG).headers["retry-after"])
    assert 50 <= first <= 60
    # When the block has passed (moved into the past) and the next try fails again
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE auth_throttle SET blocked_until = now() - interval '1 second' WHERE bucket = %s",
            (bucket,),
        )
    assert _login(attacker, account.email, WRONG).status_code == 401
    # Then the next block is twice as long
    second = int(_login(attacker, account.email, account.password).headers["retry-after"])
    assert 110 <= second <= 120


def test_throttle_rows_hold_no_email_or_address_in_clear(from_address, account, owner_url):
    address = _address()
    _login(from_address(address), account.email, WRONG)
    with psycopg.connect(owner_url) as conn:
        buckets = [r[0] for r in conn.execute("SELECT bucket FROM auth_throttle")]
    assert buckets and not [b for b in buckets if account.email in b or address in b]


def test_an_unknown_email_is_checked_against_the_dummy_hash(from_address, monkeypatch):
    checked: list[str] = []
    real = security.verify_password
    monkeypatch.setattr(
        security, "verify_password", lambda pw, stored: checked.append(stored) or real(pw, stored)
    )
    r = _login(from_address(), f"nobody-{uuid.uuid4().hex[:8]}@example.com", WRONG)
    assert r.status_code == 401
    assert checked == [security.DUMMY_PASSWORD_HASH]


def test_a_wrong_password_when_changing_it_counts_as_a_failed_login(from_address, account):
    client = from_address()
    body = {"current_password": WRONG, "new_password": "a whole new passphrase"}
    for _ in range(5):
        assert client.post("/api/auth/password", json=body, headers=account.jwt_headers).status_code == 400
    _assert_throttled(
        client.post(
            "/api/auth/password",
            headers=account.jwt_headers,
            json={**body, "current_password": account.password},
        )
    )


# --- registration ---------------------------------------------------------------------------------------------


@pytest.fixture
def registrations_per_address(monkeypatch) -> Iterator[int]:
    monkeypatch.setenv("REGISTRATIONS_PER_ADDRESS", "3")
    get_settings.cache_clear()
    yield 3
    monkeypatch.undo()
    get_settings.cache_clear()


def test_registration_is_throttled_per_client_address(from_address, registrations_per_address):
    client = from_address()
    for _ in range(registrations_per_address):
        r = client.post(
            "/api/auth/register",
            json={"email": f"r-{uuid.uuid4().hex[:10]}@example.com", "password": "correct horse battery"},
        )
        assert r.status_code == 201, r.text
    _assert_throttled(
        client.post(
            "/api/auth/register",
            json={"email": f"r-{uuid.uuid4().hex[:10]}@example.com", "password": "correct horse battery"},
        )
    )
    # Another address registers
    assert (
        from_address()
        .post(
            "/api/auth/register",
            json={"email": f"r-{uuid.uuid4().hex[:10]}@example.com", "password": "correct horse battery"},
        )
        .status_code
        == 201
    )


# --- Lambda: the address is API Gateway's sourceIp -------------------------------------------------------------


def test_through_the_lambda_handler_the_address_is_the_events_source_ip(account):
    handler = importlib.import_module("functions.auth.app").handler

    def login(source_ip: str, password: str):
        event = http_event(
            "POST",
            "/api/auth/login",
            json_body={"email": account.email, "password": password},
            headers={"X-Forwarded-For": _address()},
            source_ip=source_ip,
        )
        return parse_response(handler(event, LambdaContext()))

    attacker, owner = _address(), _address()
    for _ in range(5):
        assert login(attacker, WRONG).status_code == 401
    throttled = login(attacker, account.password)
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) >= 1
    assert login(owner, account.password).status_code == 200
