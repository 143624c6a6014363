"""The fusion view on a graph far wider than it is deep: one Adam step over 48 parameter tensors
(tests/data/views/adam_48.hlo.gz), 48 update chains side by side, the shape a new user found
opening as a thin strip with most of the canvas empty (issue 39).

Geometry is read from the page: where each box is on screen (`fusionView.locate`, the drawn
rectangle in CSS pixels) and, for the labels, the text the canvas is asked to draw with its
font and transform (recorded by wrapping `fillText` before the page's scripts run).
"""
import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import explored_run
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

ADAM_48 = Path(__file__).resolve().parents[1] / "data" / "views" / "adam_48.hlo.gz"
READY = '#fusion-graph[data-ready="true"]'
CANVAS = "#fusion-graph canvas.fusion__canvas"
FUSION = "section.fusion"
# The smallest text a reader takes in without leaning in: 11 CSS pixels (the size of the
# page's own small print, .muted at 0.85rem of a 13-14 px body, is about that).
READABLE_PX = 11

# Every fillText of the view's last frame (a frame starts by clearing the canvas) with its
# on-screen font size: the font's pixel size times the transform's scale, over the device pixel
# ratio the view multiplies in.
RECORD_TEXT = """
(() => {
  const draw = CanvasRenderingContext2D.prototype.fillText;
  const clear = CanvasRenderingContext2D.prototype.clearRect;
  window.drawnText = [];
  CanvasRenderingContext2D.prototype.clearRect = function (...args) {
    if (this.canvas.classList.contains("fusion__canvas")) window.drawnText = [];
    return clear.apply(this, args);
  };
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
    if (this.canvas.classList.contains("fusion__canvas")) {
      const size = Number((/(\\d+(?:\\.\\d+)?)px/.exec(this.font) || [0, 0])[1]);
      const matrix = this.getTransform();
      const shown = size * Math.hypot(matrix.a, matrix.b) / (window.devicePixelRatio || 1);
      window.drawnText.push({ text: String(text), px: shown });
    }
    return draw.call(this, text, x, y, ...rest);
  };
})();
"""


@pytest.fixture
def adam_48_run(users):
    return explored_run(users["owner"], "w" * 22, ADAM_48, ["xla", "cost"],
                        "48-tensor Adam step")


def plan_level_ids(page, pane: str = "fusion-graph") -> list[str]:
    """The boxes of the plan level (kernels and the nodes no kernel computes), from the graph
    API the view itself reads."""
    return page.evaluate("""async (pane) => {
        const root = document.getElementById(pane);
        const url = `${root.dataset.graphUrl}?device=${root.dataset.device}` +
                    `&strategy=${root.dataset.strategy}`;
        const body = await (await fetch(url)).json();
        return body.layout.top.map((entry) => entry.id);
    }""", pane)


def locate_all(page, ids: list[str], pane: str = "fusion-graph") -> list[dict]:
    return page.evaluate("""([pane, ids]) => ids.map((id) =>
        document.getElementById(pane).fusionView.locate(id))""", [pane, ids])


def covered_share(boxes: list[dict], width: float, height: float) -> float:
    """The share of a width x height canvas inside the bounding box of `boxes`."""
    left = max(0.0, min(b["x"] for b in boxes))
    top = max(0.0, min(b["y"] for b in boxes))
    right = min(width, max(b["x"] + b["w"] for b in boxes))
    bottom = min(height, max(b["y"] + b["h"] for b in boxes))
    return max(0.0, right - left) * max(0.0, bottom - top) / (width * height)


def on_screen(boxes: list[dict], width: float, height: float) -> list[dict]:
    return [b for b in boxes if b["x"] + b["w"] > 0 and b["x"] < width and
            b["y"] + b["h"] > 0 and b["y"] < height]


def canvas_box(page) -> dict:
    """The canvas's box on screen, scrolled into view (a screenshot of a part of the page may
    have scrolled it)."""
    page.locator(CANVAS).scroll_into_view_if_needed()
    return page.locator(CANVAS).bounding_box()


