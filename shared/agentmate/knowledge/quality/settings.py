"""Review settings: how much one wiki review covers. The reviewer's endpoint, model, call timeout and reply size
are the language models' (``agentmate.llm.settings.ModelSettings``, REVIEWER_*). Validated once per execution
environment."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ReviewSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # At most this many pages per review, most-cited first (prior-art: AGENTMATE_WIKI_REVIEW_MAX_PAGES, 20).
    wiki_review_max_pages: int = Field(default=20, ge=1, le=500)
    # One review job's whole budget: it must fit one worker invocation with the queue's finish margin (900 s
    # Lambda - 60 s), so the job is never refused for time; what does not fit is reported as not reviewed.
    wiki_review_budget_seconds: float = Field(default=780, ge=60, le=3600)


@lru_cache(maxsize=1)
def get_review_settings() -> ReviewSettings:
    return ReviewSettings()
