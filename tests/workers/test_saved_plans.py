"""Saved plans (explorer.models.SavedPlan) compiled by a real Celery worker onto their run:
workers.compile_saved_plan against a real Redis, the rows it writes checked here."""
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from compiler.fusion.explore import explore
from compiler.fusion.plan_files import graph_facts
from compiler.stages.pipeline import import_graph
from compiler.stages.whatif import WhatIf
from explorer import runs
from explorer.models import KernelSource, PlanGraph, Run, SavedPlan
from tests.services import finished, wait_for_job, wait_for_run
from workers import app
from workers.tasks import compile_saved_plan

REPO_ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = REPO_ROOT / "tests/data/hlo/softmax.hlo"
TIMEOUT_S = 60

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def owner(transactional_db):
    return get_user_model().objects.create_user("ada", password="x")


def wait_for_plan(pk: int, logs) -> SavedPlan:
    return wait_for_job(SavedPlan, pk, logs, TIMEOUT_S)


def test_the_task_has_a_stable_name_on_the_compile_queue():
    assert compile_saved_plan.name == "workers.compile_saved_plan"
    assert compile_saved_plan.acks_late is True
    assert app.amqp.router.route({}, compile_saved_plan.name)["queue"].name == "compile"


def test_a_plan_saved_while_the_run_compiles_lands_on_its_artifact_beside_the_strategies(
        owner, compile_queue):
    graph = import_graph(SOFTMAX.read_bytes(), SOFTMAX.name)
    unfused = explore(graph, "h100", ["unfused"])["unfused"].to_dict()
    session = WhatIf(graph, "h100", "graph", "unfused", unfused["kernels"])
    first, second = unfused["kernels"][0]["name"], unfused["kernels"][1]["name"]
    answer = session.replay([{"op": "merge", "kernels": [first, second]}])
    assert answer["refused"] is None, answer["refused"]

    run = runs.submit_run(owner, SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"],
                          ["unfused", "xla"])
    # Saved before the run is done: the task leaves it queued, and the run's finish sends it.
    saved, target = runs.save_plan(run, owner, "h100", "merged", session.plan_file())
    assert target.pk == run.pk
    run = wait_for_run(run.pk, finished, "done", [compile_queue.log], TIMEOUT_S)
    assert run.status == Run.DONE, run.error

    saved = wait_for_plan(saved.pk, [compile_queue.log])
    assert saved.status == SavedPlan.DONE, saved.error
    run = Run.objects.get(pk=run.pk)
    plans = run.artifact["devices"]["h100"]["strategies"]
    assert list(plans) == ["unfused", "xla", "custom:merged"]
    custom = plans["custom:merged"]
    assert len(custom["kernels"]) == len(unfused["kernels"]) - 1
    assert [k["nodes"] for k in custom["kernels"]] == [k["nodes"] for k in
                                                     session.plan_file()["kernels"]]
    # Built like any strategy's plan: ptxas's registers, a projected total, its CUDA stored.
    assert all(k["registers"] for k in custom["kernels"] if k["kind"] != "library")
    assert custom["total"]["proj_us"] > 0 and custom["total"]["speedup_vs_unfused"] > 0
    sources = KernelSource.objects.filter(run=run, strategy="custom:merged")
    assert sorted(s.kernel for s in sources) == sorted(k["name"] for k in custom["kernels"])
    assert PlanGraph.objects.filter(run=run, strategy="custom:merged").exists()
    assert run.plans_changed is not None


def test_a_plan_file_that_does_not_fit_the_graph_fails_saying_why_and_the_run_is_untouched(
        owner, compile_queue):
    run = runs.submit_run(owner, SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], ["xla"])
    run = wait_for_run(run.pk, finished, "done", [compile_queue.log], TIMEOUT_S)
    graph = import_graph(SOFTMAX.read_bytes(), SOFTMAX.name)
    xla = run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
    made = {"format": "fusion-explorer-plan", "version": 1, "graph": graph_facts(graph),
            "kernels": [{"name": k["name"], "nodes": k["nodes"]} for k in xla][1:]}
    saved, _ = runs.save_plan(run, owner, "h100", "partial", made)

    saved = wait_for_plan(saved.pk, [compile_queue.log])
    assert saved.status == SavedPlan.FAILED
    assert "is in no kernel" in saved.error and "custom:partial" in saved.error
    after = Run.objects.get(pk=run.pk)
    assert after.status == Run.DONE
    assert list(after.artifact["devices"]["h100"]["strategies"]) == ["xla"]
    assert not KernelSource.objects.filter(run=run, strategy="custom:partial").exists()
