"""Reviewer independence (spec/001): one comparison of model names decides both the label a compile stores on its
build and the refusal of a same-model review, so a build is never labelled ``cross_provider`` and then refused as
self-review; and every compile whose reviewer is not ``cross_provider`` warns, naming the class and the fix."""

from __future__ import annotations

from uuid import UUID

import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict
from agentmate.core.principal import Principal
from agentmate.knowledge.quality import review_service
from agentmate.knowledge.wiki import service as wiki
from agentmate.knowledge.wiki.schemas import CompileRequest
from agentmate.llm import ChatConfig, independence, same_model
from agentmate.llm.settings import ModelSettings
from tests.integration.wiki.corpus import documents, make_source, run


def _settings(fake, *, compiler_model: str, reviewer_url: str, reviewer_model: str) -> ModelSettings:
    return ModelSettings(
        jwt_secret="x" * 40,
        compiler_base_url=fake.base_url,
        compiler_model=compiler_model,
        reviewer_base_url=reviewer_url,
        reviewer_model=reviewer_model,
        embedding_base_url="",
    )


def _config(url: str, model: str) -> ChatConfig:
    return ChatConfig(base_url=url, api_key="", model=model)


def test_model_names_compare_without_case_or_padding_in_the_one_comparison():
    assert same_model("Qwen-Max", " qwen-max ") and same_model("DEEPSEEK-V4-PRO", "deepseek-v4-pro")
    assert not same_model("qwen-max", "qwen-plus") and not same_model(None, "qwen-max")
    # independence() uses it: the same model behind two hosts is same_model, whatever the case
    a, b = _config("https://a.example/v1", "Qwen-Max"), _config("https://b.example/v1", "qwen-max")
    assert independence(a, b) == "same_model"
    assert independence(a, _config("https://b.example/v1", "deepseek-v4-pro")) == "cross_provider"


def test_a_build_whose_reviewer_differs_only_in_case_is_labelled_same_model_and_its_review_refused(
    actor, fake, account
):
    # Given a compiler "Fake-Compiler" and a reviewer "fake-compiler" on another host
    settings = _settings(
        fake,
        compiler_model="Fake-Compiler",
        reviewer_url="https://reviewer.example/v1",
        reviewer_model="fake-compiler",
    )
    src = make_source(actor, "indep-case", documents(2))
    # When a build is compiled
    queued = wiki.compile_source(get_database(), actor, CompileRequest(source_id=src), settings=settings)
    build = queued.result.build
    # Then it is labelled same_model, and the compile says so
    assert build.reviewer_independence == "same_model"
    assert any("reviewer independence is same_model" in w for w in queued.result.warnings)
    assert run(actor, fake, build.id, model="Fake-Compiler").status == "succeeded"
    # And a review of it is refused as self-review, agreeing with the label
    principal = Principal(UUID(account.account_id), UUID(account.user_id), "jwt")
    with pytest.raises(Conflict) as err:
        review_service.request_review(get_database(), principal, build.id, settings=settings)
    assert "self-review is refused" in err.value.detail


@pytest.mark.parametrize(
    ("reviewer_url", "reviewer_model", "expected"),
    [
        ("https://reviewer.example/v1", "other-reviewer", "cross_provider"),
        (None, "other-reviewer", "same_provider"),  # None: the compiler's own host
        ("https://reviewer.example/v1", "fake-compiler", "same_model"),
        ("", "other-reviewer", "unavailable"),  # no reviewer endpoint at all
    ],
)
def test_a_compile_warns_when_reviewer_independence_is_not_cross_provider(
    actor, fake, reviewer_url, reviewer_model, expected
):
    # Given a reviewer of each independence class
    url = fake.base_url.replace("/v1", "/other") if reviewer_url is None else reviewer_url
    settings = _settings(
        fake, compiler_model="fake-compiler", reviewer_url=url, reviewer_model=reviewer_model
    )
    src = make_source(actor, f"indep-{expected}", documents(1))
    # When a compile is requested
    result = wiki.compile_source(
        get_database(), actor, CompileRequest(source_id=src), settings=settings
    ).result
    # Then the build records the class; the review warning is always there, and a second warning names the
    # class and the fix unless the reviewer is cross_provider
    assert result.build.reviewer_independence == expected
    assert result.warnings[0] == wiki.REVIEW_WARNING
    extra = [w for w in result.warnings if w.startswith("reviewer independence is")]
    if expected == "cross_provider":
        assert extra == []
    else:
        assert extra == [
            f"reviewer independence is {expected}: point REVIEWER_BASE_URL and REVIEWER_MODEL at a "
            "different provider than the compiler for a cross_provider reviewer"
        ]
