"""Password hashing: the dummy hash an unknown email is verified against costs what a real one does."""

from __future__ import annotations

from agentmate.auth import security


def test_the_dummy_hash_uses_the_current_scrypt_parameters():
    # Same algorithm, cost, block size, parallelism and digest length as a freshly made hash: same work.
    real = security.hash_password("correct horse battery").split("$")
    dummy = security.DUMMY_PASSWORD_HASH.split("$")
    assert dummy[:4] == real[:4]
    assert len(dummy[5]) == len(real[5])


def test_no_password_matches_the_dummy_hash_by_accident():
    assert not security.verify_password("", security.DUMMY_PASSWORD_HASH)
    assert not security.verify_password("correct horse battery", security.DUMMY_PASSWORD_HASH)


def test_a_problems_extra_members_never_replace_its_core_members() -> None:
    from agentmate.api.errors import problem_body

    body = problem_body(
        409, "Conflict", "not activatable", extra={"status": "failed", "title": "x", "reason": "r"}
    )
    assert (body["status"], body["title"], body["reason"]) == (409, "Conflict", "r")
