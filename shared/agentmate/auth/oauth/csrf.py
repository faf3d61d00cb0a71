"""CSRF protection and the security headers of the OAuth pages (login + consent, device verification).

A page's form carries a token in a hidden field; the same response sets an HttpOnly, SameSite=Strict cookie
(``Secure`` and ``__Host-`` when the issuer is https) holding a random nonce. The token is an HMAC of the nonce,
keyed by the JWT secret and bound to the page (``purpose``) and, for consent, the pending request's id: a form
posted from elsewhere has neither the cookie (SameSite=Strict) nor a token matching it, and a token read from one
consent page does not serve another request. The form endpoints take only
``application/x-www-form-urlencoded`` (JSON sent as ``text/plain`` or multipart is refused before anything is
read), and an ``Origin`` or ``Sec-Fetch-Site`` header, when the browser sends one, must say the form came from
the issuer's own pages.

Pure functions over strings (no web framework): ``auth.oauth.pages`` applies them.

Found in chromium (tests/e2e/test_oauth_pages.py), and why the headers are as they are:

- CSP ``form-action`` applies to the redirects that follow a form's POST: with ``form-action 'self'`` alone, the
  303 to the client's ``redirect_uri`` is blocked. A consent page therefore names its client's redirect origin
  (``form_action``); the device page, which redirects nowhere, keeps ``'self'``.
- Under ``Referrer-Policy: no-referrer`` chromium sends ``Origin: null`` with the page's own same-origin POST, so
  the Origin check could not tell the page from an opaque origin. The pages send ``same-origin`` (no
  ``Referer`` ever leaves the issuer: the client's redirect URI receives none), and the 303 itself carries
  ``no-referrer``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from urllib.parse import urlsplit

COOKIE = "oauth_csrf"
SECURE_COOKIE = "__Host-oauth_csrf"  # https only: Secure, Path=/, no Domain (a sibling host cannot plant it)
FIELD = "csrf"
FORM_TYPE = "application/x-www-form-urlencoded"
_NONCE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # 32 random bytes, base64url without padding
_TOKEN_CHARS = 43  # an HMAC-SHA256, base64url without padding
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")
_HOST = re.compile(r"^[A-Za-z0-9.\-\[\]:]+$")  # what a CSP host-source may hold (IPv6 in brackets)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _secure(issuer: str) -> bool:
    return issuer.lower().startswith("https://")


def cookie_name(issuer: str) -> str:
    return SECURE_COOKIE if _secure(issuer) else COOKIE


def nonce_for(cookie_value: str | None) -> str:
    """The browser's nonce when its cookie holds a well-formed one (two tabs keep working), else a new one."""
    if cookie_value and _NONCE.match(cookie_value):
        return cookie_value
    return _b64(secrets.token_bytes(32))


def token(secret: str, nonce: str, purpose: str, binding: str) -> str:
    """The hidden field's value for this page: HMAC(JWT secret, purpose, binding, nonce)."""
    key = hashlib.sha256(b"agentmate oauth csrf\0" + secret.encode()).digest()
    message = "\0".join((purpose, binding, nonce)).encode()
    return _b64(hmac.new(key, message, hashlib.sha256).digest())


def verify(secret: str, cookie_value: str | None, sent: str | None, purpose: str, binding: str) -> bool:
    """Whether the posted token matches the browser's cookie for this page (constant-time)."""
    if not cookie_value or not sent or not _NONCE.match(cookie_value) or len(sent) != _TOKEN_CHARS:
        return False
    return hmac.compare_digest(token(secret, cookie_value, purpose, binding), sent)


def set_cookie(issuer: str, nonce: str, max_age: int) -> str:
    """The ``Set-Cookie`` value carrying the nonce: HttpOnly, SameSite=Strict, Secure for an https issuer."""
    if _secure(issuer):
        return f"{SECURE_COOKIE}={nonce}; Max-Age={max_age}; Path=/; HttpOnly; SameSite=Strict; Secure"
    return f"{COOKIE}={nonce}; Max-Age={max_age}; Path=/api/oauth; HttpOnly; SameSite=Strict"


def _origin_of(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or (443 if scheme == "https" else 80)


def refusal(issuer: str, content_type: str | None, origin: str | None, fetch_site: str | None) -> str | None:
    """Why a form POST is refused before its body is read (``None``: it may proceed). A wrong content type is
    for a 415, anything else for a 403."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != FORM_TYPE:
        return f"this form takes {FORM_TYPE} only (got {media or 'no content type'})"
    if origin is not None and (_origin_of(origin) is None or _origin_of(origin) != _origin_of(issuer)):
        return "the form was not sent from this server's own page (Origin)"
    if fetch_site is not None and fetch_site.strip().lower() not in ("same-origin", "none"):
        return "the form was not sent from this server's own page (Sec-Fetch-Site)"
    return None


def wrong_content_type(reason: str) -> bool:
    return reason.startswith("this form takes")


def form_action(redirect_uri: str | None) -> str:
    """The CSP ``form-action`` sources of a page: ``'self'``, plus the origin a consent page's POST redirects to
    (chromium applies form-action to the redirect). A redirect URI CSP cannot name safely adds nothing."""
    sources = ["'self'"]
    if redirect_uri:
        try:
            parts = urlsplit(redirect_uri)
            host, port = parts.hostname, parts.port
        except ValueError:
            return sources[0]
        scheme = parts.scheme.lower()
        if scheme in ("http", "https") and host and _HOST.match(parts.netloc.rsplit("@", 1)[-1]):
            netloc = f"[{host}]" if ":" in host else host
            sources.append(f"{scheme}://{netloc}" + (f":{port}" if port else ""))
        elif _SCHEME.match(scheme) and scheme not in ("http", "https", "javascript", "data"):
            sources.append(f"{scheme}:")  # a native app's private-use scheme (RFC 8252 §7.1)
    return " ".join(sources)


def security_headers(redirect_uri: str | None = None) -> dict[str, str]:
    """The headers every OAuth page carries: no script, no framing, no caching, no referrer leaving the issuer."""
    return {
        "Content-Security-Policy": (
            "default-src 'none'; style-src 'unsafe-inline'; "
            f"form-action {form_action(redirect_uri)}; frame-ancestors 'none'; base-uri 'none'"
        ),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Referrer-Policy": "same-origin",
    }
