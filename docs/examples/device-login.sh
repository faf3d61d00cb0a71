#!/usr/bin/env bash
# Log a headless agent in with the OAuth device flow (RFC 8628): no browser on this machine, no key pasted.
# docs/agent-integration.md, "Log in from a headless agent"; tests/e2e/test_docs_device_login.py runs it.
#
#   BASE=https://agentmate.example.com SCOPE="memory:rw" bash device-login.sh
#
# It registers a client (dynamic registration; or reuses CLIENT_ID), asks for a device code with the scopes it
# needs, prints the page and the code a person opens and approves, polls the token endpoint at the interval the
# server asked for (slower after each slow_down), stops on access_denied or expired_token, then prints the tokens
# (or writes them to TOKEN_FILE with mode 600) and makes one call with the access token.
#
# Environment:
#   BASE        the deployment's base URL (required), e.g. http://127.0.0.1:26001
#   SCOPE       space-separated scopes to ask for (default memory:rw; the person may narrow them)
#   RESOURCE    what the token is for (default $BASE/api, the REST API); $BASE/mcp = every MCP endpoint,
#               $BASE/mcp/<module> = that endpoint only, $BASE = the whole server
#   CLIENT_ID   a client registered before (ocl_…): reuse it instead of registering a new one
#   CLIENT_NAME the name the approval page shows (default "headless agent on <hostname>")
#   TOKEN_FILE  write the tokens there (mode 600) instead of printing them
#
# Messages for the person go to stderr; stdout carries only the tokens (ACCESS_TOKEN=…, REFRESH_TOKEN=…,
# CLIENT_ID=… lines) when TOKEN_FILE is not set. Needs curl and python3. Exits non-zero with a one-line reason.
set -euo pipefail
: "${BASE:?set BASE to the base URL of the deployment, e.g. http://127.0.0.1:26001}"
BASE="${BASE%/}"
SCOPE="${SCOPE:-memory:rw}"
RESOURCE="${RESOURCE:-$BASE/api}"
CLIENT_NAME="${CLIENT_NAME:-headless agent on $(hostname)}"
DEVICE_GRANT=urn:ietf:params:oauth:grant-type:device_code

R=$(mktemp)
trap 'rm -f "$R"' EXIT
say() { echo "$*" >&2; }
die() { echo "device-login.sh: $*" >&2; exit 1; }
json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($1)" "$R"; }

# 1. A client: reuse CLIENT_ID, or register one (RFC 7591). A public client ("none": no secret); the redirect URI
#    is required by registration and unused by the device flow.
if [ -z "${CLIENT_ID:-}" ]; then
  body=$(python3 -c 'import json, sys; print(json.dumps({
      "client_name": sys.argv[1], "redirect_uris": ["http://127.0.0.1/callback"],
      "grant_types": ["authorization_code", "refresh_token", sys.argv[2]], "token_endpoint_auth_method": "none"}))' \
    "$CLIENT_NAME" "$DEVICE_GRANT")
  code=$(curl -s -o "$R" -w '%{http_code}' -X POST "$BASE/api/oauth/register" \
    -H 'Content-Type: application/json' -d "$body") || die "cannot reach $BASE"
  [ "$code" = 201 ] || die "client registration answered $code: $(cat "$R")"
  CLIENT_ID=$(json 'd["client_id"]')
  say "Registered client $CLIENT_ID (run with CLIENT_ID=$CLIENT_ID next time to reuse it)."
fi

# 2. A device code and a user code for the scopes and the resource this agent needs.
code=$(curl -s -o "$R" -w '%{http_code}' -X POST "$BASE/api/oauth/device_authorization" \
  --data-urlencode "client_id=$CLIENT_ID" --data-urlencode "scope=$SCOPE" --data-urlencode "resource=$RESOURCE") \
  || die "cannot reach $BASE"
