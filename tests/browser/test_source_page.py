"""The uploaded source in a real browser: reached from the run page, its lines coloured by the
kernel of the chosen plan, `#L12-L20` marking a range, a line's kernel link opening that
kernel's page, and the plan picker switching the colours."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LAYER_NORM_BWD
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def test_the_source_marks_ranges_links_kernels_and_follows_the_plan(layer_norm_run,
                                                                    live_server, new_page,
                                                                    screenshots):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")
    page.locator("#source-link").click()
    expect(page.locator("h1")).to_contain_text(LAYER_NORM_BWD.name)
    lines = page.locator("#upload > li")
    expect(lines).to_have_count(len(LAYER_NORM_BWD.read_text().splitlines()))

    # The fastest plan by default: every kernel-coloured line names a kernel of that plan.
    plans = layer_norm_run.artifact["devices"]["h100"]["strategies"]
    # The lowest projected total, ties to the earlier strategy in exploration order.
    fastest = min(plans, key=lambda name: plans[name]["total"]["proj_us"])
    expect(page.locator('select[name="strategy"]')).to_have_value(fastest)
    names = {kernel["name"] for kernel in plans[fastest]["kernels"]}
    coloured = page.locator("#upload > li.has-kernel")
    assert coloured.count() > 3
    assert {coloured.nth(k).get_attribute("data-kernel") for k in range(coloured.count())} <= names

    # A range in the URL marks its lines; a single line is the :target.
    page.goto(page.url.split("#")[0] + "#L5-L9")
    expect(page.locator("#upload > li.is-marked")).to_have_count(5)
    expect(page.locator("#L5")).to_have_class(re.compile(r"\bis-marked\b"))
    screenshots(page, "source-range")

    # The xla plan: more kernels, other colours; a line's kernel link opens that kernel's page.
    page.locator('select[name="strategy"]').select_option("xla")
    page.locator("#source-plan button").click()
    expect(page.locator('select[name="strategy"]')).to_have_value("xla")
    link = page.locator("#upload > li.has-kernel .upload__kernel").first
    kernel = link.inner_text().removeprefix("also in ")
    assert kernel in {k["name"] for k in plans["xla"]["kernels"]}
    link.click()
    expect(page).to_have_url(f"{live_server.url}/r/{layer_norm_run.pk}/h100/xla/{kernel}")
    assert_no_js_errors(page)
