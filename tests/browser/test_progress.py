"""The run page while its run compiles: every stage with its state and time, the running one
counting up, what a long stage is doing, and the page following the worker's progress.

The run is a row the test moves through its stages itself (as workers/tasks.py's progress
recorder writes them), so the page is seen in each state for as long as the test needs.
"""
import re
import time

import pytest
from playwright.sync_api import expect

from compiler.stages.pipeline import STAGES, compile_graph
from explorer.models import Run
from tests.browser.conftest import LAYER_NORM_BWD
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def stages_until(running: str, now: float) -> list[dict]:
    """The stages of a run in `running` since 5 s before `now`, each earlier one 2 s long."""
    index = STAGES.index(running)
    entries = []
    for k, name in enumerate(STAGES):
        start = now - 5 - 2 * (index - k)
        entries.append({"name": name, "started": start if k <= index else None,
                        "finished": start + 2 if k < index else None})
    return entries


def shown(page) -> list[tuple[str, str, str]]:
    return [(item.locator(".progress__stage-name").inner_text(), item.get_attribute("data-state"),
             item.locator(".progress__stage-time").inner_text())
            for item in page.locator("#progress-stages li").all()]


def test_the_page_shows_each_stage_its_time_and_what_the_build_is_doing(
        users, live_server, new_page, screenshots):
    run = Run.objects.create(
        id="p" * 22, owner=users["owner"], filename=LAYER_NORM_BWD.name,
        graph_bytes=LAYER_NORM_BWD.read_bytes(), devices=["h100"], strategies=["xla", "cost"],
        compiler_version="test", status=Run.RUNNING, stage="build", progress_total=40,
        stages=stages_until("build", time.time()),
        stage_detail="h100: compiling 40 distinct kernels to PTX (nvcc, 2 processes; 0 from "
                     "the build cache)")
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{run.pk}")

    rows = shown(page)
    assert [name for name, _, _ in rows] == list(STAGES)
    assert [state for _, state, _ in rows] == ["done", "done", "done", "running", "waiting"]
    assert [time_ for _, _, time_ in rows[:3]] == ["2.0 s"] * 3
    assert rows[4][2] == ""
    expect(page.locator("#progress-detail")).to_contain_text("compiling 40 distinct kernels")
    # The build's time counts up while the page waits, though its count stands still.
    first = float(rows[3][2].removesuffix(" s"))
    assert first >= 5.0
    expect(page.locator("#progress-stages li.is-running .progress__stage-time")).not_to_have_text(
        rows[3][2])
    screenshots(page, "run-progress")

    # The worker moves on: the page's next poll shows it.
    Run.objects.filter(pk=run.pk).update(
        stage="cost", progress_done=10, stages=stages_until("cost", time.time()),
        stage_detail="")
    expect(page.locator('#progress-stages li[data-state="running"] .progress__stage-name')) \
        .to_have_text("cost")
    expect(page.locator("#progress-count")).to_have_text("10 / 40")
    expect(page.locator("#progress-detail")).to_have_text("")

    # It fails in the cost stage: the stage says so and the polling stops.
    Run.objects.filter(pk=run.pk).update(status=Run.FAILED, error="a bug", error_stage="cost",
                                         finished=run.created)
    expect(page.locator('#progress-stages li[data-state="failed"]')).to_have_text(
        re.compile(r"^cost"))
    expect(page.locator("#progress-error")).to_have_text("cost: a bug")
    assert_no_js_errors(page)


def test_the_plans_show_as_they_are_explored_while_the_run_builds_then_the_final_results(
        users, live_server, new_page, screenshots):
    """The worker's previews (Run.store_preview, as workers/tasks.py stores them) reach an open
    page as its status polls say more plans are explored; the final results replace them."""
    previews = []
    artifact = compile_graph(LAYER_NORM_BWD.read_bytes(), LAYER_NORM_BWD.name, ["h100"],
                             ["xla", "cost"], explored=previews.append)
    token = "t" * 32
    run = Run.objects.create(
        id="v" * 22, owner=users["owner"], filename=LAYER_NORM_BWD.name,
        graph_bytes=LAYER_NORM_BWD.read_bytes(), devices=["h100"], strategies=["xla", "cost"],
        compiler_version="test", status=Run.RUNNING, stage="explore", progress_total=2,
        stages=stages_until("explore", time.time()), claim_token=token)
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{run.pk}")
    expect(page.locator("#preview")).to_be_hidden()

    # The xla plan is explored: the page's next poll fetches it, the cost plan still exploring.
    Run.store_preview(run.pk, token, 60, previews[0])
    Run.objects.filter(pk=run.pk).update(progress_done=1)
    expect(page.locator('#preview tr[data-strategy="xla"]')).to_be_visible()
    expect(page.locator('#preview tr[data-exploring="cost"]')).to_contain_text("exploring")
    expect(page.locator("#preview-note")).to_contain_text("not the final results")
    page.locator('#preview [data-runtime-choice="stream"]').click()

    # Both explored and the build running: every plan is shown, nvcc's figures pending, under
    # the runtime chosen meanwhile.
    Run.store_preview(run.pk, token, 60, previews[1])
    Run.objects.filter(pk=run.pk).update(stage="build", progress_done=0, progress_total=40,
                                         stages=stages_until("build", time.time()))
    expect(page.locator('#preview tr[data-strategy="cost"]')).to_be_visible()
    expect(page.locator("#preview tr[data-exploring]")).to_have_count(0)
    expect(page.locator("#preview .results")).to_have_attribute("data-runtime-shown", "stream")
    # The fastest plan so far opens (the cost plan is never priced above the others).
    panel = page.locator("#preview .strategy:not([hidden])")
    expect(panel).to_have_attribute("data-tab", "cost")
    expect(panel.locator("table.kernels .pending").first).to_have_text("pending")
    expect(panel.locator("table.kernels a")).to_have_count(0)  # no kernel pages yet
    screenshots(page, "run-first-answer")
    # Another plan's tab loads its panel from the preview too.
    page.locator('#preview [data-tab-group="strategy-h100"] [data-tab="xla"]').click()
    expect(page.locator('#preview .strategy[data-tab="xla"] table.kernels .pending')
           .first).to_be_visible()

    # The run is done: the page reloads with the final results, nothing pending.
    Run.finish(run.pk, token, artifact)
    expect(page.locator("#measurement")).to_be_visible()
    expect(page.locator("#preview")).to_have_count(0)
    expect(page.locator(".pending")).to_have_count(0)
    expect(page.locator("table.kernels a").first).to_be_visible()
    assert_no_js_errors(page)
