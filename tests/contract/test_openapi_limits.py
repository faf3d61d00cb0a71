"""The OpenAPI states the per-account limits (issue 25 §1): every authenticated operation answers 429 with
``Retry-After``, and every creating operation a stored-volume quota guards answers 409 naming the quota."""

from __future__ import annotations

from typing import Any

import pytest

from agentmate.api.openapi_limits import QUOTA_ROUTES
from agentmate.core.limits.settings import LimitSettings
from infra import openapi


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return openapi.build()


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (m, p, op) for p, item in doc["paths"].items() for m, op in item.items() if m in openapi.HTTP_METHODS
    ]


def test_every_authenticated_operation_documents_the_429_with_retry_after(doc):
    missing = []
    for method, path, op in _operations(doc):
        if not op["security"]:
            continue
        refused = op["responses"].get("429")
        if (
            refused is None
            or "Retry-After" not in refused.get("headers", {})
            or ("LIMIT_REQUESTS_PER_MINUTE" not in refused["description"])
        ):
            missing.append(f"{method.upper()} {path}")
    assert not missing, missing
    todos = doc["paths"]["/api/todos"]["get"]["responses"]["429"]
    assert todos["content"]["application/problem+json"]["schema"] == {
        "$ref": "#/components/schemas/RateLimitProblem"
    }
    limit = doc["components"]["schemas"]["RateLimitProblem"]["allOf"][1]["properties"]["limit"]
    assert limit["enum"] == ["requests_per_minute", "concurrent_expensive_requests"]


def test_a_public_operation_is_not_said_to_be_refused_by_the_account_limits(doc):
    for _, _, op in _operations(doc):
        if not op["security"]:
            assert "LIMIT_REQUESTS_PER_MINUTE" not in op["responses"].get("429", {}).get("description", "")


def test_an_operations_own_429_keeps_its_meaning_and_gains_the_account_limits(doc):
    password = doc["paths"]["/api/auth/password"]["post"]["responses"]["429"]
    assert password["description"].startswith("Too many attempts")
    assert "LIMIT_REQUESTS_PER_MINUTE" in password["description"]
    assert "Retry-After" in password["headers"]


def test_every_quota_guarded_create_documents_the_409_naming_its_quota(doc):
    for (method, path), quotas in QUOTA_ROUTES.items():
        op = doc["paths"][path][method]  # a KeyError: the route was renamed; QUOTA_ROUTES must follow
        assert op["x-quotas"] == list(quotas)
        for quota in quotas:
            assert f"LIMIT_{quota.upper()}" in op["responses"]["409"]["description"]
    # Every stored-volume quota guards at least one route
    settings = {name for name in LimitSettings.model_fields if name.startswith("max_")}
    assert {q for quotas in QUOTA_ROUTES.values() for q in quotas} == settings
