"""Client ID metadata documents (issue 24): what a client_id URL and its document must be, how long a fetched one
is kept, and the any-host mode of git ingest's fetch policy that the document fetcher uses."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmate.auth.oauth import cimd
from agentmate.auth.oauth.cimd import DocumentRefused, validate_document
from agentmate.packages.policy import NetPolicy

URL = "https://app.example/oauth/client.json"


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "client_id": URL,
        "client_name": "Example App",
        "client_uri": "https://app.example/",
        "redirect_uris": ["https://app.example/callback", "http://127.0.0.1:33418/callback"],
    }
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not None}


def _refusal(doc: Any) -> str:
    with pytest.raises(DocumentRefused) as caught:
        validate_document(URL, json.dumps(doc).encode())
    return str(caught.value)


def test_a_valid_document_becomes_a_public_client():
    client = validate_document(URL, json.dumps(_doc()).encode())
    assert client.client_id == URL
    assert client.token_endpoint_auth_method == "none"
    assert client.client_secret is None
    assert client.client_name == "Example App"
    assert [str(u) for u in client.redirect_uris or []] == [
        "https://app.example/callback",
        "http://127.0.0.1:33418/callback",
    ]


def test_an_explicit_none_auth_method_is_accepted_and_any_other_refused():
    assert validate_document(URL, json.dumps(_doc(token_endpoint_auth_method="none")).encode())
    for method in ("client_secret_post", "client_secret_basic", "private_key_jwt"):
        assert "token_endpoint_auth_method must be none" in _refusal(_doc(token_endpoint_auth_method=method))


def test_the_client_id_inside_must_equal_the_url_exactly():
    for other in ("https://app.example/oauth/client.json/", "https://APP.example/oauth/client.json", None):
        assert "client_id in the document differs" in _refusal(_doc(client_id=other))


def test_a_document_must_not_carry_a_secret():
    assert "client_secret" in _refusal(_doc(client_secret="s3cret"))
    assert "client_secret" in _refusal(_doc(client_secret_expires_at=0))


@pytest.mark.parametrize(
    ("uris", "expected"),
    [
        (None, "redirect_uris must be a non-empty list"),
        ([], "redirect_uris must be a non-empty list"),
        ("https://app.example/cb", "redirect_uris must be a non-empty list"),
        ([f"https://app.example/cb{i}" for i in range(11)], "redirect_uris lists 11 URLs; at most 10"),
        (["/callback"], "redirect_uris[0] must be an absolute URL"),
        (["https://app.example/cb#x"], "redirect_uris[0] must not carry a fragment"),
        (["http://app.example/cb"], "redirect_uris[0] may use http only on a loopback host"),
        (["https://app.example/cb", "com.example.app:/cb"], "redirect_uris[1] must use https"),
        ([42], "redirect_uris[0] must be a string"),
        (["https://user:pw@app.example/cb"], "must not carry credentials"),
    ],
)
def test_redirect_uris_must_be_a_short_list_of_absolute_https_or_loopback_urls(uris, expected):
    assert expected in _refusal(_doc(redirect_uris=uris))


def test_name_and_uri_are_bounded_strings():
    assert "client_name must be a string of at most 200" in _refusal(_doc(client_name="x" * 201))
    assert "client_name must be a string" in _refusal(_doc(client_name=["x"]))
    assert "client_uri must be a string of at most 2048" in _refusal(
        _doc(client_uri="https://a.example/" + "x" * 2048)
    )
    assert "client_uri must be an http(s) URL" in _refusal(_doc(client_uri="javascript:alert(1)"))


def test_what_is_not_a_json_object_is_refused():
    assert _refusal([1, 2]) == "the document is not a JSON object"
    with pytest.raises(DocumentRefused, match="not JSON"):
        validate_document(URL, b"<html>hello</html>")
    with pytest.raises(DocumentRefused, match="not JSON"):
        validate_document(URL, b"\xff\xfe")


def test_fields_the_sdk_cannot_read_are_named_without_internals():
    message = _refusal(_doc(logo_uri="not a url"))
    assert message == "the document's fields are not valid client metadata: logo_uri"


_URLISH = st.sampled_from(
    [URL, "https://app.example/cb", "http://127.0.0.1:1/cb", "http://evil.example/cb", "not a url", "", "#"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | _URLISH,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
_FIELDS = [*_doc(), "scope", "grant_types", "logo_uri", "token_endpoint_auth_method", "jwks"]


@settings(max_examples=300, deadline=None)  # no timing threshold: the first example imports the SDK
@given(
    st.dictionaries(st.sampled_from(_FIELDS) | st.text(max_size=8), _JSON, max_size=8),
    st.booleans(),
    st.lists(_URLISH, max_size=3),
)
def test_any_json_object_is_either_a_client_or_a_refusal(doc, own_id, uris):
    if own_id:
        doc = {**doc, "client_id": URL, "redirect_uris": uris}
    try:
        client = validate_document(URL, json.dumps(doc).encode())
    except DocumentRefused:
        return
    assert client.client_id == URL and client.token_endpoint_auth_method == "none"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://app.example/client.json", "must be an https URL"),
        ("https://app.example", "must have a path"),
        ("https://app.example/", "must have a path"),
        ("https://app.example/a/../client.json", "must not contain . or .. path segments"),
        ("https://app.example/./client.json", "must not contain . or .. path segments"),
        ("https://app.example/client.json#frag", "must not carry a fragment"),
        ("https://me:pw@app.example/client.json", "must not carry credentials"),
        ("https://app.example:99999/client.json", "is not a valid URL"),
        ("https:///client.json", "has no host"),
        ("https://app.example/" + "x" * 2048, "is longer than 2048 characters"),
    ],
)
def test_a_client_id_url_is_checked_before_any_fetch(url, expected):
    assert (cimd.client_id_problem(url) or "").startswith(expected)


def test_a_client_id_url_with_a_path_port_and_query_is_accepted():
    assert cimd.client_id_problem("https://app.example:8443/oauth/client.json?v=2") is None


def test_http_and_https_client_ids_are_documents_and_registered_ids_are_not():
    assert cimd.is_document_url("https://app.example/c.json")
    assert cimd.is_document_url("HTTP://app.example/c.json")
    assert not cimd.is_document_url("ocl_abc")
    assert not cimd.is_document_url("app.example/c.json")


def test_registration_also_accepts_a_native_apps_own_scheme_but_never_a_script():
    assert cimd.redirect_uri_problem("com.example.app:/oauth2redirect", private_use=True) is None
    assert cimd.redirect_uri_problem("http://localhost:8080/cb", private_use=True) is None
    assert cimd.redirect_uri_problem("http://[::1]:8080/cb", private_use=True) is None
    for uri in ("javascript:alert(1)", "data:text/html,hi", "file:///etc/passwd"):
        assert "must not use the" in (cimd.redirect_uri_problem(uri, private_use=True) or "")


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("", None),
        ("public", None),
        ("max-age=60", 60),
        ("public, max-age=3600", 3600),
        ('max-age="120"', 120),
        ("max-age=-1", 0),
        ("max-age=soon", 0),
        ("no-store", 0),
        ("max-age=60, no-cache", 0),
    ],
)
def test_cache_control_gives_how_long_a_document_may_be_kept(header, seconds):
    assert cimd.max_age(header) == seconds


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_cached_document_is_forgotten_when_its_time_is_up():
    clock = _Clock()
    cache = cimd.DocumentCache(clock)
    client = validate_document(URL, json.dumps(_doc()).encode())
    cache.put(URL, 60, client)
    clock.now += 59
    entry = cache.get(URL)
    assert entry is not None and entry.client is client
    clock.now += 1
    assert cache.get(URL) is None
    cache.put(URL, 0, client)  # a zero lifetime keeps nothing
    assert cache.get(URL) is None


def test_the_cache_holds_a_bounded_number_of_urls():
    cache = cimd.DocumentCache(_Clock())
    for i in range(cimd.CACHE_ENTRIES + 5):
        cache.put(f"https://a.example/{i}", 60, None, "bad")
    assert cache.get("https://a.example/0") is None
    assert cache.get(f"https://a.example/{cimd.CACHE_ENTRIES + 4}") is not None


# The any-host mode of git ingest's policy (packages.policy.NetPolicy), as the document fetcher builds it.


def _any_host(*networks: str) -> NetPolicy:
    return NetPolicy(allowed_hosts=(), allowed_private_networks=networks, any_host=True)


def test_any_host_mode_skips_the_allow_list_but_keeps_the_scheme():
    policy = _any_host()
    assert policy.url_problem("https://anything.example:8443/c.json") is None
    assert (policy.url_problem("http://anything.example/c.json") or "").startswith(
        "scheme 'http' is not allowed"
    )
    assert "credentials" in (policy.url_problem("https://u:p@anything.example/c.json") or "")
    # git ingest's default policy still holds to its allow-list
    assert "not in the allow-list" in (NetPolicy().url_problem("https://anything.example/c.json") or "")


def test_any_host_mode_refuses_private_addresses_unless_opted_in_and_metadata_addresses_always():
    ip = ipaddress.ip_address
    assert _any_host().address_problem(ip("127.0.0.1")) == "a private or loopback address"
    assert _any_host().address_problem(ip("10.1.2.3")) == "a private or loopback address"
    assert _any_host("127.0.0.0/8").address_problem(ip("127.0.0.1")) is None
    everything = _any_host("0.0.0.0/0", "::/0")
    assert everything.address_problem(ip("169.254.169.254")) == "a cloud metadata address"
    assert everything.address_problem(ip("169.254.1.1")) == "a link-local address"
    assert everything.address_problem(ip("fe80::1")) == "a link-local address"
    assert _any_host().address_problem(ip("93.184.215.14")) is None
