"""The local runtime signs JWTs with a random secret it generates on first start and keeps in .local/."""

from __future__ import annotations

import stat

import pytest

from infra.devserver import local_jwt_secret


def test_the_first_start_generates_a_private_random_secret_that_later_starts_reuse(tmp_path):
    path = tmp_path / ".local" / "jwt-secret"
    first = local_jwt_secret(path)
    assert len(first) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert local_jwt_secret(path) == first
    # Another clone gets its own
    assert local_jwt_secret(tmp_path / "other" / "jwt-secret") != first


def test_a_secret_file_readable_by_others_is_made_private(tmp_path):
    path = tmp_path / "jwt-secret"
    path.write_text("k" * 40 + "\n")
    path.chmod(0o644)
    assert local_jwt_secret(path) == "k" * 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_file_without_a_usable_secret_is_refused_rather_than_used(tmp_path):
    path = tmp_path / "jwt-secret"
    path.write_text("short\n")
    with pytest.raises(SystemExit, match="delete it"):
        local_jwt_secret(path)
