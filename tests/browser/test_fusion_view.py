"""The fusion view (static/explorer/fusion_view.js) in a real browser.

A kernel is picked, expanded, and its op followed to the source line and the CUDA lines. The
picked kernel lives in the URL, and a plan switch keeps the viewport. An op is found by search
on the 4,335-node 12-layer training step, and the view draws the 16,647-node 48-layer step.

The two training steps are stored from their explored plans, with no CUDA built. The view needs
only the plans, and building 16,000 nodes' kernels would take the suite minutes.
benchmarks/fusion_view_speed.py times the 48-layer step's view with this file.
"""
import gzip
import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LAYER_NORM_BWD, STEP_48
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import DEADLINE_S, TEST_TIMEOUT_S, wait_for_run

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

READY = '#fusion-graph[data-ready="true"]'
# With FUSION_VIEW_TIMING=<file> the 48-layer test writes the page's timings there
# (benchmarks/fusion_view_speed.py); no test asserts on them.
TIMING_FILE = os.environ.get("FUSION_VIEW_TIMING")


def fusion(page):
    return page.locator("#fusion-graph")


def call(page, expression: str):
    return page.evaluate(f"(() => document.getElementById('fusion-graph').fusionView"
                         f".{expression})()")


def click_at(page, box: dict, dy: float = 0.5, double: bool = False):
    # On screen first: a tab of the plans below it may have scrolled the page past it.
    page.locator("#fusion-graph canvas.fusion__canvas").scroll_into_view_if_needed()
    canvas = page.locator("#fusion-graph canvas.fusion__canvas").bounding_box()
    x = canvas["x"] + box["x"] + box["w"] / 2
    y = canvas["y"] + box["y"] + box["h"] * dy
    if double:
        page.mouse.dblclick(x, y)
    else:
        page.mouse.click(x, y)


