"""A user's whole path through the app in a real browser: log in, upload an HLO file, wait for
the worker's results, read the comparison and the charts, open a kernel, and share the
permalink (the owner again in a new session, a stranger, an anonymous visitor)."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from explorer.models import KernelSource, Run
from explorer.presenters import comparison_rows
from explorer.templatetags.explorer_format import us
from tests.browser.waits import TEST_TIMEOUT_S, wait_for_run

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo" / "attention_block.hlo"
# Every box is ticked by default: our four strategies and XLA:GPU's own plan.
STRATEGIES = ["unfused", "xla", "stitch", "cost", "xla-gpu"]

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def log_in(page, base_url: str, username: str, next_path: str = "/"):
    page.goto(f"{base_url}/accounts/login/?next={next_path}")
    page.fill("#id_username", username)
    page.fill("#id_password", f"{username}-password-1")
    with page.expect_navigation():
        page.click("form.card button[type=submit]")
    expect(page.locator(".site-header__user")).to_have_text(username)


def assert_no_js_errors(page) -> None:
    assert page.js_errors == [], f"JavaScript errors on {page.url}:\n" + "\n".join(
        page.js_errors)


def check_comparison_table(page, run: Run) -> None:
    """One row per strategy, whose totals are the ones in the run's artifact."""
    expected = comparison_rows(run.artifact["devices"]["h100"])
    rows = page.locator(".device:not([hidden]) .comparison__table tbody tr")
    assert rows.count() == len(STRATEGIES)
    for index, row in enumerate(expected):
        cells = rows.nth(index).locator("th, td").all_inner_texts()
        assert cells[0] == row["strategy"]
        assert int(cells[1]) == row["kernels"]
        # SOL and projected device work, then the launches and the total as the run's
        # runtime (a CUDA graph) prices them: only that runtime's figures are on screen.
        graph = dict(row["by_runtime"])["graph"]
        assert cells[3:7] == [us(row["sol_us"]), us(row["device_us"]), us(graph["launch_us"]),
                              us(graph["proj_us"])]
        # No GPU worker in the tests: a dash that says why when hovered, never a number.
        assert cells[7] == "–"
        measured = rows.nth(index).locator("td.comparison__measured span:visible")
        assert "not measured" in measured.get_attribute("title")


def check_charts(page) -> None:
    """The comparison bars (inline SVG, one per strategy for SOL and for projected) are on
    screen, and the fusion view (a canvas) is drawn."""
    bars = page.locator('.device:not([hidden]) .plot[data-chart$="/comparison"]:visible '
                        '.chart__bar')
    expect(bars).to_have_count(2 * len(STRATEGIES))
    expect(bars.first).to_be_visible()
    expect(page.locator('#fusion-graph[data-ready="true"]')).to_be_attached()


def check_plan_tabs(page, run: Run, screenshots) -> None:
    """Another strategy's tab loads its panel on first click and switches the fusion view; a
    click on a kernel there gives its figures, the limiter colouring its legend, and the
    decision filter narrows the log."""
    page.locator('.device:not([hidden]) .tabs--small .tabs__tab[data-tab="xla"]').click()
    panel = page.locator('.device:not([hidden]) .strategy[data-tab="xla"]:not([hidden])')
    xla = run.artifact["devices"]["h100"]["strategies"]["xla"]
    panel.locator("table.kernels").wait_for()
    assert panel.locator("table.kernels tbody tr").count() == len(xla["kernels"])
    view = page.locator("#fusion-graph")
    expect(view).to_have_attribute("data-strategy", "xla")
    expect(page.locator('#fusion-graph[data-ready="true"]')).to_be_attached()

    # Click the first kernel where the fusion view drew it.
    name = xla["kernels"][0]["name"]
    view.scroll_into_view_if_needed()
    box = page.evaluate("(name) => document.getElementById('fusion-graph').fusionView"
                        ".locate(name)", name)
    canvas = view.locator("canvas.fusion__canvas").bounding_box()
    page.mouse.click(canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + box["h"] / 2)
    info = page.locator("#fusion-info")
    expect(info.locator("h4")).to_have_text(name)
    expect(info).to_contain_text(f"{len(stored_kernel(run, 'xla', name)['nodes'])} ops")
    screenshots(page, "run-xla-plan")

    # Coloured by limiter: the legend names each limiter of the plan.
    page.locator("#fusion-colour").select_option("limiter")
    limiters = {k["limiter"] for k in xla["kernels"] if k["limiter"]}
    legend = page.locator("#fusion-legend li").all_inner_texts()
    assert limiters <= {text.strip() for text in legend}

    node = xla["decisions"][-1]["subject"].split()[0]
    panel.locator("[data-decision-text]").fill(node)
    panel.locator("[data-decision-shown]").filter(has_text=" of ").wait_for()
    rows = panel.locator(".decisions tbody tr").all_inner_texts()
    expected = [d for d in xla["decisions"]
                if node.lower() in f"{d['action']} {d['subject']} {d['reason']}".lower()]
    assert len(rows) == len(expected) and all(node in row for row in rows)


