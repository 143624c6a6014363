"""workers.compile_run predicts with the active learned cost model of each of the run's devices
(workers.tasks.learned_models, compiler/cost/learned/registry.py).

The task runs in this process (Celery's `apply`): what is tested is which model file it picks
and that the artifact it stores carries that model's predictions, not the queue. The models
are untrained: their times are whatever random weights give, and only their presence is
checked.
"""
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from compiler.cost.learned.model import CostModel, ModelConfig
from compiler.cost.learned.train import save_model
from explorer import runs
from explorer.models import Run
from workers.tasks import compile_run, learned_models

SOFTMAX = Path(__file__).resolve().parents[2] / "tests/data/hlo/softmax.hlo"


def _model(directory: Path, device: str, version: int, origin: str) -> Path:
    path = directory / f"learned-{device}-v{version}.pt"
    save_model(path, CostModel(ModelConfig(hidden=8, embedding=4, layers=1)),
               extra={"device": device, "origin": origin, "version": version})
    return path


@pytest.fixture
def model_dir(tmp_path, settings):
    settings.LEARNED_MODEL_DIR = tmp_path
    settings.LEARNED_ALLOW_SYNTHETIC = False
    return tmp_path


def test_each_device_gets_its_newest_measured_model(model_dir, settings):
    measured = _model(model_dir, "h100", 1, "measured")
    synthetic = _model(model_dir, "h100", 2, "synthetic")

    assert learned_models(["a100", "h100"]) == {"h100": str(measured)}
    settings.LEARNED_ALLOW_SYNTHETIC = True
    assert learned_models(["a100", "h100"]) == {"h100": str(synthetic)}


def test_without_models_no_device_gets_one(model_dir):
    assert learned_models(["a100", "h100"]) == {}


@pytest.mark.django_db
def test_a_compiled_run_carries_the_active_models_predictions(model_dir):
    _model(model_dir, "h100", 1, "measured")
    owner = get_user_model().objects.create_user("owner")
    run = runs.submit_run(owner, SOFTMAX.read_bytes(), SOFTMAX.name, ["a100", "h100"],
                          ["xla"])

    compile_run.apply(args=[run.pk])

    run.refresh_from_db()
    assert run.status == Run.DONE, run.error
    h100 = run.artifact["devices"]["h100"]["strategies"]["xla"]
    assert h100["learned_model"] == {"label": "learned-h100-v1", "origin": "measured",
                                     "device": "h100"}
    assert all(kernel["learned_us"] > 0 for kernel in h100["kernels"])
    a100 = run.artifact["devices"]["a100"]["strategies"]["xla"]
    assert a100["learned_model"] is None
    assert {kernel["learned_us"] for kernel in a100["kernels"]} == {None}