def test_a_kernel_is_picked_expanded_and_its_op_followed_to_source_and_cuda(
        layer_norm_run, live_server, new_page, screenshots):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")
    expect(page.locator(READY)).to_be_attached()

    # The fastest plan (lowest projected total), its tab shown too.
    plans = layer_norm_run.artifact["devices"]["h100"]["strategies"]
    fastest = min(plans, key=lambda name: plans[name]["total"]["proj_us"])
    expect(fusion(page)).to_have_attribute("data-strategy", fastest)
    expect(page.locator(".tabs--small .tabs__tab.is-active")).to_have_text(fastest)

    # The xla plan has kernels of several ops: pick the largest one.
    page.locator("#fusion-strategy").select_option("xla")
    expect(fusion(page)).to_have_attribute("data-strategy", "xla")
    expect(page.locator(READY)).to_be_attached()
    kernels = plans["xla"]["kernels"]
    kernel = max(kernels, key=lambda k: len(k["nodes"]))
    click_at(page, call(page, f"locate({json.dumps(kernel['name'])})"))
    info = page.locator("#fusion-info")
    expect(info.locator("h4")).to_have_text(kernel["name"])
    assert page.url.endswith(f"#h100/xla/{kernel['name']}")
    expect(info.locator(".fusion__kernel-link")).to_have_attribute(
        "href", f"/r/{layer_norm_run.pk}/h100/xla/{kernel['name']}")

    # Double-click: its ops, each placed inside it.
    click_at(page, call(page, f"locate({json.dumps(kernel['name'])})"), dy=0.3, double=True)
    assert call(page, "expanded()") == [kernel["name"]]
    box = call(page, f"locate({json.dumps(kernel['name'])})")
    for name in kernel["nodes"]:
        op = call(page, f"locate({json.dumps(name)}, {json.dumps(kernel['name'])})")
        assert box["x"] <= op["x"] and op["x"] + op["w"] <= box["x"] + box["w"] + 0.5
        assert box["y"] <= op["y"] and op["y"] + op["h"] <= box["y"] + box["h"] + 0.5
    screenshots(page, "fusion-view-expanded")

    # An op: its line in the upload, and the CUDA lines that compute it.
    from explorer.models import KernelSource

    line_nodes = KernelSource.objects.get(run=layer_norm_run, device="h100", strategy="xla",
                                          kernel=kernel["name"]).line_nodes
    in_cuda = {n for names in line_nodes.values() for n in names}
    lines = LAYER_NORM_BWD.read_text().splitlines()
    name = next(n for n in kernel["nodes"] if n in in_cuda and any(
        line.strip().startswith(f"{n} =") for line in lines))
    number = 1 + next(i for i, line in enumerate(lines) if line.strip().startswith(f"{name} ="))
    click_at(page, call(page, f"locate({json.dumps(name)}, {json.dumps(kernel['name'])})"))
    expect(info.locator("h4")).to_have_text(name)
    expect(info.locator(".fusion__source-link")).to_have_text(f"source line {number}")
    page.locator("#fusion-info .fusion__source-link").click()
    expect(page.locator(f"#L{number}")).to_be_in_viewport()
    assert page.url.endswith(f"/source#L{number}")
    page.go_back()
    expect(page.locator(READY)).to_be_attached()

    page.goto("about:blank")     # a new load of the link, not a jump within the page
    page.goto(f"{live_server.url}/r/{layer_norm_run.pk}#h100/xla/{kernel['name']}")
    expect(page.locator(READY)).to_be_attached()
    expect(info.locator("h4")).to_have_text(kernel["name"])     # the URL's kernel is picked
    assert call(page, "picked()")["id"] == kernel["name"]
    # Found by its name, the op is shown inside its kernel, expanded for it.
    page.locator("#fusion-search").fill(name)
    page.locator("#fusion-search").press("Enter")
    expect(info.locator("h4")).to_have_text(name)
    assert call(page, "expanded()") == [kernel["name"]]
    page.locator("#fusion-info .fusion__cuda-link").click()
    expect(page).to_have_url(
        f"{live_server.url}/r/{layer_norm_run.pk}/h100/xla/{kernel['name']}#node={name}")
    expect(page.locator(f'.node.is-marked[data-node="{name}"]')).to_have_count(1)
    assert page.locator("#source li.is-marked").count() >= 1
    assert_no_js_errors(page)


def test_switching_the_plan_keeps_the_viewport(layer_norm_run, live_server, new_page):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{layer_norm_run.pk}#h100/unfused")
    expect(fusion(page)).to_have_attribute("data-strategy", "unfused")
    expect(page.locator(READY)).to_be_attached()
    page.locator("#fusion-zoom-in").click()
    canvas = page.locator("#fusion-graph canvas.fusion__canvas").bounding_box()
    page.mouse.move(canvas["x"] + 300, canvas["y"] + 300)
    page.mouse.down()
    page.mouse.move(canvas["x"] + 200, canvas["y"] + 240, steps=4)
    page.mouse.up()
    before = call(page, "viewport()")
    # The page's own strategy tab switches the view too.
    page.locator('.tabs--small .tabs__tab[data-tab="cost"]').click()
    expect(fusion(page)).to_have_attribute("data-strategy", "cost")
    expect(page.locator(READY)).to_be_attached()
    assert call(page, "viewport()") == before
    assert page.url.endswith("#h100/cost")
    assert_no_js_errors(page)


