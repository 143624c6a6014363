"""An ONNX model with its external data, dropped on the upload page as a user drags the folder's
two files from a file manager: `model.onnx` and `model.onnx.data` in one drop. The worker
compiles the model file and the run page lists the importer's notes on the weights it did not
read; the same two files zipped and dropped open the same run.

The drop is the browser's own: a `drop` event (after `dragenter` and `dragover`, as a drag
sends them) whose DataTransfer holds File objects made in the page from the files' bytes, so
the page's script takes them from `event.dataTransfer.files` as it does from a real drag."""
import base64
import re
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import uses_external_data
from playwright.sync_api import expect

from explorer.models import Run
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S, wait_for_run

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)

# The two weight matrices (64 kB each) go to the data file, past onnx.save_model's 1 kB
# threshold; the biases (512 bytes) stay in the model file, as small tensors do in an export.
HIDDEN = 128


def mlp_with_external_data(folder: Path) -> tuple[Path, Path]:
    """A two-layer MLP with a softmax, saved as model.onnx plus its weights in model.onnx.data."""
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["a"]),
             helper.make_node("MatMul", ["a", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["ob"]),
             helper.make_node("Softmax", ["ob"], ["y"], axis=-1)]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, HIDDEN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, HIDDEN])],
        initializer=[weight("w1", HIDDEN, HIDDEN), weight("b1", HIDDEN),
                     weight("w2", HIDDEN, HIDDEN), weight("b2", HIDDEN)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model_path, data_path = folder / "model.onnx", folder / "model.onnx.data"
    onnx.save_model(model, str(model_path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=data_path.name)
    return model_path, data_path


def drop_files(page, selector: str, files: list[Path]) -> None:
    """Drag `files` onto the element and drop them there, all in one drop."""
    transfer = page.evaluate_handle(
        """(files) => {
          const transfer = new DataTransfer();
          for (const {name, data} of files) {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            transfer.items.add(new File([bytes], name));
          }
          return transfer;
        }""",
        [{"name": path.name, "data": base64.b64encode(path.read_bytes()).decode()}
         for path in files])
    for event in ("dragenter", "dragover", "drop"):
        page.dispatch_event(selector, event, {"dataTransfer": transfer})


def choose_only(page, strategy: str) -> None:
    for box in page.locator("input[name=strategies]").all():
        box.set_checked(box.get_attribute("value") == strategy)


def test_an_onnx_model_dropped_with_its_data_file_compiles_and_shows_the_importers_notes(
        users, compile_queue, live_server, new_page, tmp_path):
    model_path, data_path = mlp_with_external_data(tmp_path)
    kept_outside = [tensor.name for tensor in onnx.load(str(model_path),
                                                        load_external_data=False).graph.initializer
                    if uses_external_data(tensor)]
    assert kept_outside == ["w1", "w2"]
    assert data_path.stat().st_size == 2 * HIDDEN * HIDDEN * 4

    base_url = live_server.url
    page = new_page()
    log_in(page, base_url, "ada")
    drop_files(page, "#drop-zone", [data_path, model_path])
    chosen = page.locator("#chosen-file")
    expect(chosen).to_contain_text(f"model.onnx.data ({data_path.stat().st_size:,} bytes)")
    expect(chosen).to_contain_text(f"model.onnx ({model_path.stat().st_size:,} bytes)")
    assert page.locator("#upload-form input[name=graph_file]").evaluate("input => input.files.length") \
        == 2
    choose_only(page, "xla")
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")

    assert re.fullmatch(rf"{re.escape(base_url)}/r/\w{{22}}", page.url), page.url
    run = wait_for_run(page, page.url.rsplit("/", 1)[-1])
    assert (run.filename, run.strategies) == ("model.onnx", ["xla"])
    assert run.graph_bytes == model_path.read_bytes()

    notes = page.locator("#import-notes")
    expect(notes.locator("summary")).to_contain_text(f"({len(kept_outside)})")
    items = notes.locator("li")
    expect(items).to_have_count(len(kept_outside))
    for index, name in enumerate(kept_outside):
        expect(items.nth(index)).to_have_text(
            f"initializer '{name}' keeps its data outside the model file; it is a parameter "
            "of the graph")
    assert_no_js_errors(page)

    # The two files zipped, as a user zips the export's folder: the same graph with the same
    # options is the same run, opened again without a second compile.
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for path in (model_path, data_path):
            bundle.write(path, f"export/{path.name}")
    page.goto(base_url)
    drop_files(page, "#drop-zone", [archive])
    expect(chosen).to_contain_text(f"export.zip ({archive.stat().st_size:,} bytes)")
    choose_only(page, "xla")
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")
    assert page.url == f"{base_url}/r/{run.pk}"
    assert Run.objects.count() == 1
    expect(page.locator("#import-notes li")).to_have_count(len(kept_outside))
    assert_no_js_errors(page)
