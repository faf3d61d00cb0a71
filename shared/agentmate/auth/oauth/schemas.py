"""The OAuth endpoints' documents as pydantic models, for the OpenAPI (the handlers answer plain JSON in OAuth's
own shapes: RFC 6749 §5.1/§5.2, RFC 8414, RFC 7591) and the form bodies they take."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from agentmate.core.scopes import SCOPES


class OAuthError(BaseModel):
    """RFC 6749 §5.2 (and §4.1.2.1 when there is no redirect URI to send it to)."""

    error: str = Field(description="e.g. invalid_request, invalid_client, invalid_grant, invalid_scope")
    error_description: str | None = None
    state: str | None = None


class TokenResponse(BaseModel):
    """RFC 6749 §5.1."""

    access_token: str
    token_type: str = Field(description="Bearer")
    expires_in: int
    refresh_token: str | None = None
    scope: str = Field(description="The granted scopes, space-separated")


class AuthorizationServerMetadata(BaseModel):
    """RFC 8414 §2."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str
    revocation_endpoint: str
    device_authorization_endpoint: str
    scopes_supported: list[str]
    response_types_supported: list[str]
    response_modes_supported: list[str]
    grant_types_supported: list[str]
    token_endpoint_auth_methods_supported: list[str]
    revocation_endpoint_auth_methods_supported: list[str]
    code_challenge_methods_supported: list[str]
    client_id_metadata_document_supported: bool
    authorization_response_iss_parameter_supported: bool


class RegisteredClient(BaseModel):
    """RFC 7591 §3.2.1: the client's metadata as registered, with its id (and secret, for a confidential one)."""

    client_id: str
    client_secret: str | None = None
    client_id_issued_at: int | None = None
    client_secret_expires_at: int | None = None
    redirect_uris: list[str] | None = None
    token_endpoint_auth_method: str | None = None
    grant_types: list[str] | None = None
    response_types: list[str] | None = None
    scope: str | None = None
    client_name: str | None = None
    client_uri: str | None = None


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def form_body(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    """``openapi_extra`` for a form endpoint: its ``application/x-www-form-urlencoded`` body."""
    schema = {"type": "object", "properties": properties, "required": required}
    return {
        "requestBody": {
            "required": True,
            "content": {"application/x-www-form-urlencoded": {"schema": schema}},
        }
    }


_CLIENT = {
    "client_id": _string(
        "The client's id (an https URL for a client ID metadata document)", minLength=1, maxLength=2048
    ),
    "client_secret": _string("A confidential client's secret (client_secret_post)"),
}

AUTHORIZE_FORM = form_body(
    {
        **{k: v for k, v in _CLIENT.items() if k == "client_id"},
        "response_type": _string("code", enum=["code"]),
        "redirect_uri": _string("One of the client's redirect URIs, exactly"),
        "code_challenge": _string("PKCE: BASE64URL(SHA-256(code_verifier))"),
        "code_challenge_method": _string("S256", enum=["S256"]),
        "state": _string("Returned unchanged with the code"),
        "scope": _string("Space-separated scopes; none = every scope the resource offers"),
        "resource": _string("RFC 8707: the resource the token is for, e.g. {issuer}/mcp"),
    },
    ["client_id", "response_type", "code_challenge"],
)

TOKEN_FORM = form_body(
    {
        "grant_type": _string(
            "The grant",
            enum=["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"],
        ),
        **_CLIENT,
        "code": _string("authorization_code: the code"),
        "redirect_uri": _string("authorization_code: the redirect URI of the authorization request"),
        "code_verifier": _string("authorization_code: the PKCE verifier"),
        "refresh_token": _string("refresh_token: the refresh token (rotated: use the new one next time)"),
        "scope": _string("refresh_token: fewer scopes than the grant's (narrowing is kept; never wider)"),
        "device_code": _string("device_code: the device code"),
        "resource": _string("RFC 8707 resource indicator"),
    },
    ["grant_type", "client_id"],
)

REVOKE_FORM = form_body(
    {
        "token": _string("An access or refresh token: its whole grant is revoked"),
        "token_type_hint": _string("access_token or refresh_token", enum=["access_token", "refresh_token"]),
        **_CLIENT,
    },
    ["token", "client_id"],
)

REGISTER_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "description": "RFC 7591 client metadata",
                    "properties": {
                        "redirect_uris": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": 10,
                            "items": {"type": "string", "format": "uri"},
                        },
                        "token_endpoint_auth_method": _string(
                            "none (a public client) or client_secret_post/client_secret_basic",
                            enum=["none", "client_secret_post", "client_secret_basic"],
                        ),
                        "grant_types": {"type": "array", "items": {"type": "string"}},
                        "response_types": {"type": "array", "items": {"type": "string"}},
                        "scope": _string("Space-separated scopes"),
                        "client_name": _string("Shown on the consent page"),
                        "client_uri": _string("Shown on the consent page", format="uri"),
                    },
                    "required": ["redirect_uris"],
                }
            }
        },
    }
}


class DeviceAuthorizationResponse(BaseModel):
    """RFC 8628 §3.2."""

    device_code: str = Field(description="Poll the token endpoint with it (`odc_…`); keep it secret")
    user_code: str = Field(description="What the user enters on the verification page (XXXX-XXXX)")
    verification_uri: str = Field(description="Where the user goes, signed in, to enter the user code")
    verification_uri_complete: str = Field(description="The verification page with the user code filled in")
    expires_in: int = Field(description="Seconds until the device code and user code expire")
    interval: int = Field(description="Seconds to wait between polls of the token endpoint")


ScopeName = Annotated[str, WithJsonSchema({"type": "string", "enum": list(SCOPES)})]


class DeviceDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user_code: str = Field(
        min_length=1,
        max_length=32,
        description="The user code the device shows (XXXX-XXXX; case, dashes and spaces do not matter)",
        examples=["WDJB-MJHT"],
    )
    scopes: list[ScopeName] | None = Field(
        default=None,
        max_length=len(SCOPES),
        description="Approve only: the scopes granted, a non-empty subset of those asked for (narrowed, never "
        "widened); omitted or null = all asked for",
    )