[ "$code" = 200 ] || die "device authorization answered $code: $(cat "$R")"
DEVICE_CODE=$(json 'd["device_code"]')
INTERVAL=$(json 'd["interval"]')
EXPIRES_IN=$(json 'd["expires_in"]')

# 3. What the person does: open the page (signed in as the account's user), check the code, approve.
say ""
say "To let this agent in, open this page, sign in and approve (the code is filled in):"
say "  $(json 'd["verification_uri_complete"]')"
say "or open $(json 'd["verification_uri"]') and enter the code  $(json 'd["user_code"]')"
say "It asks for: $SCOPE (on $RESOURCE). The code expires in $EXPIRES_IN s."
say ""

# 4. Poll the token endpoint (RFC 8628 §3.4, §3.5) until the person decides or the code expires.
deadline=$(($(date +%s) + EXPIRES_IN))
while :; do
  sleep "$INTERVAL"
  [ "$(date +%s)" -lt "$deadline" ] || die "the code expired before anyone approved it: run the script again"
  code=$(curl -s -o "$R" -w '%{http_code}' -X POST "$BASE/api/oauth/token" \
    --data-urlencode "grant_type=$DEVICE_GRANT" --data-urlencode "device_code=$DEVICE_CODE" \
    --data-urlencode "client_id=$CLIENT_ID") || code=000
  if [ "$code" = 200 ]; then break; fi
  if [ "$code" != 400 ]; then say "token endpoint answered $code; polling again"; continue; fi
  case "$(json 'd.get("error")')" in
    authorization_pending) ;;                      # not decided yet: keep polling at the same interval
    slow_down) INTERVAL=$((INTERVAL + 5)) ;;        # polled too fast: 5 s more, for this and every later poll
    access_denied) die "the person denied the request: no token was issued" ;;
    expired_token) die "the code expired before anyone approved it: run the script again" ;;
    *) die "the token endpoint refused: $(cat "$R")" ;;
  esac
done
ACCESS_TOKEN=$(json 'd["access_token"]')
say "Approved: scopes $(json 'd["scope"]'), the access token lasts $(json 'd["expires_in"]') s."

# 5. Keep the tokens: a file only this user can read, or stdout (lines a shell can source).
if [ -n "${TOKEN_FILE:-}" ]; then
  python3 -c 'import json, os, sys
d = json.load(open(sys.argv[1])); d.update(client_id=sys.argv[3], resource=sys.argv[4])
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.fchmod(fd, 0o600)
with os.fdopen(fd, "w") as f: json.dump(d, f)' "$R" "$TOKEN_FILE" "$CLIENT_ID" "$RESOURCE"
  say "Tokens written to $TOKEN_FILE (mode 600)."
else
  echo "ACCESS_TOKEN=$ACCESS_TOKEN"
  echo "REFRESH_TOKEN=$(json 'd["refresh_token"]')"
  echo "CLIENT_ID=$CLIENT_ID"
fi

# 6. One call with the token: who am I (REST), or the tool list (an MCP endpoint).
case "$RESOURCE" in
  "$BASE/mcp" | "$BASE/mcp/"*)
    code=$(curl -s -o "$R" -w '%{http_code}' -X POST "$RESOURCE" -H "Authorization: Bearer $ACCESS_TOKEN" \
      -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')
    [ "$code" = 200 ] || die "the first call with the token answered $code: $(cat "$R")"
    say "Checked: $RESOURCE lists $(json 'len(d["result"]["tools"])') tools for this token."
    ;;
  *)
    code=$(curl -s -o "$R" -w '%{http_code}' "$BASE/api/auth/me" -H "Authorization: Bearer $ACCESS_TOKEN")
    [ "$code" = 200 ] || die "the first call with the token answered $code: $(cat "$R")"
    say "Checked: GET /api/auth/me answers $(json 'd["auth"], d["email"], d["scopes"]')."
    ;;
esac
say "device-login.sh: logged in"