def test_search_finds_an_op_in_a_training_step_and_opens_its_kernel(step_12_run, live_server,
                                                                     new_page, screenshots):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{step_12_run.pk}#h100/cost")
    expect(page.locator(READY)).to_be_attached()
    nodes = step_12_run.node_count
    assert nodes >= 1000
    expect(page.locator("#fusion-status")).to_contain_text(f"{nodes} nodes")
    screenshots(page, "fusion-view-training-step")

    # An op kind lists every op of that kind; Enter opens the first one in its kernel.
    kernels = step_12_run.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]
    owner = {name: k["name"] for k in kernels for name in k["nodes"]}
    page.locator("#fusion-search").fill("reduce")
    results = page.locator("#fusion-results li button")
    expect(results.first).to_be_visible()
    found = call(page, "found()")
    assert found and all(name in owner or name.startswith("reduce") for name in found)
    page.locator("#fusion-search").press("Enter")
    expect(page.locator("#fusion-results")).to_be_hidden()     # the list closes on a pick
    picked = call(page, "picked()")
    assert picked["type"] == "op" and picked["id"] == found[0]
    assert picked["kernel"] in call(page, "expanded()")
    op = call(page, f"locate({json.dumps(picked['id'])}, {json.dumps(picked['kernel'])})")
    shown = page.locator("#fusion-graph canvas.fusion__canvas").bounding_box()
    assert 0 <= op["x"] + op["w"] / 2 <= shown["width"]    # centred on it
    assert 0 <= op["y"] + op["h"] / 2 <= shown["height"]
    expect(page.locator("#fusion-info h4")).to_have_text(picked["id"])
    screenshots(page, "fusion-view-search")
    # Escape twice: the list stays closed, then the search and its highlights are cleared.
    page.locator("#fusion-search").press("Escape")
    page.locator("#fusion-search").press("Escape")
    expect(page.locator("#fusion-search")).to_have_value("")
    assert call(page, "found()") == []
    assert_no_js_errors(page)


