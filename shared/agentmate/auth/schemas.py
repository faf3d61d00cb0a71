from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

import email_validator
from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, WithJsonSchema

from agentmate.core.scopes import SCOPES

ScopeName = str
MAX_EMAIL = 254  # RFC 5321's path limit


def _email(value: str) -> str:
    # Like pydantic's EmailStr, but also takes the special-use ``.test`` domain (RFC 6761) that a schema's
    # ``format: email`` allows: no mail is ever sent, the address is only the account's login name.
    try:
        return email_validator.validate_email(
            value.strip(), check_deliverability=False, test_environment=True
        ).normalized
    except email_validator.EmailNotValidError as exc:
        raise ValueError(f"value is not a valid email address: {exc}") from None


Email = Annotated[
    str,
    Field(max_length=MAX_EMAIL),
    AfterValidator(_email),
    WithJsonSchema({"type": "string", "format": "email", "maxLength": MAX_EMAIL}),
]


class Credentials(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: Email
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
        default_factory=list, description=f"Subset of {', '.join(SCOPES)}; [] = full access"
    )
    expires_at: AwareDatetime | None = Field(
        default=None,
        description="When the key stops working (a future RFC 3339 date-time with offset); "
        "omitted or null = never",
    )


class ApiKey(BaseModel):
    id: UUID
    name: str
    prefix: str
    scopes: list[str]
    created_by_key_id: UUID | None = None
    created_at: datetime
    expires_at: datetime | None = Field(default=None, description="null = never expires")
    last_used_at: datetime | None = Field(
        default=None, description="Updated at most once a minute; null = unused"
    )


class ApiKeyCreated(ApiKey):
    key: str = Field(description="The plaintext key. Shown once; only its hash is stored.")


class Grant(BaseModel):
    """A client the user authorised through OAuth (a grant: its access and refresh tokens)."""

    id: UUID
    client_id: str = Field(description="The client's id (an https URL for a client ID metadata document)")
    client_name: str | None = None
    client_uri: str | None = None
    scopes: list[str] = Field(description="What the grant's tokens may do (never empty)")
    resource: str = Field(description="The resource its tokens serve (RFC 8707), e.g. `{base}/mcp`")
    created_at: datetime
    last_used_at: datetime | None = Field(None, description="Stamped at most once a minute")
