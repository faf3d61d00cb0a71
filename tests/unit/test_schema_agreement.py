"""Server and OpenAPI agree on values schemathesis found disputed: JSON Schema's integer includes 17.0, a strict
boolean or integer refuses true/0 in its place, format: email includes the special-use .test domain, and an
expense amount's number form is a multiple of 0.01 within numeric(12,2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentmate.auth.schemas import Credentials
from agentmate.context.schemas import PackRequest
from agentmate.expenses.schemas import ExpenseCreate
from agentmate.skills.search.schemas import SkillSearchRequest


def test_integral_numbers_are_integers() -> None:
    assert PackRequest.model_validate_json('{"task": "t", "top_k": 11.0, "max_chars": 600.0}').top_k == 11
    for bad in ('"top_k": 11.5', '"top_k": true', '"top_k": "11"', '"max_chars": false', '"max_chars": true'):
        with pytest.raises(ValidationError):
            PackRequest.model_validate_json('{"task": "t", ' + bad + "}")


def test_strict_boolean() -> None:
    with pytest.raises(ValidationError):
        SkillSearchRequest.model_validate_json('{"query": "q", "include_content": 0}')


def test_special_use_test_domain_is_an_email() -> None:
    assert Credentials(email="Someone@Example.TEST", password="x" * 8).email == "Someone@example.test"
    for bad in ("no-at-sign", "a@b", "a@localhost.local"):
        with pytest.raises(ValidationError):
            Credentials(email=bad, password="x" * 8)


def test_amount_number_schema_matches_storage() -> None:
    number = next(
        s
        for s in ExpenseCreate.model_json_schema()["properties"]["amount"]["anyOf"]
        if s.get("type") == "number"
    )
    assert (number["minimum"], number["maximum"], number["multipleOf"]) == (0.01, 9999999999.99, 0.01)
