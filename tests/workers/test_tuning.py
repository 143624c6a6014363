"""The Tune action's job (workers.tune_run, explorer.models.TuneJob) on a real Celery worker:
it tunes a compiled run's plans, stores the search's result and saves the best plan as the
run's strategy "tuned", which the compile queue builds onto the run with its moves as its
decisions."""
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from explorer import runs
from explorer.models import Run, SavedPlan, TuneJob
from tests.services import finished, wait_for_job, wait_for_run

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYER_NORM_BWD = REPO_ROOT / "tests/data/hlo/layer_norm_bwd.hlo"
TIMEOUT_S = 90

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def owner(transactional_db):
    return get_user_model().objects.create_user("ada", password="x")


def wait_for(model, pk, logs):
    return wait_for_job(model, pk, logs, TIMEOUT_S)


def test_a_tuning_saves_its_best_plan_as_the_runs_tuned_strategy(owner, compile_queue):
    run = runs.submit_run(owner, LAYER_NORM_BWD.read_bytes(), LAYER_NORM_BWD.name, ["h100"],
                          ["xla", "stitch", "cost"])
    run = wait_for_run(run.pk, finished, "done", [compile_queue.log], TIMEOUT_S)
    assert run.status == Run.DONE, run.error

    job, created = runs.request_tuning(run, owner, "h100", budget_s=60, evaluations=300)
    assert created
    job = wait_for(TuneJob, job.pk, [compile_queue.log])
    assert job.status == TuneJob.DONE, job.error
    # One worker process on the compile queue: one share, the tuning as the CLI runs it.
    assert [share.status for share in job.shares.all()] == ["done"]
    result = job.result
    assert result["evaluations"] == 300
    assert result["best"]["score_us"] <= min(result["starts"].values())
    assert set(result["starts"]) == {"xla", "stitch", "cost"}

    saved = SavedPlan.objects.get(run=run, kind=SavedPlan.TUNED)
    saved = wait_for(SavedPlan, saved.pk, [compile_queue.log])
    assert saved.status == SavedPlan.DONE, saved.error
    tuned = Run.objects.get(pk=run.pk).artifact["devices"]["h100"]["strategies"]["tuned"]
    # Its moves are its decisions, each with the gain the model predicted.
    assert [d["subject"] for d in tuned["decisions"]] == \
        [m["edit"] for m in result["best"]["moves"]]
    assert tuned["cost_model"] == "projected" and tuned["tuning"]["evaluations"] == 300
    # Built like any plan: its built total is the tuner's score, give or take what nvcc's
    # registers change in the projection.
    assert tuned["total"]["proj_us"] == pytest.approx(result["best"]["score_us"], rel=0.05)

    # A second tuning replaces the tuned plan rather than adding one.
    again, _ = runs.request_tuning(Run.objects.get(pk=run.pk), owner, "h100", budget_s=60,
                                   evaluations=50, seed=1)
    assert wait_for(TuneJob, again.pk, [compile_queue.log]).status == TuneJob.DONE
    assert SavedPlan.objects.filter(run=run, kind=SavedPlan.TUNED).count() == 1
