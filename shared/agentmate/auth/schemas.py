from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, EmailStr, Field, WithJsonSchema

from agentmate.core.scopes import SCOPES

ScopeName = str


class Credentials(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: EmailStr
    password: str = Field(min_length=8, max_length=256)


class Registered(BaseModel):
    user_id: UUID
    account_id: UUID
    email: str


class Token(BaseModel):
    token: str
    token_type: str = "bearer"
    expires_at: datetime


class Me(BaseModel):
    user_id: UUID
    account_id: UUID
    email: str
    role: str
    auth: str = Field(description="jwt or api_key")
    key_id: UUID | None = None
    scopes: list[str] = Field(description="The key's scopes; empty means full access")


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    current_password: str = Field(min_length=1, max_length=256)
    new_password: str = Field(min_length=8, max_length=256)


class AccountDeletion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    password: str = Field(min_length=1, max_length=256, description="The account's password, re-entered")


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    scopes: list[Annotated[str, WithJsonSchema({"type": "string", "enum": list(SCOPES)})]] = Field(
        default_factory=list, description=f"Subset of {', '.join(SCOPES)}; [] = full access")
    expires_at: AwareDatetime | None = Field(
        default=None, description="When the key stops working (a future RFC 3339 date-time with offset); "
                                  "omitted or null = never")


class ApiKey(BaseModel):
    id: UUID
    name: str
    prefix: str
    scopes: list[str]
    created_by_key_id: UUID | None = None
    created_at: datetime
    expires_at: datetime | None = Field(default=None, description="null = never expires")
    last_used_at: datetime | None = Field(default=None, description="Updated at most once a minute; null = unused")


class ApiKeyCreated(ApiKey):
    key: str = Field(description="The plaintext key. Shown once; only its hash is stored.")