def ask_for_a_measurement(page) -> None:
    """No GPU worker runs in the tests: the measurement is queued and the page says it waits."""
    page.get_by_role("button", name="Measure on a GPU").click()
    page.wait_for_load_state()
    page.locator("#measurement[data-state=queued]").wait_for()
    expect(page.locator("#measurement")).to_contain_text("waits until a GPU worker comes online")


def stored_kernel(run: Run, strategy: str, name: str) -> dict:
    kernels = run.artifact["devices"]["h100"]["strategies"][strategy]["kernels"]
    return next(kernel for kernel in kernels if kernel["name"] == name)


def check_kernel_page(page, run: Run) -> None:
    """The source is shown, and clicking a source line marks the graph nodes it computes."""
    strategy, kernel = page.url.split("/")[-2:]
    stored = KernelSource.objects.get(run=run, device="h100", strategy=strategy, kernel=kernel)
    lines = page.locator("#source > li")
    assert lines.count() == len(stored.source.splitlines())
    assert stored.function in page.locator("#source").inner_text()

    # A line that computes one of the kernel's own nodes (others load its inputs).
    computed = set(stored_kernel(run, strategy, kernel)["nodes"])
    number, nodes = next((int(line), nodes) for line, nodes in
                         sorted(stored.line_nodes.items(), key=lambda item: int(item[0]))
                         if computed & set(nodes))
    page.locator(f"#L{number}").click()
    expect(page.locator(f"#L{number}")).to_have_class(re.compile(r"\bis-marked\b"))
    marked_nodes = page.locator(".code__nodes .node.is-marked")
    marked_nodes.first.wait_for()
    marked = marked_nodes.all_inner_texts()
    assert set(marked) <= set(nodes)

    # And back: clicking a node marks its source lines.
    page.locator(f'#nodes .node[data-node="{marked[0]}"]').click()
    page.locator("#source > li.is-marked").first.wait_for()
    # The kernel's charts, inline SVG: the pipes' bars and the roofline's point on screen.
    expect(page.locator('.plot[data-chart="pipes"] .chart__bar').first).to_be_visible()
    expect(page.locator('.plot[data-chart="roofline"] .chart__point').first).to_be_attached()


def compare_strategies(page, base_url: str, run_path: str, run: Run) -> None:
    """The run page's picker opens unfused against cost; every kernel of both plans is in the
    matching table and the delta chart is drawn."""
    page.goto(f"{base_url}{run_path}")
    with page.expect_navigation():
        page.click("#compare-strategies button[type=submit]")
    assert page.url.startswith(f"{base_url}/compare?")
    strategies = run.artifact["devices"]["h100"]["strategies"]
    table = page.locator(".compare__kernels").inner_text()
    for strategy in ("unfused", "cost"):
        for kernel in strategies[strategy]["kernels"]:
            assert kernel["name"] in table
    expect(page.locator('.plot[data-chart="deltas"] .chart__bar').first).to_be_visible()
    assert_no_js_errors(page)


def compare_cuda(page, base_url: str, run: Run, screenshots) -> None:
    """The compare page's own picker puts the xla plan on side B; a matched kernel's "diff"
    link shows the two kernels' CUDA as a diff."""
    page.select_option("#compare-pick select[name=b]", f"{run.pk}:h100:xla")
    with page.expect_navigation():
        page.click("#compare-pick button[type=submit]")
    expect(page.locator(".compare__side--b")).to_contain_text("strategy xla")
    with page.expect_navigation():
        page.locator(".compare__kernels a.compare__diff").first.click()
    assert page.url.startswith(f"{base_url}/compare/cuda?")
    expect(page.locator("h1")).to_have_text("CUDA diff")
    expect(page.locator("#diff-summary")).to_contain_text("KERNEL")
    screenshots(page, "compare-cuda")
    assert_no_js_errors(page)


