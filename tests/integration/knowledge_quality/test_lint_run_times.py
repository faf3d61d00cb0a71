"""A lint run's times (issue 23): it finishes after it starts, on the stored run, in the list and on reread."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import get_database
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.knowledge.quality import lint_service
from tests.integration.knowledge_quality.wikibuilds import PageSpec, actor_of, make_build, make_source, push


def test_a_lint_run_finishes_no_earlier_than_it_started(account):
    # Given a source with an active build
    principal = Principal(UUID(account.account_id), UUID(account.user_id), "jwt")
    actor = actor_of(account)
    source = make_source(actor, "timed-kb")
    rev = push(actor, source, {"docs/a.md": "# A\n\nAlpha.\n"})
    make_build(
        actor,
        source,
        rev,
        [
            PageSpec("wiki/index.md", "index", links=[("wiki/a.md", "references")]),
            PageSpec("wiki/a.md", "summary", cites=["docs/a.md"]),
        ],
    )
    db = get_database()
    # When it is linted
    run = lint_service.lint_active_wiki(db, principal, source).run
    # Then the run finished at or after its start, as stored and as read back
    assert run.started_at <= run.finished_at
    again = lint_service.get_run(db, principal, run.id).run
    listed = lint_service.list_runs(db, principal, PageParams(limit=10), source).items
    assert (again.started_at, again.finished_at) == (run.started_at, run.finished_at)
    assert [(r.started_at <= r.finished_at) for r in listed] == [True]
