"""The OAuth login + consent and device verification pages in a real browser (headless chromium via Selenium):
what the user sees, what the form does, and that chromium enforces the page's headers as intended (the CSP's
form-action lets the 303 to the client's redirect URI through; the page's own POST is not refused).

The pending requests are made through core's and device's services (the /authorize and device_authorization
routes are theirs and tested there); the pages are driven only through their own routes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit
from uuid import UUID

import psycopg
import pytest

from tests.conftest import Account, make_account

pytest_plugins = ["tests.browser"]  # its fixtures: browser, fresh_browser, loopback_page, pages_server

CLIENT_NAME = 'Robot <b>"Helper"</b> & co'  # markup that must show as text
CLIENT_URI = "https://robot.example/about?a=1&b=<2>"
ASKED = ("todos:r", "todos:rw", "notes:r")


def new_request(
    issuer: str, redirect_uri: str, scopes: Sequence[str] = ASKED, state: str = "st-42", **client: Any
) -> UUID:
    """A pending authorization, as core's /authorize stores it before sending the user to the consent page."""
    from agentmate.auth.oauth import service
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.core.db import get_database

    return service.create_request(
        get_database(),
        get_oauth_settings(),
        client_id=client.get("client_id", "ocl_test-client"),
        client_name=client.get("client_name", CLIENT_NAME),
        client_uri=client.get("client_uri", CLIENT_URI),
        redirect_uri=redirect_uri,
        code_challenge="E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        state=state,
        scopes=list(scopes),
        resource=f"{issuer}/mcp",
    )


def new_device(issuer: str, scope: str = " ".join(ASKED)) -> Any:
    """A pending device authorization (device's service, as POST /api/oauth/device_authorization makes it)."""
    from agentmate.auth.oauth import device
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.auth.settings import get_auth_settings
    from agentmate.core.db import get_database

    return device.start_authorization(
        get_database(),
        get_auth_settings(),
        get_oauth_settings(),
        client_id="ocl_device-client",
        client_name=CLIENT_NAME,
        client_uri=None,
        client_scope=None,
        scope=scope,
        resource=f"{issuer}/mcp",
    )


def is_pending(request_id: UUID) -> bool:
    from agentmate.auth.oauth import service
    from agentmate.core.db import get_database

    return service.pending_request(get_database(), request_id) is not None


def code_scopes(owner_url: str, request_id: UUID) -> list[list[str]]:
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute("SELECT scopes FROM oauth_codes WHERE request_id = %s", (request_id,)).fetchall()
    return [list(r[0]) for r in rows]


@pytest.fixture(autouse=True, scope="module")
def _scopes_for_resource() -> Any:
    """A stand-in for resource's ``audience.scopes_for_resource`` (device's service calls it) until that branch is
    merged: every one of the 17 scopes. Does nothing once the real one exists."""
    from agentmate.auth import audience
    from agentmate.core.scopes import SCOPES

    with pytest.MonkeyPatch.context() as mp:
        if not hasattr(audience, "scopes_for_resource"):
            mp.setattr(audience, "scopes_for_resource", lambda issuer, resource: SCOPES, raising=False)
        yield


@pytest.fixture
def user(client: Any) -> Account:
    return make_account(client)


def wait_for(driver: Any, condition: Any) -> Any:
    from tests.browser import wait_for  # imported here: pytest_plugins loads the module (assertion rewriting)

    return wait_for(driver, condition)


def csp_violations(driver: Any) -> list[str]:
    from tests.browser import csp_violations

    return csp_violations(driver)


def _by_id(driver: Any, element_id: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element_id)


def _scope_boxes(driver: Any) -> dict[str, Any]:
    from selenium.webdriver.common.by import By

    return {
        box.get_attribute("value"): box for box in driver.find_elements(By.CSS_SELECTOR, "input[name=scope]")
    }


def _sign_in(driver: Any, email: str, password: str) -> None:
    _by_id(driver, "email").clear()
    _by_id(driver, "email").send_keys(email)
    _by_id(driver, "password").send_keys(password)


def _landed(driver: Any, prefix: str) -> dict[str, list[str]]:
    wait_for(driver, lambda d: d.current_url.startswith(prefix))
    return parse_qs(urlsplit(driver.current_url).query)


def test_the_user_narrows_the_scopes_signs_in_and_lands_on_the_redirect_uri_with_code_state_and_iss(
    fresh_browser: Any, pages_server: str, loopback_page: Any, user: Account, owner_url: str
) -> None:
    # Given a pending authorization from a client whose name and URI carry markup
    rid = new_request(pages_server, loopback_page.callback())
    driver = fresh_browser
    driver.get(f"{pages_server}/api/oauth/consent?request={rid}")
    # Then the page shows the client's name and URI as text (not a link), the resource, and every scope ticked
    assert _by_id(driver, "client-name").text == CLIENT_NAME
    assert _by_id(driver, "client-uri").text == CLIENT_URI
    assert "not verified" in _by_id(driver, "client").text
    assert not driver.find_elements("css selector", "#client a")
    assert _by_id(driver, "resource").text == f"{pages_server}/mcp"
    assert _by_id(driver, "redirect").text == loopback_page.url
    boxes = _scope_boxes(driver)
    assert list(boxes) == list(ASKED)
    assert all(box.is_selected() for box in boxes.values())
    # When the user unticks one scope, signs in and allows
    boxes["notes:r"].click()
    _sign_in(driver, user.email, user.password)
    _by_id(driver, "approve").click()
    # Then chromium follows the 303 to the client (CSP form-action does not block it) with code, state and iss
    query = _landed(driver, loopback_page.callback())
    assert query["code"][0].startswith("oac_")
    assert query["state"] == ["st-42"]
    assert query["iss"] == [pages_server]
    assert _by_id(driver, "client-landed").text == "back at the client"
    # And the code carries only the scopes left ticked; the client's page got no Referer from the issuer
    assert code_scopes(owner_url, rid) == [["todos:r", "todos:rw"]]
    assert [h.get("referer") for _, h in loopback_page.hits] == [None]
    assert csp_violations(driver) == []


