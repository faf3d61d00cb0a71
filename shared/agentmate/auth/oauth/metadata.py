"""RFC 8414 authorization server metadata (``/.well-known/oauth-authorization-server``): built from the issuer
alone, without the SDK (the metadata route is served at cold start)."""

from __future__ import annotations

from agentmate.core.scopes import SCOPES

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
CLIENT_AUTH_METHODS = ["none", "client_secret_post", "client_secret_basic"]


def document(issuer: str) -> dict[str, object]:
    """The metadata of the authorization server ``issuer`` (canonical: no trailing slash)."""
    oauth = f"{issuer}/api/oauth"
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{oauth}/authorize",
        "token_endpoint": f"{oauth}/token",
        "registration_endpoint": f"{oauth}/register",
        "revocation_endpoint": f"{oauth}/revoke",
        "device_authorization_endpoint": f"{oauth}/device_authorization",
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT],
        "token_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
        "revocation_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }
