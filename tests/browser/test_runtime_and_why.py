"""Launch terms in a real browser: the run page's runtime switch re-prices the comparison at
once (and a link keeps the choice), and the compare page says why one plan is faster than
another by cause and region, each region one click from the fusion view."""
import re

import pytest
from playwright.sync_api import expect

from compiler.fusion.attribution import CAUSE_LABELS, explain
from explorer.templatetags.explorer_format import us
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def shown_total(page, strategy: str) -> str:
    """The projected total cell's visible text in a strategy's comparison row."""
    cell = page.locator(f'.comparison__table tr[data-strategy="{strategy}"] '
                        f'td.comparison__projected span:visible')
    expect(cell).to_have_count(1)
    return cell.inner_text().strip()


def test_the_runtime_switch_reprices_the_comparison_at_once(layer_norm_run, live_server,
                                                            new_page, screenshots):
    strategies = layer_norm_run.artifact["devices"]["h100"]["strategies"]
    totals = {name: plan["total"]["runtimes"] for name, plan in strategies.items()}
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")

    # The run's own runtime first: a CUDA graph.
    expect(page.locator('[data-runtime-choice="graph"]')).to_have_attribute("aria-pressed",
                                                                           "true")
    for name in strategies:
        assert shown_total(page, name) == us(totals[name]["graph"]["proj_us"])
    fastest = min(totals, key=lambda name: totals[name]["graph"]["proj_us"])
    expect(page.locator(".comparison__table tr[data-fastest~='graph']").first).to_have_attribute(
        "data-strategy", fastest)
    why = page.locator(".why").first
    expect(why.locator("h3")).to_contain_text(f"Why {fastest} is faster than xla")
    expect(why.locator("[data-runtime='graph'] p").first).to_contain_text(
        f"{fastest} is")
    screenshots(page, "run-runtime-graph")

    # Stream launches: every total changes, without a request.
    page.locator('[data-runtime-choice="stream"]').click()
    expect(page.locator('[data-runtime-choice="stream"]')).to_have_attribute("aria-pressed",
                                                                            "true")
    for name in strategies:
        assert shown_total(page, name) == us(totals[name]["stream"]["proj_us"])
    assert re.search(r"[?&]runtime=stream", page.url)
    launch = page.locator(".comparison__table tr[data-strategy='unfused'] "
                          "td.comparison__launch span:visible")
    expect(launch).to_have_text(us(totals["unfused"]["stream"]["launch_us"]))
    screenshots(page, "run-runtime-stream")

    # A link keeps the choice.
    page.goto(page.url)
    for name in strategies:
        assert shown_total(page, name) == us(totals[name]["stream"]["proj_us"])
    assert_no_js_errors(page)


def test_the_compare_page_says_why_b_is_faster_by_cause_and_region(layer_norm_run, live_server,
                                                                 new_page, screenshots):
    strategies = layer_norm_run.artifact["devices"]["h100"]["strategies"]
    run = layer_norm_run.pk
    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/compare?a={run}:h100:xla&b={run}:h100:cost&runtime=stream")

    why = page.locator("#why")
    expect(why.locator("[data-runtime='stream'] h2")).to_have_text("Why B is faster, by cause")
    expected = explain(strategies["xla"], strategies["cost"], "stream")
    expect(why.locator(".why__runtime[data-runtime='stream'] .why__summary")).to_contain_text(
        f"B (cost) is {abs(expected['delta_us']):,.1f} µs faster than A (xla)")
    causes = why.locator(".why__runtime[data-runtime='stream'] table.why__causes tbody tr")
    expect(causes).to_have_count(len(CAUSE_LABELS))
    expect(causes.first.locator("th")).to_have_text(expected["causes"][0]["label"])
    regions = why.locator("table.why__regions tbody tr[data-runtime='stream']")
    expect(regions.first).to_be_visible()
    top = expected["regions"][0]
    expect(regions.first.locator("td").nth(5)).to_have_text(
        ("+" if top["delta_us"] >= 0 else "−") + us(abs(top["delta_us"])))
    screenshots(page, "compare-why")

    # Switching the runtime re-prices the causes.
    page.locator('[data-runtime-choice="graph"]').click()
    graph = explain(strategies["xla"], strategies["cost"], "graph")
    expect(why.locator(".why__runtime[data-runtime='graph'] .why__summary")).to_be_visible()
    expect(why.locator(".why__runtime[data-runtime='graph'] .why__summary")).to_contain_text(
        f"{abs(graph['delta_us']):,.1f} µs faster")
    expect(why.locator(".why__runtime[data-runtime='stream']")).to_be_hidden()

    # One click into the region in the fusion view: B's plan, the region's first kernel,
    # A's plan beside it.
    graph_regions = why.locator("table.why__regions tbody tr[data-runtime='graph']")
    first = graph["regions"][0]
    graph_regions.first.locator("a", has_text="open").click()
    expect(page.locator("#fusion-graph")).to_have_attribute("data-strategy", "cost")
    # The view writes the comparison into the address after it draws the plan: wait for it.
    expect(page).to_have_url(re.compile(re.escape(f"#h100/cost/{first['b'][0]}~h100/xla")))
    assert_no_js_errors(page)
