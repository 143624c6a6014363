"""Interactive charts in a real browser (explorer/plots.py, static/explorer/plots.js): plotly.js
loads only when a chart is opened, draws under the Content-Security-Policy, a hover names the
kernel under the pointer and a click opens its page."""
import pytest
from playwright.sync_api import expect

from tests.browser.test_csp import RECORD_VIOLATIONS, violations
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def plotly_requested(page) -> bool:
    return page.evaluate("performance.getEntriesByType('resource')"
                         ".some(entry => entry.name.includes('plotly-basic'))")


def test_a_plans_roofline_hovers_and_clicks_through_to_a_kernel(layer_norm_run, live_server,
                                                                 new_page, screenshots):
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")
    page.locator('.tabs--small .tabs__tab[data-tab="xla"]').click()
    panel = page.locator('.strategy[data-tab="xla"]:not([hidden])')
    expect(panel.locator("table.kernels tbody tr").first).to_be_visible()
    # Nothing of plotly.js before a chart is opened: the page's first view does not pay for it.
    assert not plotly_requested(page)

    panel.locator("details[data-plots] summary").click()
    panel.locator('[data-plot-tab="roofline"]').click()
    chart = panel.locator('[data-iplot][data-chart="roofline"]')
    expect(chart.locator(".main-svg").first).to_be_attached()
    assert plotly_requested(page)
    kernels = layer_norm_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
    points = chart.locator(".scatterlayer .trace:nth-child(2) .point")
    expect(points.first).to_be_visible()
    placed = points.count()
    assert 0 < placed <= len(kernels)

    # Hovering a point shows its kernel's card; the point's name is one of the plan's kernels.
    points.first.hover(force=True)
    label = page.locator(".hoverlayer .hovertext")
    expect(label).to_be_visible()
    text = label.text_content()
    named = [k["name"] for k in kernels if k["name"] in text]
    assert named, text
    screenshots(page, "plan-roofline-hover")

    # Clicking it opens that kernel's page.
    points.first.click(force=True)
    page.wait_for_url(f"**/r/{layer_norm_run.pk}/h100/xla/**")
    assert page.url.rsplit("/", 1)[1] in named
    assert violations(page) == []
    assert_no_js_errors(page)


def test_measured_against_predicted_says_so_when_nothing_was_measured(layer_norm_run,
                                                                       live_server, new_page):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")
    page.locator('.tabs--small .tabs__tab[data-tab="cost"]').click()
    panel = page.locator('.strategy[data-tab="cost"]:not([hidden])')
    panel.locator("details[data-plots] summary").click()
    panel.locator('[data-plot-tab="accuracy"]').click()
    chart = panel.locator('[data-iplot][data-chart="accuracy"]')
    expect(chart).to_contain_text("Not measured")
    expect(panel.locator('[data-iplot][data-chart="roofline"]')).to_be_hidden()
    assert_no_js_errors(page)