def open_run(page, live_server, run, plan: str = "h100/xla"):
    page.add_init_script(RECORD_TEXT)
    log_in(page, live_server.url, "ada", next_path="/runs")
    page.goto(f"{live_server.url}/r/{run.pk}#{plan}")
    expect(page.locator(READY)).to_be_attached()
    page.locator(CANVAS).scroll_into_view_if_needed()


def test_a_wide_graph_opens_fitted_with_readable_labels_and_zooms_onto_it(
        adam_48_run, live_server, new_page, screenshots):
    page = new_page()
    open_run(page, live_server, adam_48_run)
    canvas = canvas_box(page)
    ids = plan_level_ids(page)
    assert len(ids) > 200           # the 48 chains' parameters and kernels, side by side
    boxes = locate_all(page, ids)
    share = covered_share(boxes, canvas["width"], canvas["height"])
    screenshots(page, "fusion-view-wide-opened", FUSION)
    assert share >= 0.6, f"the graph covers {share:.0%} of the canvas when opened"

    # Every box on screen has a label of readable size (four characters at least, not clipped
    # to nothing), and the kernels on screen are named.
    drawn = page.evaluate("window.drawnText")
    readable = [entry["text"] for entry in drawn
                if entry["px"] >= READABLE_PX and len(entry["text"].rstrip("…")) >= 4]
    shown = on_screen(boxes, canvas["width"], canvas["height"])
    assert len(readable) >= len(shown), (len(readable), len(shown), drawn[:10])
    kernels = {k["name"] for k in
               adam_48_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]}
    kernels_shown = {box_id for box_id, box in zip(ids, boxes) if box_id in kernels and
                     box in shown}
    assert kernels_shown
    assert all(any(name in text for text in readable) for name in kernels_shown)

    # Four presses of "+" with nothing picked: the graph still fills the canvas.
    for _ in range(4):
        page.locator("#fusion-zoom-in").click()
    boxes = locate_all(page, ids)
    share = covered_share(on_screen(boxes, canvas["width"], canvas["height"]) or boxes,
                          canvas["width"], canvas["height"])
    screenshots(page, "fusion-view-wide-zoomed-in", FUSION)
    assert on_screen(boxes, canvas["width"], canvas["height"]), "zoomed into empty space"
    assert share >= 0.5, f"after four presses of +, the graph covers {share:.0%} of the canvas"

    # A picked kernel stays where it is while the buttons zoom about it.
    page.locator("#fusion-fit").click()
    canvas = canvas_box(page)
    kernel = max(adam_48_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"],
                 key=lambda k: len(k["nodes"]))["name"]
    box = page.evaluate(f"document.getElementById('fusion-graph').fusionView"
                        f".locate({json.dumps(kernel)})")
    page.mouse.click(canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + box["h"] / 2)
    expect(page.locator("#fusion-info h4")).to_have_text(kernel)
    before = page.evaluate(f"document.getElementById('fusion-graph').fusionView"
                           f".locate({json.dumps(kernel)})")
    for _ in range(4):
        page.locator("#fusion-zoom-in").click()
    after = page.evaluate(f"document.getElementById('fusion-graph').fusionView"
                          f".locate({json.dumps(kernel)})")
    assert after["w"] > 2 * before["w"]
    assert abs((after["x"] + after["w"] / 2) - (before["x"] + before["w"] / 2)) <= 1
    assert abs((after["y"] + after["h"] / 2) - (before["y"] + before["h"] / 2)) <= 1

    # The wheel zooms about the cursor: the graph point under it stays under it.
    canvas = canvas_box(page)
    page.mouse.move(canvas["x"] + 200, canvas["y"] + 150)
    view = page.evaluate("document.getElementById('fusion-graph').fusionView.viewport()")
    under = (view["x"] + 200 / view["scale"], view["y"] + 150 / view["scale"])
    page.mouse.wheel(0, -300)
    page.wait_for_function(f"document.getElementById('fusion-graph').fusionView"
                           f".viewport().scale > {view['scale']}")
    view = page.evaluate("document.getElementById('fusion-graph').fusionView.viewport()")
    assert abs(view["x"] + 200 / view["scale"] - under[0]) < 0.5
    assert abs(view["y"] + 150 / view["scale"] - under[1]) < 0.5
    assert_no_js_errors(page)