def test_a_wrong_password_shows_the_page_again_with_the_error_and_approves_nothing(
    fresh_browser: Any, pages_server: str, loopback_page: Any, user: Account, owner_url: str
) -> None:
    # Given the consent page of a pending request
    rid = new_request(pages_server, loopback_page.callback())
    driver = fresh_browser
    driver.get(f"{pages_server}/api/oauth/consent?request={rid}")
    # When the user signs in with a wrong password
    _sign_in(driver, user.email, "not the password")
    _by_id(driver, "approve").click()
    # Then the page comes back with the error, the email kept, the password not, and nothing approved
    wait_for(driver, lambda d: d.find_elements("id", "error"))
    assert "wrong email or password" in _by_id(driver, "error").text
    assert _by_id(driver, "email").get_attribute("value") == user.email
    assert _by_id(driver, "password").get_attribute("value") == ""
    assert is_pending(rid)
    assert code_scopes(owner_url, rid) == []
    assert loopback_page.hits == []
    # And a second try with the right password goes through
    _by_id(driver, "password").send_keys(user.password)
    _by_id(driver, "approve").click()
    assert "code" in _landed(driver, loopback_page.callback())


def test_deny_sends_the_user_back_with_access_denied(
    fresh_browser: Any, pages_server: str, loopback_page: Any
) -> None:
    # Given the consent page of a pending request
    rid = new_request(pages_server, loopback_page.callback(), state="deny-state")
    driver = fresh_browser
    driver.get(f"{pages_server}/api/oauth/consent?request={rid}")
    # When the user chooses Deny without signing in
    _by_id(driver, "deny").click()
    # Then the client gets error=access_denied with its state and the issuer, and the request is used up
    query = _landed(driver, loopback_page.callback())
    assert query["error"] == ["access_denied"]
    assert query["state"] == ["deny-state"]
    assert query["iss"] == [pages_server]
    assert not is_pending(rid)


def test_an_unknown_request_shows_a_page_saying_to_start_again(fresh_browser: Any, pages_server: str) -> None:
    driver = fresh_browser
    driver.get(f"{pages_server}/api/oauth/consent?request=00000000-0000-4000-8000-000000000000")
    assert "Start again from the application" in _by_id(driver, "message").text


def test_the_device_page_with_a_prefilled_code_connects_the_device(
    fresh_browser: Any, pages_server: str, user: Account
) -> None:
    from agentmate.auth.oauth import device
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.core.db import get_database

    # Given a device authorization and its verification_uri_complete
    started = new_device(pages_server)
    driver = fresh_browser
    driver.get(started.verification_uri_complete)
    # Then the page shows the client and the scopes, ticked
    assert _by_id(driver, "client-name").text == CLIENT_NAME
    boxes = _scope_boxes(driver)
    assert list(boxes) == list(ASKED)
    # When the user unticks one, signs in and allows
    boxes["todos:rw"].click()
    _sign_in(driver, user.email, user.password)
    _by_id(driver, "approve").click()
    # Then the page says the device is connected, and the device's next poll gets tokens for what was kept
    wait_for(driver, lambda d: d.find_elements("id", "message"))
    assert "your device is connected" in _by_id(driver, "message").text
    answer = device.exchange_device_code(
        get_database(), get_oauth_settings(), client_id="ocl_device-client", device_code=started.device_code
    )
    assert str(answer["access_token"]).startswith("oat_")
    assert answer["scope"] == "todos:r notes:r"
    assert csp_violations(driver) == []


def test_the_device_page_takes_a_typed_code_in_any_case_and_can_deny(
    fresh_browser: Any, pages_server: str
) -> None:
    from agentmate.auth.oauth import device
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.core.db import get_database

    # Given a device authorization and the bare verification_uri
    started = new_device(pages_server, scope="notes:r")
    driver = fresh_browser
    driver.get(started.verification_uri)
    # When the user types the code in lower case without the dash and continues
    _by_id(driver, "user_code").send_keys(started.user_code.replace("-", "").lower())
    _by_id(driver, "continue").click()
    # Then the consent page for that device shows; Deny answers the device access_denied
    wait_for(driver, lambda d: d.find_elements("id", "deny"))
    assert list(_scope_boxes(driver)) == ["notes:r"]
    _by_id(driver, "deny").click()
    wait_for(driver, lambda d: d.find_elements("id", "message"))
    assert "not connected" in _by_id(driver, "message").text
    answer = device.exchange_device_code(
        get_database(), get_oauth_settings(), client_id="ocl_device-client", device_code=started.device_code
    )
    assert answer["error"] == "access_denied"


def test_a_wrong_device_code_shows_the_code_page_with_the_error(
    fresh_browser: Any, pages_server: str
) -> None:
    driver = fresh_browser
    driver.get(f"{pages_server}/api/oauth/device?user_code=BCDF-GHJK")
    assert "unknown or expired code" in _by_id(driver, "error").text
    assert _by_id(driver, "user_code").get_attribute("value") == "BCDF-GHJK"
