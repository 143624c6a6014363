"""A plan's decision log in a real browser: the filter finds decisions by the kernels their
nodes ended in (loop.3, input.7), not only by node names and reasons."""
import pytest
from playwright.sync_api import expect

from explorer.presenters import decision_rows
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def test_the_decision_filter_finds_a_kernels_decisions_by_its_name(layer_norm_run, live_server,
                                                                    new_page, screenshots):
    xla = layer_norm_run.artifact["devices"]["h100"]["strategies"]["xla"]
    rows = decision_rows(xla)
    # A kernel of several nodes: its decisions name those nodes, never the kernel itself.
    kernel = next(k["name"] for k in xla["kernels"] if len(k["nodes"]) > 2)
    expected = [row for row in rows if kernel in row["kernels"]]
    assert expected and not any(kernel in row["subject"] + row["reason"] for row in rows)

    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{layer_norm_run.pk}#h100/xla")
    panel = page.locator('.strategy[data-tab="xla"]:not([hidden])')
    panel.locator("[data-decision-text]").fill(kernel)

    expect(panel.locator("[data-decision-shown]")).to_have_text(
        f"{len(expected)} of {len(rows)}")
    shown = panel.locator(".decisions tbody tr")
    expect(shown).to_have_count(len(expected))
    for index, row in enumerate(expected):
        cells = shown.nth(index).locator("td")
        expect(cells.nth(1)).to_have_text(row["subject"])
        expect(cells.nth(2)).to_contain_text(kernel)
    screenshots(page, "decision-log-by-kernel")
    assert_no_js_errors(page)
