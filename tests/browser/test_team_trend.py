"""Issue 40's weekly review on the team's page, in Chromium: a graph whose run is the baseline
of `main` is tracked, with the latest run carrying the tag against it and the trend of the
best projected total over the tag's runs drawn as a chart; a run of the graph without the tag
stays out of the trend."""
import copy

import pytest
from playwright.sync_api import expect

from explorer.models import Membership, Run, TagBaseline, Team
from tests.browser.conftest import store_done_run
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S
from tests.explorer.access import SOFTMAX, softmax_artifact

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def scaled(factor: float) -> dict:
    """softmax's artifact with every plan's projected total times `factor`: a commit that made
    the step that much slower or faster."""
    artifact = copy.deepcopy(softmax_artifact())
    for result in artifact["devices"].values():
        for plan in result["strategies"].values():
            plan["total"]["proj_us"] *= factor
    return artifact


def best_total(artifact: dict, device: str) -> float:
    return min(plan["total"]["proj_us"]
               for plan in artifact["devices"][device]["strategies"].values())


def test_the_team_page_tracks_a_graph_against_its_baseline_with_a_trend_chart(
        users, live_server, new_page, screenshots):
    owner = users["owner"]
    team = Team.objects.create(name="models")
    Membership.objects.create(team=team, user=owner)
    factors = {"1" * 22: 1.0, "2" * 22: 0.9, "3" * 22: 1.2}    # main's runs, oldest first
    artifacts = {}
    for run_id, factor in factors.items():
        artifacts[run_id] = scaled(factor)
        run = store_done_run(owner, run_id, artifacts[run_id], hlo=SOFTMAX, name="softmax step")
        Run.objects.filter(pk=run.pk).update(visibility=Run.TEAM, team=team, tags=["main"])
    untagged = store_done_run(owner, "4" * 22, scaled(5.0), hlo=SOFTMAX, name="softmax step")
    Run.objects.filter(pk=untagged.pk).update(visibility=Run.TEAM, team=team, tags=["pr"])
    TagBaseline.mark(team, "main", Run.objects.get(pk="1" * 22), owner)

    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/teams/{team.pk}")
    card = page.locator("#tracked article[data-tag=main]")
    expect(card).to_have_attribute("data-graph", "softmax step")
    device = sorted(softmax_artifact()["devices"])[0]
    expect(card.locator("h3")).to_contain_text(device)

    baseline_us = best_total(artifacts["1" * 22], device)
    latest_us = best_total(artifacts["3" * 22], device)
    expect(card.locator("[data-role=latest]")).to_have_attribute("href", f"/r/{'3' * 22}")
    expect(card.locator("[data-role=change]")).to_have_text(
        f"{100 * (latest_us / baseline_us - 1):+.1f} %")

    # The chart: one vertex per run of the tag (the untagged run left out), the baseline and
    # the latest run marked with their totals.
    chart = card.locator("[data-chart=trend] svg")
    expect(chart).to_be_visible()
    vertices = chart.locator("polyline.chart__line").get_attribute("points").split()
    assert len(vertices) == len(factors)
    heights = [float(vertex.split(",")[1]) for vertex in vertices]
    # A longer time is drawn higher, at a smaller SVG y (which grows downwards): the faster
    # second run lowest, the slower third highest.
    assert heights[2] < heights[0] < heights[1]
    marks = {chart.locator("circle.chart__point").nth(k).get_attribute("data-label"):
             float(chart.locator("circle.chart__point").nth(k).get_attribute("data-y"))
             for k in range(2)}
    assert marks == {"baseline (softmax step)": pytest.approx(baseline_us),
                     "latest": pytest.approx(latest_us)}
    assert_no_js_errors(page)
    screenshots(page, "team-trend")
