"""The Content-Security-Policy in a real browser: every kind of page works under it with no
violation (its scripts and styles are static files; styles set from scripts go through the
DOM), and an injected inline handler is refused by it."""
import pytest

from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

# Set before any page script runs: every violation the page reports, kept on window.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`);
});
"""


def violations(page) -> list[str]:
    return page.evaluate("window.__violations")


def test_every_page_runs_under_the_policy_and_an_injected_handler_does_not(
        layer_norm_run, live_server, new_page):
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    run = layer_norm_run
    kernel = run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"][0]["name"]
    log_in(page, live_server.url, "ada", next_path=f"/r/{run.pk}")
    policy = page.request.get(f"{live_server.url}/r/{run.pk}").headers[
        "content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy

    paths = ["/", f"/r/{run.pk}", f"/r/{run.pk}/source", f"/r/{run.pk}/h100/xla/{kernel}",
             f"/compare?a={run.pk}:h100:xla&b={run.pk}:h100:cost", "/runs", "/cost-models",
             "/account/api-tokens", f"/r/{run.pk}/delete"]
    for path in paths:
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        if path == f"/r/{run.pk}":
            # What the run page loads on demand: another plan's panel and the fusion view.
            tabs = page.locator("nav.tabs--small .tabs__tab:not(.is-active)")
            tabs.first.click()
            page.wait_for_load_state("networkidle")
        assert violations(page) == [], f"{path}: {violations(page)}"
    assert_no_js_errors(page)

    # The control: markup slipped into the page with an inline handler does not run, and the
    # browser reports the refusal.
    page.evaluate("""document.body.insertAdjacentHTML(
        "beforeend", '<img src="data:," onload="window.__ran = true">')""")
    page.wait_for_function("window.__violations.length > 0")
    assert page.evaluate("window.__ran === undefined")
    assert any(v.startswith("script-src") for v in violations(page))
