"""The only place Logger and Metrics are created (POWERTOOLS_SERVICE_NAME comes from the template)."""

from __future__ import annotations

import os

from aws_lambda_powertools import Logger, Metrics

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentmate")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Agentmate")

logger = Logger()
metrics = Metrics()

_IN_LAMBDA = bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


def count(name: str, value: float = 1) -> None:
    """One business metric per meaningful event (EMF in Lambda; a no-op in the local runtime and tests)."""
    if _IN_LAMBDA:
        from aws_lambda_powertools.metrics import MetricUnit

        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


def flush_metrics() -> None:
    """Publish the metrics an invocation recorded; nothing (and no warning) when it recorded none."""
    if _IN_LAMBDA and metrics.metric_set:
        metrics.flush_metrics()