@pytest.fixture
def measure_queue(redis_url, monkeypatch):
    """Measurements asked for in the test go to the test Redis's gpu queue, where no worker
    consumes them (and gpu-worker announcements are read from there)."""
    from django.conf import settings

    from explorer import runs
    from workers import app
    from workers.tasks import measure_run

    def enqueue(measurement_id: int) -> None:
        with app.connection_for_write(redis_url) as connection:
            measure_run.apply_async((measurement_id,), connection=connection)
    monkeypatch.setattr(runs, "enqueue_measure", enqueue)
    monkeypatch.setattr(settings, "REDIS_URL", redis_url)


def test_a_user_uploads_hlo_sees_results_opens_a_kernel_and_shares_the_link(
        users, compile_queue, measure_queue, live_server, new_page, screenshots):
    base_url = live_server.url
    page = new_page()
    log_in(page, base_url, "ada")

    page.set_input_files("#upload-form input[name=graph_file]", str(HLO))
    expect(page.locator("#chosen-file")).to_contain_text(HLO.name)
    for strategy in STRATEGIES:
        assert page.locator(f'input[name=strategies][value="{strategy}"]').is_checked()
    page.fill("#id_name", "attention block")
    screenshots(page, "upload")
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")

    assert re.fullmatch(rf"{re.escape(base_url)}/r/\w{{22}}", page.url), page.url
    run_path = page.url.removeprefix(base_url)
    run = wait_for_run(page, run_path.split("/")[-1])
    assert run.owner == users["owner"]
    check_comparison_table(page, run)
    check_charts(page)
    assert_no_js_errors(page)
    screenshots(page, "run")
    check_plan_tabs(page, run, screenshots)
    assert_no_js_errors(page)
    page.locator('.device:not([hidden]) .tabs--small .tabs__tab[data-tab="cost"]').click()

    # The first generated kernel of the plan shown (library calls have no source).
    kernels = run.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]
    kernel = next(kernel["name"] for kernel in kernels if kernel.get("function"))
    page.locator(".strategy:not([hidden]) table.kernels tbody a").get_by_text(
        kernel, exact=True).click()
    page.wait_for_url(f"{base_url}{run_path}/h100/cost/{kernel}")
    check_kernel_page(page, run)
    assert_no_js_errors(page)
    screenshots(page, "kernel")

    page.goto(f"{base_url}{run_path}")
    ask_for_a_measurement(page)
    assert_no_js_errors(page)

    # Two strategies side by side, picked on the run page; then the history lists the run.
    compare_strategies(page, base_url, run_path, run)
    screenshots(page, "compare")
    compare_cuda(page, base_url, run, screenshots)
    page.goto(f"{base_url}/runs")
    assert page.locator(".history__table tbody tr").count() == 1
    assert "attention block" in page.locator(".history__table").inner_text()
    assert_no_js_errors(page)
    screenshots(page, "history")

    # The permalink in a new session: the owner logs in again and sees the same results.
    owner_again = new_page()
    log_in(owner_again, base_url, "ada", next_path=run_path)
    assert owner_again.url == f"{base_url}{run_path}"
    check_comparison_table(owner_again, run)
    check_charts(owner_again)
    assert_no_js_errors(owner_again)

    # A stranger gets a 404 for a private run; an anonymous visitor is asked to log in.
    stranger = new_page()
    log_in(stranger, base_url, "eve")
    assert stranger.goto(f"{base_url}{run_path}").status == 404
    anonymous = new_page()
    anonymous.goto(f"{base_url}{run_path}")
    assert anonymous.url.startswith(f"{base_url}/accounts/login/")

    # Once the owner makes the run public, anyone with the link sees it, without logging in.
    page.goto(f"{base_url}{run_path}")
    page.locator(".run__settings summary").click()
    page.select_option("#settings-form select[name=visibility]", "public")
    with page.expect_navigation():
        page.click("#settings-form button[type=submit]")
    assert Run.objects.get(pk=run.pk).visibility == Run.PUBLIC
    assert anonymous.goto(f"{base_url}{run_path}").status == 200
    check_comparison_table(anonymous, run)
    check_charts(anonymous)
    assert_no_js_errors(anonymous)
    assert stranger.goto(f"{base_url}{run_path}").status == 200
