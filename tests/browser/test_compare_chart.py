"""The compare page's chart of the largest projected deltas (explorer/charts.py's
horizontal_bars, explorer/compare.html) as a browser draws it: its labels at the page's text
size and a bar no taller than a table row, however wide the page is."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import explored_run
from tests.browser.test_fusion_view_wide import ADAM_48
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

CHART = '[data-chart="deltas"] svg'
# Text on the page is 11-16 CSS pixels tall (small print to body text); a row of the kernel
# table below the chart is about 30 pixels.
TEXT_PX = (10, 16)
ROW_PX = 30


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_delta_chart_draws_page_sized_labels_and_rows(users, live_server, new_page,
                                                          screenshots, width):
    run = explored_run(users["owner"], "d" * 22, ADAM_48, ["unfused", "cost"],
                       "48-tensor Adam step")
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/compare?a={run.pk}:h100:unfused&b={run.pk}:h100:cost")
    chart = page.locator(CHART)
    expect(chart).to_be_visible()
    bars = chart.locator("rect.chart__bar")
    assert bars.count() == 20        # the 20 largest deltas

    box = chart.bounding_box()
    assert box["height"] / bars.count() <= ROW_PX, f"{box['height']:.0f} px for 20 bars"
    heights = [page.evaluate("(e) => e.getBoundingClientRect().height", label)
               for label in chart.locator("text").element_handles()]
    assert all(TEXT_PX[0] <= height <= TEXT_PX[1] for height in heights), heights
    page.locator('[data-chart="deltas"]').scroll_into_view_if_needed()
    screenshots(page, f"compare-deltas-{width}", '[data-chart="deltas"]')
    assert_no_js_errors(page)
