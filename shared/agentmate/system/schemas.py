"""Response models of the system endpoints."""

from __future__ import annotations

from pydantic import BaseModel


class Health(BaseModel):
    status: str
    service: str
    version: str
    schema_url: str
    openapi: str
    mcp_endpoints: list[str]
