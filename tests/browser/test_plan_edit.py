"""What-if in a real browser (static/explorer/plan_edit.js, explorer/plan_edits.py) on a real
2-layer Llama training step (1,404 nodes): two kernels merged, one split into its ops, a fusion
forbidden, the totals seen to change as the server priced them, an illegal merge refused with
its reason and nothing changed; the plan saved, compiled by the real worker onto the run, its
permalink opened in a fresh page and found on the compare page; its plan file exported and
applied to a new upload of the same graph through the upload form, and by the CLI.

The run to edit is stored from its explored plans (conftest.explored_run: no kernels built, as
the fusion view needs none); what is saved is compiled by the worker, nvcc included.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from explorer.models import Run, SavedPlan
from tests.browser.conftest import explored_run
from tests.browser.test_fusion_view import LLAMA_2L, READY, call, click_at, upload_step
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import DEADLINE_S, TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S * 2)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def llama_run(users):
    return explored_run(users["owner"], "e" * 22, LLAMA_2L, ["xla", "cost"], "llama 2-layer step")


def kernels_of(run, strategy="xla"):
    return run.artifact["devices"]["h100"]["strategies"][strategy]["kernels"]


def adjacent_loop_pair(kernels):
    """Two small fusible kernels, the second reading the first and nothing else in between."""
    owner = {n: k["name"] for k in kernels for n in k["nodes"]}
    by_name = {k["name"]: k for k in kernels}
    for kernel in kernels:
        if kernel["kind"] == "library":
            continue
        for value in kernel["inputs"]:
            producer = by_name.get(owner.get(value))
            if producer and producer is not kernel and producer["kind"] != "library" \
                    and len(producer["nodes"]) + len(kernel["nodes"]) < 20:
                return producer["name"], kernel["name"]
    raise AssertionError("no two fusible kernels read one another")


def cycle_pair(kernels):
    """A kernel and a later one that reads it only through a kernel between them."""
    owner = {n: k["name"] for k in kernels for n in k["nodes"]}
    for first in kernels:
        readers = {k["name"] for k in kernels if k is not first
                   and any(owner.get(v) == first["name"] for v in k["inputs"])}
        for later in kernels:
            if later["name"] in readers or later is first or later["kind"] == "library":
                continue
            if any(owner.get(v) in readers for v in later["inputs"]) and first["kind"] != "library":
                return first["name"], later["name"]
    raise AssertionError("no pair of kernels with one between them")


def total(page, label="projected", column=2):
    return page.locator(f'#plan-edit-totals tr[data-total="{label}"] td').nth(column - 1)


def choose(page, *names):
    """Click the first kernel, shift-click the others (kernels of the plan drawn now), each
    brought on screen first as a search would."""
    for index, name in enumerate(names):
        page.evaluate(f"document.getElementById('fusion-graph').fusionPane.goTo("
                      f"{json.dumps(name)})")
        box = call(page, f"locate({json.dumps(name)})")
        page.locator("#fusion-graph canvas.fusion__canvas").scroll_into_view_if_needed()
        canvas = page.locator("#fusion-graph canvas.fusion__canvas").bounding_box()
        x, y = canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + box["h"] / 2
        if index:
            page.keyboard.down("Shift")
        page.mouse.click(x, y)
        if index:
            page.keyboard.up("Shift")


def answer_edits(page):
    return page.locator("#plan-edit-log li")


def test_a_plan_is_edited_saved_shared_and_its_file_applied_to_a_new_upload(
        llama_run, users, compile_queue, live_server, new_page, screenshots, tmp_path):
    page = new_page()
    log_in(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/r/{llama_run.pk}#h100/xla")
    expect(page.locator(READY)).to_be_attached()
    expect(page.locator("#fusion-graph")).to_have_attribute("data-strategy", "xla")
    xla = kernels_of(llama_run)

    page.click("#fusion-edit")
    expect(page.locator("#plan-edit")).to_be_visible()
    expect(page.locator("#plan-edit-plan")).to_have_text("xla on h100")
    expect(total(page, column=1)).not_to_have_text("")
    stored = total(page, column=1).inner_text()

    # An illegal merge: refused with its reason, and nothing changes.
    first, later = cycle_pair(xla)
    choose(page, first, later)
    page.click("#plan-edit-merge")
    expect(page.locator("#plan-edit-refused")).to_contain_text("makes a cycle through")
    expect(answer_edits(page)).to_have_count(0)
    expect(total(page, column=2)).to_have_text(stored)

    # Merge two kernels: one kernel less, the total as the server priced it.
    a, b = adjacent_loop_pair(xla)
    choose(page, a, b)
    page.click("#plan-edit-merge")
    expect(answer_edits(page)).to_have_count(1)
    expect(page.locator("#plan-edit-refused")).to_be_hidden()
    expect(page.locator('#plan-edit-totals tr:last-child td').nth(1)).to_have_text(
        str(len(xla) - 1))
    expect(page.locator("#fusion-graph")).to_have_attribute("data-edited", "true")
    expect(page.locator("#plan-edit-last .plan-edit__causes li[data-cause=launch]")) \
        .to_have_count(1)
    # The merged kernel's CUDA, one click away.
    page.locator('#plan-edit-last tr[data-side="after"] button').first.click()
    expect(page.locator("#plan-edit-cuda")).to_contain_text("__global__")

    # Split the biggest non-library kernel of the edited plan into its ops.
    expect(page.locator(READY)).to_be_attached()
    data = page.evaluate("document.getElementById('fusion-graph').fusionPane.data().kernels")
    biggest = max((k for k in data if k["kind"] != "library"), key=lambda k: k["nodes"])
    choose(page, biggest["name"])
    page.click("#plan-edit-split")
    expect(answer_edits(page)).to_have_count(2)

    # Forbid a fusion: an op of a multi-op kernel and an operand of it in the same kernel.
    expect(page.locator("#fusion-graph")).to_have_attribute("data-edited", "true")
    page.wait_for_function("document.getElementById('fusion-graph').fusionPane.data()"
                           ".kernels.length > 0")
    view = page.evaluate("(() => { const d = document.getElementById('fusion-graph')"
                         ".fusionPane.data(); return {nodes: d.nodes, edges: d.edges}; })()")
    kernel_of = {n["id"]: n["kernel"] for n in view["nodes"]}
    producer, consumer = next((f, t) for f, t in view["edges"]
                              if kernel_of.get(f) and kernel_of.get(f) == kernel_of.get(t))
    kernel = kernel_of[consumer]
    # Found as a search finds it (its kernel expanded, on screen), then clicked.
    page.evaluate(f"document.getElementById('fusion-graph').fusionPane.goTo("
                  f"{json.dumps(consumer)})")
    click_at(page, call(page, f"locate({json.dumps(consumer)}, {json.dumps(kernel)})"))
    page.get_by_role("button", name=f"Forbid {producer} → {consumer}").click()
    expect(answer_edits(page)).to_have_count(3)
    expect(answer_edits(page).nth(2)).to_contain_text(f"forbid fusing {producer} -> {consumer}")
    edited = total(page, column=2).inner_text()
    screenshots(page, "plan-edit-three-edits")

    # Undo and redo: the third edit goes and comes back.
    page.click("#plan-edit-undo")
    expect(answer_edits(page)).to_have_count(2)
    page.click("#plan-edit-redo")
    expect(answer_edits(page)).to_have_count(3)
    expect(total(page, column=2)).to_have_text(edited)

    # Save it: the worker compiles it onto the run, and the page lists it once it is done.
    page.fill("#plan-edit-name", "tuned")
    page.click("#plan-edit-save-button")
    expect(page.locator("#plan-edit-saved a")).to_have_attribute(
        "href", f"/r/{llama_run.pk}#h100/custom:tuned")
    saved = SavedPlan.objects.get(run=llama_run, name="tuned")
    assert saved.author == users["owner"] and len(saved.plan["edits"]) == 3
    page.reload()
    expect(page.locator('#saved-plans tr[data-saved-plan="custom:tuned"]')).to_have_attribute(
        "data-state", "done", timeout=DEADLINE_S * 1000)
    saved.refresh_from_db()
    assert saved.status == SavedPlan.DONE, saved.error
    plans = Run.objects.get(pk=llama_run.pk).artifact["devices"]["h100"]["strategies"]
    assert [k["nodes"] for k in plans["custom:tuned"]["kernels"]] == \
        [k["nodes"] for k in saved.plan["kernels"]]
    expect(page.locator('th[scope=row]', has_text="custom:tuned")).to_have_count(1)
    # Its link in the saved plans shows it in the fusion view and its tab.
    page.locator('#saved-plans a.saved-plans__link').click()
    expect(page.locator("#fusion-graph")).to_have_attribute("data-strategy", "custom:tuned")
    expect(page.locator('.tabs--small .tabs__tab.is-active')).to_have_text("custom:tuned")

    # Its permalink in a fresh page (another session of the same user).
    fresh = new_page()
    log_in(fresh, live_server.url, "ada")
    fresh.goto(f"{live_server.url}/r/{llama_run.pk}#h100/custom:tuned")
    expect(fresh.locator(READY)).to_be_attached()
    expect(fresh.locator("#fusion-graph")).to_have_attribute("data-strategy", "custom:tuned")
    expect(fresh.locator("#fusion-strategy")).to_have_value("custom:tuned")
    # On the compare page beside a strategy's plan.
    fresh.goto(f"{live_server.url}/compare?a={llama_run.pk}:h100:xla"
               f"&b={llama_run.pk}:h100:custom:tuned")
    expect(fresh.locator("body")).to_contain_text("custom:tuned")
    assert_no_js_errors(fresh)

    # Its plan file, exported...
    with page.expect_download() as download:
        page.locator('#saved-plans tr[data-saved-plan="custom:tuned"] a[download]').click()
    plan_path = tmp_path / "tuned.plan.json"
    download.value.save_as(plan_path)
    made = json.loads(plan_path.read_text())
    assert made["name"] == "tuned"
    assert [(k["nodes"], k["recomputed"]) for k in made["kernels"]] == [
        (k["nodes"], k["recomputed"]) for k in plans["custom:tuned"]["kernels"]]
    # ... applies to the same graph from the CLI ...
    cli = subprocess.run([sys.executable, "-m", "compiler", "explore", str(LLAMA_2L),
                          "--strategy", "xla", "--plan", str(plan_path), "--json"],
                         capture_output=True, text=True, cwd=REPO, timeout=600)
    assert cli.returncode == 0, cli.stderr
    explored = json.loads(cli.stdout)["strategies"]["custom:tuned"]
    assert [k["nodes"] for k in explored["kernels"]] == [k["nodes"] for k in made["kernels"]]
    # ... and to a new upload of it through the form, with only the xla strategy this time.
    page.goto(f"{live_server.url}/")
    page.set_input_files("#id_plan_files", str(plan_path))
    run = upload_step(page, LLAMA_2L, ("xla",), "llama again", deadline_s=DEADLINE_S * 2)
    assert run.pk != llama_run.pk
    applied = SavedPlan.objects.get(run=run, name="tuned")
    page.reload()
    expect(page.locator('#saved-plans tr[data-saved-plan="custom:tuned"]')).to_have_attribute(
        "data-state", "done", timeout=DEADLINE_S * 1000)
    applied.refresh_from_db()
    assert applied.status == SavedPlan.DONE, applied.error
    screenshots(page, "plan-applied-to-a-new-upload")
    assert_no_js_errors(page)


def test_a_training_step_is_tuned_from_the_run_page(llama_run, users, compile_queue,
                                                     live_server, new_page, screenshots):
    """The Tune action on the 2-layer Llama step: the tuning runs on the worker, its best plan
    joins the run as `tuned` (compiled like the strategies' plans), the card shows the result
    and its chart, and the tuned plan opens in the fusion view from its link."""
    page = new_page()
    log_in(page, live_server.url, "ada")
    page.goto(f"{live_server.url}/r/{llama_run.pk}")
    form = page.locator("#tune-form")
    form.locator("input[name=budget_s]").fill("4")
    with page.expect_navigation():
        form.locator("button[type=submit]").click()
    expect(page.locator(".messages")).to_contain_text("Tuning the h100 plans for 4 s")
    # The page polls the tuning and the plan's compile, and reloads when both are done.
    expect(page.locator("#tuning-summary")).to_be_visible(timeout=DEADLINE_S * 1000)
    expect(page.locator('#saved-plans tr[data-saved-plan="tuned"]')).to_have_attribute(
        "data-state", "done", timeout=DEADLINE_S * 1000)
    page.reload()
    # The card's chart: the SVG curve first, replaced by plotly.js's once it scrolls into view
    # (static/explorer/plots.js); wait for the drawn one, whose one trace is the search's gain.
    chart = page.locator("#tuning .tuning__chart")
    chart.scroll_into_view_if_needed()
    expect(chart).to_have_attribute("data-drawn", "done", timeout=DEADLINE_S * 1000)
    expect(chart.locator(".scatterlayer .trace")).to_have_count(1)
    expect(chart.locator("[data-iplot-fallback]")).to_have_count(0)
    expect(page.locator("#tuning .tuning__top tbody tr").first).to_have_attribute(
        "data-rank", "1")
    expect(page.locator("th[scope=row]", has_text="tuned")).to_have_count(1)
    page.locator("#tuning-summary a.saved-plans__link").click()
    expect(page.locator("#fusion-graph")).to_have_attribute("data-strategy", "tuned")
    tuned = Run.objects.get(pk=llama_run.pk).artifact["devices"]["h100"]["strategies"]["tuned"]
    costs = llama_run.artifact["devices"]["h100"]["strategies"]
    assert tuned["tuning"]["starts"]["cost"] == pytest.approx(costs["cost"]["total"]["proj_us"],
                                                              rel=1e-6)
    screenshots(page, "tuned-plan")
    assert_no_js_errors(page)
