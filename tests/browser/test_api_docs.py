"""The API docs page in a real browser: Swagger UI, served from the app's own static files,
draws every operation of the OpenAPI document the API generates, under the site's
Content-Security-Policy, and "Try it out" runs a request."""
import pytest
from playwright.sync_api import expect

from explorer.api import schema
from tests.browser.test_csp import RECORD_VIOLATIONS, violations
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def test_the_docs_show_every_operation_and_try_one(live_server, new_page, users, screenshots):
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    log_in(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/api/")        # leads to the docs

    operations = sum(len(methods) for methods in schema(live_server.url)["paths"].values())
    blocks = page.locator(".opblock")
    expect(blocks).to_have_count(operations)
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    screenshots(page, "api-docs")

    # Try GET /cost-models as the logged-in user: a real request through the session.
    block = page.locator(".opblock-get", has_text="/cost-models")
    block.locator(".opblock-summary").click()
    block.get_by_role("button", name="Try it out").click()
    block.get_by_role("button", name="Execute").click()
    expect(block.locator(".live-responses-table tbody .response-col_status").first).to_have_text("200")

    assert violations(page) == []
    assert_no_js_errors(page)
    elsewhere = [url for url in requests if not url.startswith(live_server.url)
                 and not url.startswith("data:")]
    assert elsewhere == []