def test_hovering_a_kernel_or_an_op_shows_its_card(adam_48_run, live_server, new_page,
                                                  screenshots):
    page = new_page()
    open_run(page, live_server, adam_48_run)
    canvas = canvas_box(page)
    card = page.locator("#fusion-graph .fusion__hover")
    kernel = adam_48_run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"][0]
    page.locator("#fusion-search").fill(kernel["name"])
    page.locator("#fusion-search").press("Enter")
    box = page.evaluate(f"document.getElementById('fusion-graph').fusionView"
                        f".locate({json.dumps(kernel['name'])})")
    page.mouse.move(canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + box["h"] / 2)
    expect(card).to_be_visible()
    expect(card).to_contain_text(kernel["name"])
    expect(card).to_contain_text(kernel["kind"])
    expect(card).to_contain_text(f"{len(kernel['nodes'])} ops")
    screenshots(page, "fusion-view-hover-kernel", FUSION)

    # An op of the kernel, found by name and so shown inside it: its kind and kernel.
    name = kernel["nodes"][-1]
    page.locator("#fusion-search").fill(name)
    page.locator("#fusion-search").press("Enter")
    op = page.evaluate(f"document.getElementById('fusion-graph').fusionView"
                       f".locate({json.dumps(name)}, {json.dumps(kernel['name'])})")
    canvas = canvas_box(page)
    page.mouse.move(canvas["x"] + op["x"] + op["w"] / 2, canvas["y"] + op["y"] + op["h"] / 2)
    expect(card).to_contain_text(name)
    expect(card).to_contain_text(f"in {kernel['name']}")
    # Off the graph (the corner of the canvas far from any box), the card goes.
    page.mouse.move(canvas["x"] + 2, canvas["y"] + canvas["height"] - 2)
    expect(card).to_be_hidden()
    assert_no_js_errors(page)


def test_side_by_side_panes_keep_a_small_minimap_and_open_on_the_counterparts(
        adam_48_run, live_server, new_page, screenshots):
    page = new_page()
    open_run(page, live_server, adam_48_run, plan="h100/cost")
    plans = adam_48_run.artifact["devices"]["h100"]["strategies"]
    # A cost kernel whose ops lie in xla kernels other than the one in the other pane's middle.
    owner = {node: k["name"] for k in plans["xla"]["kernels"] for node in k["nodes"]}
    kernel = max(plans["cost"]["kernels"], key=lambda k: len(k["nodes"]))
    counterparts = {owner[node] for node in kernel["nodes"] if node in owner}
    assert counterparts
    page.locator("#fusion-search").fill(kernel["name"])
    page.locator("#fusion-search").press("Enter")
    expect(page.locator("#fusion-info h4")).to_have_text(kernel["name"])

    page.locator("#fusion-side-by-side").check()
    other = page.locator("#fusion-graph-b")
    expect(other).to_have_attribute("data-ready", "true")
    expect(other).to_have_attribute("data-strategy", "xla")
    screenshots(page, "fusion-view-wide-side-by-side", FUSION)
    for pane in ("#fusion-graph", "#fusion-graph-b"):
        stage = page.locator(pane).bounding_box()
        minimap = page.locator(f"{pane} .fusion__minimap").bounding_box()
        share = minimap["width"] * minimap["height"] / (stage["width"] * stage["height"])
        assert share <= 0.05, f"{pane}'s minimap covers {share:.0%} of it"

    # The other pane opens on the kernels of its plan that compute the picked kernel's ops.
    assert set(page.evaluate(
        "document.getElementById('fusion-graph-b').fusionView.marked()")) == counterparts
    shown = page.locator("#fusion-graph-b canvas.fusion__canvas").bounding_box()
    boxes = locate_all(page, sorted(counterparts), "fusion-graph-b")
    assert on_screen(boxes, shown["width"], shown["height"]), boxes
    assert_no_js_errors(page)
