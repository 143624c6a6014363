"""Issue 34 in Chromium: behind a reverse proxy (the stand-in of forwarding_proxy.py, which
sets X-Forwarded-For as the README's nginx line does) with TRUSTED_PROXIES=1, a stranger at
another address guesses a user's password until that address is locked, claiming the user's
address in a header of its own; the user still logs in through the proxy from theirs, and
their own failed tries show the lock's message in the log-in form."""
import re
from http.client import HTTPConnection
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urlsplit

import pytest
from axes.models import AccessAttempt
from playwright.sync_api import expect

from tests.browser.forwarding_proxy import ForwardingProxy
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

# Loopback is all of 127.0.0.0/8: the stranger connects to the proxy from this address, the
# browser from 127.0.0.1.
STRANGER = "127.0.0.2"
LOCKED = re.compile(r"Too many failed log-ins from your address\. Try again in 15 minutes")


def stranger_logs_in(proxy_url: str, password: str) -> tuple[int, str]:
    """A log-in as "ada" sent from STRANGER through the proxy (the form first, for its CSRF
    token), with an X-Forwarded-For of its own naming the browser's address."""
    port = urlsplit(proxy_url).port

    def request(method: str, headers: dict, body: str | None = None):
        connection = HTTPConnection("127.0.0.1", port, timeout=60,
                                    source_address=(STRANGER, 0))
        try:
            connection.request(method, "/accounts/login/", body=body,
                               headers={"X-Forwarded-For": "127.0.0.1", **headers})
            answer = connection.getresponse()
            return answer, answer.read().decode()
        finally:
            connection.close()

    answer, page = request("GET", {})
    token = SimpleCookie(answer.headers["Set-Cookie"])["csrftoken"].value
    form_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    answer, page = request(
        "POST", {"Cookie": f"csrftoken={token}",
                 "Content-Type": "application/x-www-form-urlencoded"},
        urlencode({"csrfmiddlewaretoken": form_token, "username": "ada",
                   "password": password}))
    return answer.status, page


def test_a_user_logs_in_through_the_proxy_while_a_strangers_address_is_locked(
        users, live_server, new_page, settings):
    settings.TRUSTED_PROXIES = 1
    with ForwardingProxy(urlsplit(live_server.url).port) as proxy:
        for _ in range(settings.LOGIN_FAILURES_ALLOWED):
            stranger_logs_in(proxy.url, "a-guess")
        status, page = stranger_logs_in(proxy.url, "ada-password-1")
        assert status == 429 and LOCKED.search(page)
        assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {STRANGER}

        ada = new_page()
        log_in(ada, proxy.url, "ada")
        assert_no_js_errors(ada)

        eve = new_page()
        eve.goto(f"{proxy.url}/accounts/login/")
        for _ in range(settings.LOGIN_FAILURES_ALLOWED):
            eve.fill("#id_username", "eve")
            eve.fill("#id_password", "not-her-password")
            with eve.expect_navigation():
                eve.click("form.card button[type=submit]")
        expect(eve.locator(".errorlist.nonfield")).to_have_text(LOCKED)
        # Chromium logs the page's 429 as a console error: the lock's status, no script's fault.
        assert [error for error in eve.js_errors if "status of 429" not in error] == []
