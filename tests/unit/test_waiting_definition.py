"""The usage report counts rows waiting for their vector with retrieval's own definition (core may not import
retrieval, so the grace for a ``pending`` row is written twice): the two must agree."""

from agentmate.core.limits import repository as limits_repo
from agentmate.retrieval import repository as retrieval_repo


def test_the_usage_report_and_retrieval_agree_on_when_a_pending_row_waits() -> None:
    assert limits_repo.STALE_PENDING_SECONDS == retrieval_repo.STALE_PENDING_SECONDS
