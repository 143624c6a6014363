"""The uploaded source in a real browser: reached from the run page, its lines coloured by the
kernel of the chosen plan, `#L12-L20` marking a range, a line's kernel link opening that
kernel's page, and the plan picker switching the colours; the link kept in view on long
StableHLO lines, and an ONNX model shown as text."""
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LAYER_NORM_BWD, explored_run
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


def test_the_source_marks_ranges_links_kernels_and_follows_the_plan(layer_norm_run,
                                                                    live_server, new_page,
                                                                    screenshots):
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{layer_norm_run.pk}")
    page.locator("#source-link").click()
    expect(page.locator("h1")).to_contain_text(LAYER_NORM_BWD.name)
    lines = page.locator("#upload > li")
    expect(lines).to_have_count(len(LAYER_NORM_BWD.read_text().splitlines()))

    # The fastest plan by default: every kernel-coloured line names a kernel of that plan.
    plans = layer_norm_run.artifact["devices"]["h100"]["strategies"]
    # The lowest projected total, ties to the earlier strategy in exploration order.
    fastest = min(plans, key=lambda name: plans[name]["total"]["proj_us"])
    expect(page.locator('select[name="strategy"]')).to_have_value(fastest)
    names = {kernel["name"] for kernel in plans[fastest]["kernels"]}
    coloured = page.locator("#upload > li.has-kernel")
    assert coloured.count() > 3
    assert {coloured.nth(k).get_attribute("data-kernel") for k in range(coloured.count())} <= names

    # A range in the URL marks its lines; a single line is the :target.
    page.goto(page.url.split("#")[0] + "#L5-L9")
    expect(page.locator("#upload > li.is-marked")).to_have_count(5)
    expect(page.locator("#L5")).to_have_class(re.compile(r"\bis-marked\b"))
    screenshots(page, "source-range")

    # The xla plan: more kernels, other colours; a line's kernel link opens that kernel's page.
    page.locator('select[name="strategy"]').select_option("xla")
    page.locator("#source-plan button").click()
    expect(page.locator('select[name="strategy"]')).to_have_value("xla")
    link = page.locator("#upload > li.has-kernel .upload__kernel").first
    kernel = link.inner_text().removeprefix("also in ")
    assert kernel in {k["name"] for k in plans["xla"]["kernels"]}
    link.click()
    expect(page).to_have_url(f"{live_server.url}/r/{layer_norm_run.pk}/h100/xla/{kernel}")
    assert_no_js_errors(page)


STABLEHLO_STEP = Path(__file__).resolve().parents[1] / "data" / "stablehlo" / \
    "llama_rope_step.mlir"
ONNX_ENCODER = Path(__file__).resolve().parents[1] / "data" / "onnx" / \
    "transformer_encoder.dynamo.onnx"


def test_the_kernel_link_of_a_long_stablehlo_line_stays_in_view(users, live_server, new_page,
                                                                screenshots):
    """StableHLO lines run to hundreds of characters (types, attributes): the link to the
    line's kernel, after the text, is kept at the list's right edge instead of off screen."""
    run = explored_run(users["owner"], "s" * 22, STABLEHLO_STEP, ["xla", "cost"],
                       "llama RoPE step")
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{run.pk}/source")
    lines = page.locator("#upload > li.has-kernel")
    lengths = page.evaluate("""() => [...document.querySelectorAll('#upload > li.has-kernel')]
        .map((li) => li.querySelector('code').textContent.length)""")
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    assert lengths[longest] > 200
    line = lines.nth(longest)
    line.scroll_into_view_if_needed()
    link = line.locator(".upload__kernel")
    expect(link).to_be_in_viewport(ratio=1)
    # Still there with the text scrolled sideways, and it opens the kernel's page.
    page.locator(".upload__scroll").evaluate("(box) => { box.scrollLeft = 400; }")
    expect(link).to_be_in_viewport(ratio=1)
    screenshots(page, "source-long-stablehlo-line", full_page=False)
    kernel = link.inner_text().removeprefix("also in ")
    expect(link).to_have_attribute(
        "href", re.compile(rf"^/r/{run.pk}/h100/\w+/{re.escape(kernel)}$"))
    assert_no_js_errors(page)


def test_an_onnx_upload_shows_its_nodes_as_text_coloured_by_kernel(users, live_server,
                                                                   new_page, screenshots):
    """An ONNX model is binary: its source page lists the model in ONNX's printable text form
    (onnx.printer, one line per node), each node's line coloured by the kernel that computes
    its output and linked to that kernel's page."""
    import onnx

    model = onnx.load(str(ONNX_ENCODER))
    run = explored_run(users["owner"], "o" * 22, ONNX_ENCODER, ["xla", "cost"],
                       "transformer encoder")
    page = new_page()
    log_in(page, live_server.url, "ada", next_path=f"/r/{run.pk}/source?strategy=xla")
    expect(page.locator("#no-text")).to_have_count(0)
    texts = page.locator("#upload > li code").all_inner_texts()
    # Every node of the model on a line of its own, as `[name] outputs = OpType ...`.
    for node in model.graph.node:
        printed = [text for text in texts if text.strip().startswith(f"[{node.name}] ")]
        assert len(printed) == 1, node.name
        assert f" = {node.op_type}" in printed[0]

    # The node lines the xla plan's kernels compute are coloured and linked to them.
    kernels = run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
    owner = {name: kernel["name"] for kernel in kernels for name in kernel["nodes"]}
    coloured = page.locator("#upload > li.has-kernel")
    assert coloured.count() >= len(model.graph.node) // 2
    for k in range(coloured.count()):
        line = coloured.nth(k)
        output = re.match(r"\s*\[[^\]]*\] (\S+?),? ", line.locator("code").inner_text())[1]
        if output in owner and line.get_attribute("class") == "has-kernel":
            assert line.get_attribute("data-kernel") == owner[output]
    screenshots(page, "source-onnx", full_page=False)
    link = coloured.first.locator(".upload__kernel")
    kernel = link.inner_text().removeprefix("also in ")
    expect(link).to_have_attribute("href", f"/r/{run.pk}/h100/xla/{kernel}")
    assert_no_js_errors(page)
