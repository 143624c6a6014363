"""A training step's plan timeline in a real browser (issue 39): kernels on a time axis that a
hover names and a click opens, and the data-parallel overlap whose exposed communication
changes with the set-up picked. The exposed figures are checked against the simulator's own
answer for the same set-up (compiler/stages/dp.py, tested against closed forms in
tests/compiler/test_dp.py)."""
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import store_done_run
from tests.browser.test_csp import RECORD_VIOLATIONS, violations
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

STEP = Path(__file__).resolve().parents[1] / "data" / "hlo" / "transformer_step_bf16.hlo"


@pytest.fixture
def step_run(users):
    from compiler.stages.pipeline import compile_graph

    artifact = compile_graph(STEP.read_bytes(), STEP.name, ["h100"], ["cost"])
    return store_done_run(users["owner"], "s" * 22, artifact, hlo=STEP, name="training step")


def exposed(run, world: int, link: str) -> tuple[float, float]:
    """The exposed communication the simulator gives for the run's cost plan."""
    from compiler.stages.dp import data_parallel, dp_overlap
    from compiler.stages.timeline import plan_timeline

    artifact = run.artifact
    timeline = plan_timeline(artifact["devices"]["h100"]["strategies"]["cost"], "h100",
                             run.runtime, artifact["graph"]["outputs"])
    result = dp_overlap(timeline, artifact["graph"]["training"], data_parallel(world, link))
    return tuple(result["releases"][r]["exposed_us"] for r in ("step_end", "when_ready"))


def title(chart) -> str:
    return chart.locator(".gtitle").text_content()


def test_the_timeline_hovers_clicks_through_and_follows_the_data_parallel_set_up(
        step_run, live_server, new_page, screenshots):
    page = new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    log_in(page, live_server.url, "ada", next_path=f"/r/{step_run.pk}")
    panel = page.locator('.strategy[data-tab="cost"]:not([hidden])')
    panel.locator("details[data-plots] summary").click()
    chart = panel.locator('[data-iplot][data-chart="timeline"]')
    kernels = step_run.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]
    # One bar per kernel on the projected lane, and the default set-up, 8 GPUs on NVLink.
    bars = chart.locator(".barlayer .trace").first.locator(".point")
    expect(bars).to_have_count(len(kernels))
    step_end, when_ready = exposed(step_run, 8, "nvlink")
    expect(chart.locator(".gtitle")).to_contain_text("8 GPUs on NVLink")
    assert f"{step_end:,.1f} / {when_ready:,.1f} µs" in title(chart)
    assert "the first buckets wait on " in title(chart)
    screenshots(page, "timeline-nvlink")

    # Another preset: the title's exposed communication is the simulator's for it.
    panel.locator("[data-dp-preset]").select_option("64 ib")
    expect(chart.locator(".gtitle")).to_contain_text("64 GPUs on InfiniBand")
    step_end_ib, when_ready_ib = exposed(step_run, 64, "ib")
    assert (step_end_ib, when_ready_ib) != (step_end, when_ready)
    assert f"{step_end_ib:,.1f} / {when_ready_ib:,.1f} µs" in title(chart)
    # All-reduce lanes come with the set-up, and go with "off".
    assert chart.locator(".barlayer .trace").count() == 3
    panel.locator("[data-dp-preset]").select_option("")
    expect(chart.locator(".gtitle")).not_to_contain_text("GPUs on")
    expect(chart.locator(".barlayer .trace")).to_have_count(1)

    # The page's runtime switch draws it again under stream launches.
    page.locator('[data-runtime-choice="stream"]').click()
    expect(chart.locator(".gtitle")).to_contain_text("under stream launches")
    page.locator('[data-runtime-choice="graph"]').click()
    expect(chart.locator(".gtitle")).to_contain_text("under CUDA graph launches")

    # A kernel's bar (the longest, wide enough to point at): its hover card names it; a click
    # opens its page.
    longest = max(range(len(kernels)), key=lambda i: kernels[i]["device_us"])
    bar = chart.locator(".barlayer .trace").first.locator(".point").nth(longest)
    bar.hover(force=True)
    label = page.locator(".hoverlayer .hovertext")
    expect(label).to_be_visible()
    named = [k["name"] for k in kernels if f"{k['name']} (" in label.text_content()]
    assert len(named) == 1, label.text_content()
    screenshots(page, "timeline-hover")
    bar.click(force=True)
    page.wait_for_url(f"**/r/{step_run.pk}/h100/cost/{named[0]}")
    assert violations(page) == []
    assert_no_js_errors(page)
