"""Who an OAuth client is: a client ID metadata document (an https ``client_id``, ``cimd``) or a client that
registered dynamically (RFC 7591, an ``ocl_`` id in ``oauth_clients``), and the per-address throttle on
registration.

Registration runs the MCP SDK's ``RegistrationHandler``; ``save_registered_client`` (its provider's
``register_client``) adds what the SDK does not check — bounded fields, at most ``MAX_REDIRECT_URIS`` redirect URIs,
each absolute, without a fragment, https or http on a loopback host or a native app's own scheme — raising the
SDK's ``RegistrationError`` (400 ``invalid_redirect_uri`` / ``invalid_client_metadata``), and replaces the SDK's
client id and secret with ours (``ocl_…``, ``ocs_…``) in the object the handler answers with. Only the secret's
hash is stored, so a confidential client is checked with ``verify_client_secret``, not by comparing
``client_secret`` (which ``get_client`` never returns).

A client that declares no ``scope`` may ask for any of the product's scopes (``core.scopes.SCOPES``): the SDK's
``validate_scope`` would otherwise refuse every scope it asks for.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from typing import TYPE_CHECKING, Any

from agentmate.auth import throttle
from agentmate.auth.oauth import cimd
from agentmate.auth.oauth import client_repository as repo
from agentmate.auth.oauth.settings import OAuthSettings
from agentmate.auth.tokens import CLIENT_ID_PREFIX, hash_token, new_token
from agentmate.core.db import Database
from agentmate.core.scopes import SCOPES

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull

log = logging.getLogger(__name__)

MAX_REDIRECT_URIS = cimd.MAX_REDIRECT_URIS
MAX_METADATA_CHARS = 32 * 1024
_MAX_CLIENT_ID_CHARS = 100
# Bounded text fields of a registration: name → at most this many characters.
_TEXT_LIMITS = {
    "client_name": cimd.MAX_NAME_CHARS,
    "software_id": cimd.MAX_NAME_CHARS,
    "software_version": cimd.MAX_NAME_CHARS,
    "scope": cimd.MAX_URL_CHARS,
    "client_uri": cimd.MAX_URL_CHARS,
    "logo_uri": cimd.MAX_URL_CHARS,
    "tos_uri": cimd.MAX_URL_CHARS,
    "policy_uri": cimd.MAX_URL_CHARS,
    "jwks_uri": cimd.MAX_URL_CHARS,
    "application_type": cimd.MAX_NAME_CHARS,
}
# Bounded lists: name → (at most this many items, each at most this many characters).
_LIST_LIMITS = {"contacts": (10, 320), "grant_types": (10, 200), "response_types": (10, 200)}
_AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


def get_client(db: Database, oauth: OAuthSettings, client_id: str) -> OAuthClientInformationFull | None:
    """An https client_id → its metadata document (fetched SSRF-safe, validated, cached); an ``ocl_`` id → the
    registered client. None when unknown or the document cannot be used (the reason is logged)."""
    if cimd.is_document_url(client_id):
        try:
            return _with_default_scope(cimd.client_from_document(oauth, client_id))
        except cimd.DocumentRefused as exc:
            log.warning("oauth client metadata document %.300s refused: %s", client_id, exc)
            return None
    if not client_id.startswith(CLIENT_ID_PREFIX) or len(client_id) > _MAX_CLIENT_ID_CHARS:
        return None
    with db.single_statement() as conn:
        row = repo.get_client(conn, client_id=client_id)
    if row is None:
        return None
    from mcp.shared.auth import OAuthClientInformationFull

    return _with_default_scope(
        OAuthClientInformationFull.model_validate({**row.metadata, "client_id": row.client_id})
    )


def verify_client_secret(db: Database, client_id: str, client_secret: str) -> bool:
    """Whether ``client_secret`` is the secret of the registered confidential client ``client_id``."""
    if not client_id.startswith(CLIENT_ID_PREFIX) or len(client_id) > _MAX_CLIENT_ID_CHARS:
        return False
    with db.single_statement() as conn:
        row = repo.get_client(conn, client_id=client_id)
    if row is None or row.client_secret_hash is None:
        return False
    return hmac.compare_digest(row.client_secret_hash, hash_token(client_secret))


def check_registration_allowed(db: Database, oauth: OAuthSettings, client_address: str) -> None:
    """``RateLimited`` (429 with Retry-After) once this address used up its registrations in the window; every
    attempt counts, valid or not."""
    from agentmate.auth.settings import get_auth_settings

    bucket = throttle.oauth_registration_bucket(
        client_address, oauth.oauth_registrations_per_address, oauth.oauth_registration_window_s
    )
    throttle.check(db, [bucket], "client registrations")
    throttle.hit(db, get_auth_settings(), [bucket])


def save_registered_client(db: Database, info: OAuthClientInformationFull) -> None:
    """Store a client the SDK's registration handler accepted, after our own checks (``RegistrationError``).
    Sets ``info.client_id`` to a new ``ocl_`` id and, for a confidential client, ``info.client_secret`` to a new
    ``ocs_`` secret (the handler answers with ``info``); only the secret's hash is kept."""
    _check_registration(info)
    info.client_id = CLIENT_ID_PREFIX + secrets.token_urlsafe(24)
    secret_hash = None
    if info.token_endpoint_auth_method == "none":
        info.client_secret = None
        info.client_secret_expires_at = None
    else:
        info.client_secret, secret_hash = new_token("client_secret")
        info.client_secret_expires_at = 0  # RFC 7591 §3.2.1: 0 = never expires
    metadata = info.model_dump(mode="json", exclude={"client_id", "client_secret"}, exclude_none=True)
    with db.transaction() as conn:
        repo.insert_client(conn, client_id=info.client_id, client_secret_hash=secret_hash, metadata=metadata)


