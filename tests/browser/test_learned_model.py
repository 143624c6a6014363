"""The learned cost model in a real browser: a compile worker that has a model predicts every
generated kernel, the run page shows the learned column with the synthetic note, and the
cost-models page shows the model with its held-out figures.

The model is tiny and trained for 2 epochs on synthetic targets (tests/explorer/learned.py):
the test is about the pages and the worker, not about accuracy."""
import re
from pathlib import Path

import pytest

from compiler.cost.learned.predict import OUTSIDE
from compiler.cost.learned.train import read_header
from explorer.templatetags.explorer_format import us
from tests.browser.test_upload_flow import assert_no_js_errors, log_in
from tests.browser.waits import TEST_TIMEOUT_S, wait_for_run
from tests.explorer.learned import train_fixture_models

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo" / "attention_block.hlo"
QUEUE = "compile-learned"

pytestmark = pytest.mark.timeout(TEST_TIMEOUT_S)


@pytest.fixture
def learned_worker(tmp_path, celery_env, redis_url, worker_factory, monkeypatch, settings):
    """A compile worker of its own queue that uses the models of a fresh directory (a measured
    v1 and a synthetic v2, synthetic allowed: v2 is active); runs submitted go to it."""
    from explorer import runs
    from workers import app
    from workers.tasks import compile_run

    models = tmp_path / "models"
    models.mkdir()
    train_fixture_models(models)
    env = {**celery_env, "LEARNED_MODEL_DIR": str(models), "LEARNED_ALLOW_SYNTHETIC": "1"}
    worker_factory("learned", env, queues=QUEUE)

    def enqueue(run_id: str) -> None:
        with app.connection_for_write(redis_url) as connection:
            compile_run.apply_async((run_id,), connection=connection, queue=QUEUE)
    monkeypatch.setattr(runs, "enqueue_compile", enqueue)
    settings.LEARNED_MODEL_DIR = str(models)
    settings.LEARNED_ALLOW_SYNTHETIC = True
    return models


def test_a_worker_with_a_model_fills_the_learned_column_and_the_model_has_its_page(
        users, learned_worker, live_server, new_page, screenshots):
    base_url = live_server.url
    page = new_page()
    log_in(page, base_url, "ada")
    page.set_input_files("#upload-form input[name=graph_file]", str(HLO))
    with page.expect_navigation():
        page.click("#upload-form button[type=submit]")
    run = wait_for_run(page, page.url.rsplit("/", 1)[-1])
    plans = run.artifact["devices"]["h100"]["strategies"]

    # The worker predicted with the active model: every generated kernel like the ones it
    # was trained on; no library call, and no kernel outside its training, which says why.
    predicted = 0
    for plan in plans.values():
        model = plan["learned_model"]
        assert {key: model[key] for key in ("label", "origin", "device")} == {
            "label": "learned-h100-v2", "origin": "synthetic", "device": "h100"}
        assert "program" in model["evaluation"]   # its held-out figures, for the verdict
        for kernel in plan["kernels"]:
            skipped = kernel["learned_skipped"]
            assert (kernel["learned_us"] is None) == (skipped is not None)
            if kernel["kind"] == "library":
                assert skipped == "a library call"
            else:
                assert skipped is None or skipped.startswith(OUTSIDE)
            predicted += kernel["learned_us"] is not None
    assert predicted > 0
    line = page.locator(".device:not([hidden]) .learned-line")
    assert "predicted by learned-h100-v2" in line.inner_text()
    assert "synthetic targets" in line.locator(".learned-synthetic").inner_text()
    learned_cells = page.locator(".device:not([hidden]) .comparison__learned")
    assert learned_cells.all_inner_texts() == [us(plan["total"]["learned_us"])
                                               for plan in plans.values()]
    panel = page.locator(".device:not([hidden]) .strategy:not([hidden])")
    # Kernels show the learned device work; the plan's launch term has a column of its own.
    expected = {k["name"]: us(k["learned_device_us"])
                for k in plans[panel.get_attribute("data-tab")]["kernels"]}
    rows = panel.locator("tr[data-kernel]")
    assert rows.count() > 0
    for k in range(rows.count()):
        row = rows.nth(k)
        learned = row.locator("td.kernels__learned").inner_text()
        assert learned == expected[row.get_attribute("data-kernel")]
    assert_no_js_errors(page)
    screenshots(page, "run-learned")

    page.locator(".site-header a", has_text="Cost models").click()
    page.wait_for_url(f"{base_url}/cost-models")
    section = page.locator("#device-h100")
    assert re.search(r"learned-h100-v2\s*active", section.locator("h3").inner_text())
    assert "synthetic targets" in section.locator(".cost-models__banner").inner_text().lower()
    header = read_header(learned_worker / "learned-h100-v2.pt")
    mape = header["evaluation"]["program"]["learned"]["mape"]
    program_table = section.locator('[data-split="program"]')
    assert f"{mape:.1f}" in program_table.locator('[data-model="learned"]').inner_text()
    assert_no_js_errors(page)
    screenshots(page, "cost-models")
