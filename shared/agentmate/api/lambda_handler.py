"""Wraps a route group's app once per execution environment in Mangum plus the powertools decorators."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from fastapi import FastAPI
from mangum import Mangum

from agentmate.core.observability import logger, metrics

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def make_handler(app: FastAPI) -> Handler:
    asgi = Mangum(app, lifespan="off", api_gateway_base_path="/")

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return asgi(event, context)

    return handler
