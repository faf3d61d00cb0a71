"""The OAuth 2.1 authorization server (MCP authorization, 2026-07-28): authorization code with PKCE, client ID
metadata documents and dynamic registration, the device grant (RFC 8628), opaque hashed tokens with rotation and
revocation, and the login, consent and device-verification pages. Loaded only on the OAuth routes (cold start):
request authentication reads ``auth.tokens`` and ``auth.audience`` alone."""
