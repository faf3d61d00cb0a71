"""The only place Logger and Metrics are created (POWERTOOLS_SERVICE_NAME comes from the template)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aws_lambda_powertools import Logger, Metrics

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentmate")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Agentmate")

logger = Logger()
metrics = Metrics()

F = TypeVar("F", bound=Callable[..., Any])

# EMF metrics in Lambda, and in the MCP container when AGENTMATE_EMF_METRICS=1 (it flushes after each tool call).
_IN_LAMBDA = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or os.environ.get("AGENTMATE_EMF_METRICS"))


def count(name: str, value: float = 1) -> None:
    """One business metric per meaningful event (EMF in Lambda; a no-op in the local runtime and tests)."""
    if _IN_LAMBDA:
        from aws_lambda_powertools.metrics import MetricUnit

        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def flush_metrics() -> None:
    """Publish the metrics an invocation recorded; nothing (and no warning) when it recorded none."""
    if _IN_LAMBDA and metrics.metric_set:
        metrics.flush_metrics()


def new_only(result: Any) -> float:
    """A create's metric counts new records, not replays (``Created.replay``)."""
    return 0 if getattr(result, "replay", False) else 1


def counted(name: str, value: Callable[[Any], float] = lambda _: 1) -> Callable[[F], F]:
    """The use case's business metric, emitted where the use case runs, so REST and MCP count alike."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            amount = value(result)
            if amount:
                count(name, amount)
            return result

        return cast(F, wrapper)

    return decorate
