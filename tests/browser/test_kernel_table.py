"""A plan's kernel table in a real browser: its DRAM and bandwidth columns, and sorting by a
column's header (numbers by value, missing ones last; a second click the other way)."""
import pytest
from playwright.sync_api import expect

from explorer.presenters import format_bytes
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def test_the_kernel_table_shows_traffic_and_sorts_by_a_column(layer_norm_run, live_server,
                                                               new_page, screenshots):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")
    page.locator('.tabs--small .tabs__tab[data-tab="xla"]').click()
    panel = page.locator('.strategy[data-tab="xla"]:not([hidden])')
    table = panel.locator("table.kernels")
    kernels = layer_norm_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
    expect(table.locator("tbody tr")).to_have_count(len(kernels))
    names = lambda: table.locator("tbody tr").evaluate_all(  # noqa: E731
        "rows => rows.map(row => row.dataset.kernel)")

    # DRAM in binary units, in plan order before any sort.
    column = table.locator("thead th").all_inner_texts().index("DRAM")
    first = table.locator("tbody tr").first.locator("td").nth(column)
    expect(first).to_have_text(format_bytes(kernels[0]["dram_bytes"]))

    # Projected, ascending then descending; ties keep plan order.
    header = table.locator("thead th", has_text="projected").first
    header.click()
    expect(header).to_have_attribute("aria-sort", "ascending")
    order = sorted(range(len(kernels)), key=lambda k: (kernels[k]["proj_us"], k))
    assert names() == [kernels[k]["name"] for k in order]
    header.click()
    expect(header).to_have_attribute("aria-sort", "descending")
    order = sorted(range(len(kernels)), key=lambda k: (-kernels[k]["proj_us"], k))
    assert names() == [kernels[k]["name"] for k in order]

    # By name, as text (loop.10 after loop.9).
    table.locator("thead th", has_text="kernel").first.click()
    assert names() == sorted((k["name"] for k in kernels),
                             key=lambda name: [int(p) if p.isdigit() else p
                                               for p in name.replace(".", " . ").split()])
    screenshots(page, "kernel-table-sorted")
    assert_no_js_errors(page)


def test_the_shown_plan_lives_in_the_url_and_a_link_reopens_it(layer_norm_run, live_server,
                                                                new_page):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    run_url = f"{live_server.url}/r/{layer_norm_run.pk}"

    page.goto(f"{run_url}#h100/xla")
    xla = page.locator('.strategy[data-tab="xla"]:not([hidden])')
    expect(xla.locator("table.kernels tbody tr")).to_have_count(
        len(layer_norm_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]))
    expect(page.locator('.tabs--small .tabs__tab.is-active')).to_have_text("xla")

    page.locator('.tabs--small .tabs__tab[data-tab="stitch"]').click()
    expect(page).to_have_url(f"{run_url}#h100/stitch")
    page.reload()
    expect(page.locator('.tabs--small .tabs__tab.is-active')).to_have_text("stitch")
    expect(page.locator('.strategy[data-tab="stitch"]:not([hidden]) table.kernels')).to_be_visible()
    assert_no_js_errors(page)


def test_a_big_plans_table_holds_its_first_rows_and_sorting_loads_them_all(
        step_12_run, live_server, new_page):
    from explorer.views import KERNEL_ROWS_SHOWN

    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{step_12_run.pk}#h100/cost")
    panel = page.locator('.strategy[data-tab="cost"]:not([hidden])')
    table = panel.locator("table.kernels")
    kernels = step_12_run.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]
    assert len(kernels) > KERNEL_ROWS_SHOWN
    expect(table.locator("tbody tr")).to_have_count(KERNEL_ROWS_SHOWN)
    expect(panel.locator("[data-show-all]")).to_have_text(f"Show all {len(kernels)}")

    # Sorting needs every row: they are loaded first, then sorted, the largest first.
    header = table.locator("thead th", has_text="projected").first
    header.click()
    header.click()
    expect(header).to_have_attribute("aria-sort", "descending")
    expect(table.locator("tbody tr")).to_have_count(len(kernels))
    expect(panel.locator(".kernels__more")).to_have_count(0)
    order = sorted(range(len(kernels)), key=lambda k: (-kernels[k]["proj_us"], k))
    names = table.locator("tbody tr").evaluate_all("rows => rows.map(row => row.dataset.kernel)")
    assert names == [kernels[k]["name"] for k in order]
    assert_no_js_errors(page)
