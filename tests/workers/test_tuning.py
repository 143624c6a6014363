"""The Tune action's job (workers.tune_run, explorer.models.TuneJob) on a real Celery worker:
it tunes a compiled run's plans, stores the search's result and saves the best plan as the
run's strategy "tuned", which the compile queue builds onto the run with its moves as its
decisions."""
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from explorer import runs
from explorer.models import Measurement, Run, SavedPlan, TuneJob
from tests.explorer.measurements import measurement_result
from tests.services import finished, wait_for_job, wait_for_run
from workers.tasks import tuning_candidate_files

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

    # A GPU worker measures the plans the tuner chose besides its best with the run's plans.
    candidates = tuning_candidate_files(Run.objects.get(pk=run.pk))
    chosen = [choice for choice in result["measure"] if choice["rank"] > 1]
    assert [entry["strategy"] for entry in candidates] == \
        [f"tuning:{choice['rank']}" for choice in chosen]
    measured_page_shows_the_measured_tuning(Run.objects.get(pk=run.pk), owner, candidates,
                                            result)

    # A second tuning replaces the tuned plan rather than adding one.
    again, _ = runs.request_tuning(Run.objects.get(pk=run.pk), owner, "h100", budget_s=60,
                                   evaluations=50, seed=1)
    assert wait_for(TuneJob, again.pk, [compile_queue.log]).status == TuneJob.DONE
    assert SavedPlan.objects.filter(run=run, kind=SavedPlan.TUNED).count() == 1


def measured_page_shows_the_measured_tuning(run, owner, candidates, result):
    """A measurement of the run's plans and the tuner's candidates (made-up times: there is no
    GPU here; the arithmetic is checked in tests/compiler/test_autotune.py), the candidate
    of rank 2 the fastest: the tuning card says so and the tuned plan's decisions get their
    measured gains; the API's tuning says the same."""
    from compiler.runtime.gpu import KernelRun, PlanRun, Timing
    from django.test import Client

    measured = measurement_result(run.artifact, "h100")
    strategies = measured["devices"]["h100"]["strategies"]
    tuned_us = strategies["tuned"]["end_to_end"]["median_us"]
    for entry in candidates:
        kernels = [KernelRun(k["name"], "loop", timing=Timing((1.0,) * 5, 1), nodes=k["nodes"])
                   for k in entry["file"]["kernels"]]
        plan = PlanRun(entry["strategy"], "NVIDIA H100", kernels,
                       end_to_end=Timing((tuned_us / 2,) * 5, 1))
        strategies[entry["strategy"]] = plan.to_dict()
    Measurement.objects.create(run=run, status=Measurement.DONE, result=measured,
                               gpu=measured["gpu"], compiler_version=measured["compiler_version"])
    client = Client()
    client.force_login(owner)
    page = client.get(f"/r/{run.pk}").content.decode()
    assert "Measured on the GPU" in page and "Plan #2 measured fastest" in page
    panel = client.get(f"/r/{run.pk}/plan/h100/tuned").content.decode()
    if result["best"]["moves"]:
        assert "measured gain" in panel
    tuning = client.get(f"/api/v1/runs/{run.pk}/tune").json()
    assert tuning["measured"]["fastest_rank"] == 2
    assert tuning["measured"]["regret"] > 0
    assert "plan_files" not in tuning["result"]