def _with_default_scope(info: OAuthClientInformationFull) -> OAuthClientInformationFull:
    if info.scope is None or not info.scope.strip():
        return info.model_copy(update={"scope": " ".join(SCOPES)})
    return info


def _refuse(message: str, *, redirect: bool = False) -> Exception:
    from mcp.server.auth.provider import RegistrationError

    return RegistrationError("invalid_redirect_uri" if redirect else "invalid_client_metadata", message)


def _check_registration(info: OAuthClientInformationFull) -> None:
    uris = [str(u) for u in info.redirect_uris or []]
    if not uris:
        raise _refuse("redirect_uris must list at least one URL", redirect=True)
    if len(uris) > MAX_REDIRECT_URIS:
        raise _refuse(f"redirect_uris lists {len(uris)} URLs; at most {MAX_REDIRECT_URIS}", redirect=True)
    for i, uri in enumerate(uris):
        problem = cimd.redirect_uri_problem(uri, private_use=True)
        if problem:
            raise _refuse(f"redirect_uris[{i}] {problem}", redirect=True)
    if info.token_endpoint_auth_method not in _AUTH_METHODS:
        raise _refuse(f"token_endpoint_auth_method must be one of {', '.join(_AUTH_METHODS)}")
    _check_sizes(info.model_dump(mode="json", exclude_none=True))


def _check_sizes(fields: dict[str, Any]) -> None:
    for name, limit in _TEXT_LIMITS.items():
        value = fields.get(name)
        if isinstance(value, str) and len(value) > limit:
            raise _refuse(f"{name} is longer than {limit} characters")
    for name, (count, limit) in _LIST_LIMITS.items():
        items = fields.get(name) or []
        if len(items) > count:
            raise _refuse(f"{name} lists {len(items)} values; at most {count}")
        if any(len(str(item)) > limit for item in items):
            raise _refuse(f"each of {name} must be at most {limit} characters")
    if len(json.dumps(fields)) > MAX_METADATA_CHARS:
        raise _refuse(f"the client metadata is larger than {MAX_METADATA_CHARS} characters")
