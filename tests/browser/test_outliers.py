"""A plan with outliers in a real browser: the comparison says which cost model or which rules
decided each plan, the plan's panel summarises the kernels projected far above their speed of
light (worst first, linked, with their reasons) and flags their rows, and an outlier's kernel
page says why over its projected breakdown.

No test graph has an outlier (the cost search and the schedules avoid them), so the run is
stored directly, from layer_norm_bwd.hlo's artifact with three of its xla kernels flagged as the
compiler flags them (tests/explorer/outliers.py): no worker compiles it."""
import pytest
from playwright.sync_api import expect

from compiler.stages.pipeline import compile_graph
from explorer.models import Run
from tests.browser.conftest import LAYER_NORM_BWD, STRATEGIES, store_done_run
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S
from tests.explorer.outliers import with_outliers

HLO = LAYER_NORM_BWD
# Projected over SOL of the xla plan's first three kernels, in plan order.
RATIOS = [35.0, 220.0, 64.0]

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


@pytest.fixture
def outlier_run(users) -> Run:
    artifact = with_outliers(compile_graph(HLO.read_bytes(), HLO.name, ["h100"], STRATEGIES),
                             "h100", "xla", RATIOS)
    return store_done_run(users["owner"], "o" * 22, artifact, HLO)


def test_a_plan_with_outliers_lists_them_worst_first_and_its_kernel_page_says_why(
        outlier_run, live_server, new_page, screenshots):
    base_url = live_server.url
    page = new_page()
    log_in(page, base_url, "ada", next_path=f"/r/{outlier_run.pk}")
    kernels = outlier_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]

    # The comparison's last column: the cost strategy's model, the others' rules.
    deciders = page.locator(".comparison__table tbody .comparison__decider")
    expect(deciders).to_have_text(["rules", "rules", "rules", "projected model"])
    expect(deciders.nth(1)).to_have_attribute("title", "XLA's fusion rules")

    # The xla plan, loaded when its tab is opened: the summary over the kernel table, worst
    # first, each linked to its page, and the rules that decided the plan over its decisions.
    page.locator('.tabs--small .tabs__tab[data-tab="xla"]').click()
    panel = page.locator('.strategy[data-tab="xla"]:not([hidden])')
    summary = panel.locator("details.outliers")
    expect(summary.locator("summary")).to_contain_text(
        "3 kernels project ≥ 20× their speed of light")
    worst_first = [kernels[i] for i in (1, 2, 0)]
    items = summary.locator(".outliers__list li")
    expect(items.locator("a")).to_have_text([k["name"] for k in worst_first])
    expect(items.locator(".outliers__ratio")).to_have_text(["220×", "64×", "35×"])
    expect(items.locator(".outliers__reason")).to_have_text(
        [k["outlier_reason"] for k in worst_first])
    expect(panel.locator(".decisions__decider")).to_contain_text(
        "Fusions decided by rules — XLA's fusion rules")

    # Their rows are marked, with the reason on the ratio; the other rows are not.
    expect(panel.locator("table.kernels tbody tr")).to_have_count(len(kernels))
    expect(panel.locator("table.kernels tr.is-outlier")).to_have_count(3)
    cell = panel.locator(f'tr[data-kernel="{kernels[1]["name"]}"] .kernels__ratio')
    expect(cell).to_have_text("220× ⚠")
    expect(cell).to_have_attribute("title", kernels[1]["outlier_reason"])
    expect(page.locator('.plot--bars[data-chart="h100/comparison"] svg .chart__bar').first) \
        .to_be_visible()
    expect(page.locator("#fusion-graph")).to_have_attribute("data-strategy", "xla")
    assert_no_js_errors(page)
    screenshots(page, "run-outliers")

    # The worst one's page: the ratio among its figures, and the reason over its projected
    # breakdown, which the figure's marker links to.
    items.first.locator("a").click()
    page.wait_for_url(f"{base_url}/r/{outlier_run.pk}/h100/xla/{kernels[1]['name']}")
    expect(page.locator(".stat--outlier")).to_contain_text("220× ⚠ outlier")
    expect(page.locator("#projected .outlier")).to_contain_text(kernels[1]["outlier_reason"])
    expect(page.locator("#projected .projected__line")).to_contain_text(
        f"under the {kernels[1]['schedule']} schedule")
    page.locator(".stat--outlier a").click()
    page.wait_for_url(f"{base_url}/r/{outlier_run.pk}/h100/xla/{kernels[1]['name']}#projected")
    assert_no_js_errors(page)
    screenshots(page, "kernel-outlier")