def test_an_uploaded_48_layer_step_of_16000_nodes_is_seen_op_by_op(
        users, compile_queue, live_server, new_page, screenshots):
    """The same path on the 48-layer training step (16,647 nodes): uploaded through the form
    with the cost plan alone (its 1,453 kernels are 21 distinct sources for a cold nvcc),
    compiled by the worker, which lays the view out; the run page opened afresh draws it, a
    kernel is found by name, and an op is followed to its source and CUDA lines."""
    page = new_page()
    log_in(page, live_server.url, "ada")
    run = upload_step(page, STEP_48, ("cost",), "48-layer step", deadline_s=3 * DEADLINE_S)
    nodes = run.artifact["graph"]["nodes"]
    assert nodes > 10_000

    # Opened afresh, as a link would open it: the view is drawn from the stored layout.
    page.goto(f"{live_server.url}/r/{run.pk}")
    expect(page.locator(READY)).to_be_attached()
    expect(page.locator("#fusion-status")).to_contain_text(f"{nodes} nodes")
    if TIMING_FILE:
        timing = page.evaluate("""() => {
            const navigation = performance.getEntriesByType("navigation")[0];
            const api = performance.getEntriesByType("resource")
                .find((entry) => entry.name.includes("/graph"));
            return {ready_ms: Number(document.getElementById("fusion-graph").dataset.readyMs),
                    dom_content_loaded_ms: navigation.domContentLoadedEventEnd,
                    graph_response_ms: api ? api.responseEnd : null,
                    graph_bytes: api ? api.encodedBodySize : null};
        }""")
        Path(TIMING_FILE).write_text(json.dumps({**timing, "nodes": nodes}))
    # A kernel from the middle of the plan, found by its name.
    kernels = run.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]
    page.locator("#fusion-search").fill(kernels[len(kernels) // 2]["name"])
    page.locator("#fusion-search").press("Enter")
    expect(page.locator("#fusion-info h4")).to_have_text(kernels[len(kernels) // 2]["name"])
    screenshots(page, "fusion-view-48-layers")

    follow_an_op(page, STEP_48, screenshots, "fusion-view-48-layers-op")
    assert_no_js_errors(page)


def test_side_by_side_shows_what_the_other_plan_made_of_each_kernel(step_12_run, live_server,
                                                                     new_page, screenshots):
    from compiler.kernels.matching import plan_changes

    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{step_12_run.pk}#h100/cost")
    expect(page.locator(READY)).to_be_attached()
    page.locator("#fusion-side-by-side").check()
    other = page.locator("#fusion-graph-b")
    expect(other).to_have_attribute("data-ready", "true")
    expect(other).to_have_attribute("data-strategy", "xla")   # the baseline, by default
    expect(page.locator("#fusion-colour")).to_have_value("change")
    expect(page).to_have_url(f"{live_server.url}/r/{step_12_run.pk}#h100/cost~h100/xla")

    # Each cost kernel's relation to the xla plan agrees with the compare page's account of
    # the same two plans (compiler/kernels/matching.py, computed on the server).
    plans = step_12_run.artifact["devices"]["h100"]["strategies"]
    changes = plan_changes(plans["xla"]["kernels"], plans["cost"]["kernels"])
    merges = {change["kernel"]: {part["kernel"] for part in change["parts"]}
              for change in changes["merged"]}          # cost kernels gathering xla kernels
    pieces = {part["kernel"] for change in changes["split"] for part in change["parts"]}
    assert merges and pieces
    relations = page.evaluate("""(names) => names.map((name) =>
        document.getElementById('fusion-graph').fusionView.relation(name))""",
        [kernel["name"] for kernel in plans["cost"]["kernels"]])
    for kernel, relation in zip(plans["cost"]["kernels"], relations):
        name = kernel["name"]
        expected = {(True, True): "regrouped", (True, False): "merged",
                    (False, True): "split"}.get((name in merges, name in pieces))
        if expected is None:
            assert relation["kind"] in ("same", "alone"), (name, relation)
        else:
            assert relation["kind"] == expected, (name, relation)
        if name in merges:
            assert set(relation["partners"]) == merges[name]

    # A merged kernel picked here: the other pane marks the kernels it merges.
    name = max(merges, key=lambda k: len(merges[k]))
    page.locator("#fusion-search").fill(name)
    page.locator("#fusion-search").press("Enter")
    expect(page.locator("#fusion-info h4")).to_have_text(name)
    expect(page.locator("#fusion-info .fusion__change")).to_contain_text(
        "merges kernels of the other plan")
    marked = page.evaluate("() => document.getElementById('fusion-graph-b').fusionView.marked()")
    assert set(marked) == merges[name]
    # The other pane was brought to the same ops (on the next frame): one of those kernels
    # is in its middle.
    page.wait_for_timeout(100)
    shown = page.locator("#fusion-graph-b canvas.fusion__canvas").bounding_box()
    boxes = [page.evaluate(f"() => document.getElementById('fusion-graph-b').fusionView"
                           f".locate({json.dumps(k)})") for k in merges[name]]
    assert any(abs(b["x"] + b["w"] / 2 - shown["width"] / 2) <= 1 and
               abs(b["y"] + b["h"] / 2 - shown["height"] / 2) <= 1 for b in boxes), boxes
    screenshots(page, "fusion-view-side-by-side")

    # Panning one pane moves the other to the same ops.
    canvas = page.locator("#fusion-graph canvas.fusion__canvas").bounding_box()
    page.mouse.move(canvas["x"] + 200, canvas["y"] + 300)
    page.mouse.down()
    page.mouse.move(canvas["x"] + 120, canvas["y"] + 100, steps=5)
    page.mouse.up()
    page.wait_for_timeout(100)
    centre = page.evaluate("() => document.getElementById('fusion-graph').fusionView"
                           ".centreNode()")
    owner = {node: k["name"] for k in plans["xla"]["kernels"] for node in k["nodes"]}
    if centre in owner:
        box = page.evaluate(f"() => document.getElementById('fusion-graph-b').fusionView"
                            f".locate({json.dumps(owner[centre])})")
        assert abs(box["x"] + box["w"] / 2 - shown["width"] / 2) <= 1
        assert abs(box["y"] + box["h"] / 2 - shown["height"] / 2) <= 1

    # The link reopens both plans; switching side by side off drops the other one.
    page.goto("about:blank")
    page.goto(f"{live_server.url}/r/{step_12_run.pk}#h100/cost~h100/xla")
    expect(other).to_have_attribute("data-ready", "true")
    expect(page.locator("#fusion-side-by-side")).to_be_checked()
    page.locator("#fusion-strategy-b").select_option("cost")
    expect(other).to_have_attribute("data-strategy", "cost")
    expect(page).to_have_url(f"{live_server.url}/r/{step_12_run.pk}#h100/cost~h100/cost")
    relation = page.evaluate("(name) => document.getElementById('fusion-graph').fusionView"
                             ".relation(name)", plans["cost"]["kernels"][0]["name"])
    assert relation["kind"] == "same"      # a plan against itself
    page.locator("#fusion-side-by-side").uncheck()
    expect(other).to_be_hidden()
    expect(page).to_have_url(f"{live_server.url}/r/{step_12_run.pk}#h100/cost")
    assert_no_js_errors(page)


LLAMA_2L = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "zoo" / "llama_2l.hlo.gz"


def test_an_uploaded_training_step_is_seen_op_by_op(users, compile_queue, live_server,
                                                     new_page, screenshots):
    """The whole path on a real training step (a 2-layer Llama, 1,404 nodes, gzipped HLO):
    uploaded through the form, compiled by the worker, then in the fusion view an op is found,
    its kernel expanded, and the op followed to its source line and its CUDA lines."""
    page = new_page()
    log_in(page, live_server.url, "ada")
    run = upload_step(page, LLAMA_2L, ("xla", "cost"), "llama 2-layer step")
    nodes = run.artifact["graph"]["nodes"]
    assert nodes >= 1000
    expect(page.locator(READY)).to_be_attached()
    expect(page.locator("#fusion-status")).to_contain_text(f"{nodes} nodes")
    follow_an_op(page, LLAMA_2L, screenshots, "fusion-view-uploaded-step")
    assert_no_js_errors(page)


def test_an_uploaded_stablehlo_training_step_is_seen_op_by_op(
        users, compile_queue, live_server, new_page, screenshots, tmp_path):
    """What JAX users have by default: `jax.jit(step).lower(...).as_text()`, StableHLO MLIR
    text, of a bf16 training step made here by JAX, uploaded as a .mlir file; an op of the
    fusion view is followed to its line of that text and its CUDA lines."""
    jax = pytest.importorskip("jax")
    from tests.compiler.test_stablehlo_import import _training_step

    step, arguments = _training_step()
    path = tmp_path / "training_step.mlir"
    path.write_text(jax.jit(step).lower(*arguments).as_text())
    page = new_page()
    log_in(page, live_server.url, "ada")
    run = upload_step(page, path, ("xla", "cost", "xla-gpu"), "JAX training step (StableHLO)")
    assert run.artifact["graph"]["nodes"] > 500
    # XLA:GPU's own plan, compiled without a GPU, is a row of the comparison beside ours.
    xla_gpu = run.artifact["devices"]["h100"]["strategies"]["xla-gpu"]
    assert xla_gpu["unavailable"] is None and xla_gpu["kernel_count"] > 10
    expect(page.locator("th[scope=row]", has_text="xla-gpu")).to_have_count(1)
    expect(page.locator(READY)).to_be_attached()
    follow_an_op(page, path, screenshots, "fusion-view-stablehlo-step")
    assert_no_js_errors(page)


def upload_step(page, path: Path, strategies: tuple[str, ...], name: str,
                deadline_s: float = DEADLINE_S):
    """Uploads `path` through the home page's form with only `strategies` ticked, and returns
    the run once the worker has finished it and the page shows it."""
    page.set_input_files("#upload-form input[name=graph_file]", str(path))
    for box in page.locator("input[name=strategies]").all():
        if box.get_attribute("value") not in strategies:
            box.uncheck()
    page.fill("#id_name", name)
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")
    return wait_for_run(page, page.url.rsplit("/", 1)[-1], deadline_s)


def follow_an_op(page, path: Path, screenshots, shot: str) -> None:
    """On a drawn fusion view: a reduction found by its kind and shown inside its kernel,
    which is expanded for it; then its line in the upload (`path`, gzipped or not) and the CUDA
    lines that compute it. Screenshots (the `screenshots` fixture) `shot` and `shot`-cuda."""
    page.locator("#fusion-search").fill("reduce")
    page.locator("#fusion-search").press("Enter")
    picked = call(page, "picked()")
    assert picked["type"] == "op" and picked["kernel"] in call(page, "expanded()")
    name, kernel = picked["id"], picked["kernel"]
    info = page.locator("#fusion-info")
    expect(info.locator("h4")).to_have_text(name)
    screenshots(page, shot)

    # Its line in the upload (decompressed), then the CUDA lines computing it.
    source = info.locator(".fusion__source-link")
    number = int(source.inner_text().removeprefix("source line "))
    data = path.read_bytes()
    line = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode() \
        .splitlines()[number - 1]
    if path.suffix == ".mlir":  # ops are numbered values there: the line is a reduce
        assert "stablehlo.reduce" in line
    else:
        assert line.strip().startswith(f"{name} =") or f" {name} = " in line
    source.click()
    expect(page.locator(f"#L{number}")).to_be_in_viewport()
    page.go_back()
    expect(page.locator(READY)).to_be_attached()
    page.locator("#fusion-search").fill(name)
    page.locator("#fusion-search").press("Enter")
    expect(info.locator("h4")).to_have_text(name)
    info.locator(".fusion__cuda-link").click()
    expect(page).to_have_url(re.compile(rf"/{re.escape(kernel)}#node={re.escape(name)}$"))
    expect(page.locator(f'.node.is-marked[data-node="{name}"]')).to_have_count(1)
    assert page.locator("#source li.is-marked").count() >= 1
    screenshots(page, f"{shot}-cuda")


def test_search_finds_a_kernel_of_xlas_plan_by_xlas_own_name(users, live_server, new_page):
    """XLA:GPU's plan (xla-gpu): typing the name XLA gave a kernel (fusion.276, ...) finds
    it, and the list and the picked kernel's details say that name."""
    from tests.browser.conftest import store_done_run
    from tests.explorer.access import SOFTMAX
    from tests.explorer.xla_gpu_plans import HAVE_PLUGIN, NO_PLUGIN, xla_gpu_artifact

    if not HAVE_PLUGIN:
        pytest.skip(NO_PLUGIN)
    run = store_done_run(users["owner"], "x" * 22, xla_gpu_artifact(), SOFTMAX, "softmax")
    (kernel,) = run.artifact["devices"]["h100"]["strategies"]["xla-gpu"]["kernels"]
    assert kernel["xla_name"] and kernel["xla_name"] != kernel["name"]
    page = new_page()
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{run.pk}#h100/xla-gpu")
    expect(fusion(page)).to_have_attribute("data-strategy", "xla-gpu")
    expect(page.locator(READY)).to_be_attached()

    page.locator("#fusion-search").fill(kernel["xla_name"].upper())
    expect(page.locator("#fusion-results li button")).to_have_text(
        f"{kernel['name']} — kernel, {kernel['kind']} (XLA: {kernel['xla_name']})")
    assert call(page, "found()") == [kernel["name"]]
    page.locator("#fusion-search").press("Enter")
    expect(page.locator("#fusion-info h4")).to_have_text(kernel["name"])
    expect(page.locator("#fusion-info")).to_contain_text(f"XLA:GPU's kernel: {kernel['xla_name']}")
    assert_no_js_errors(page)
