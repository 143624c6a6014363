"""workers.compile_run against a real Redis and real Celery worker processes.

The workers share the test database file with this process (tests/conftest.py), so the tests
submit runs the way the web app does and watch the rows the workers write.
"""
import gzip
import hashlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model

from explorer import runs
from explorer.models import KernelSource, PlanGraph, Run, RunArtifact
from tests.services import finished, send_to, wait_for_run
from workers import app
from workers.tasks import RUN_STAGES as STAGES
from workers.tasks import compile_run, import_learned_registry

REPO_ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = (REPO_ROOT / "tests/data/hlo/softmax.hlo").read_bytes()
RUN_TIMEOUT_S = 45

pytestmark = pytest.mark.timeout(120)


def wait_for(run_id: str, condition, what: str, logs) -> Run:
    return wait_for_run(run_id, condition, what, logs, RUN_TIMEOUT_S)


@pytest.fixture
def owner(transactional_db):
    return get_user_model().objects.create_user("ada", password="x")


def test_the_task_has_a_stable_name_late_acks_and_time_limits():
    assert compile_run.name == "workers.compile_run"
    assert compile_run.acks_late is True
    assert compile_run.reject_on_worker_lost is True
    assert 0 < compile_run.soft_time_limit < compile_run.time_limit
    assert app.amqp.router.route({}, compile_run.name)["queue"].name == "compile"


@pytest.mark.parametrize("queues, imported", [(["compile"], True), (["gpu"], False)])
def test_a_compile_worker_imports_the_learned_registry_as_it_starts(
        queues, imported, monkeypatch):
    """So that a fresh worker's first run does not wait for torch before exploring."""
    registry = "compiler.cost.learned.registry"
    monkeypatch.delitem(sys.modules, registry, raising=False)
    worker = SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(
        queues=SimpleNamespace(consume_from={name: None for name in queues}))))

    import_learned_registry(worker)

    assert (registry in sys.modules) is imported


def test_a_run_completes_with_its_artifact_and_kernel_sources(
        owner, compile_worker, redis_url, monkeypatch):
    monkeypatch.setattr(runs, "enqueue_compile", send_to(redis_url))

    run = runs.submit_run(owner, SOFTMAX, "softmax.hlo", ["h100"], ["xla", "unfused"])
    run = wait_for(run.id, finished, "done", [compile_worker.log])

    assert run.status == Run.DONE, run.error
    assert run.stage == STAGES[-1] and run.progress_done == run.progress_total > 0
    assert run.attempts == 1 and run.started <= run.finished
    # Every stage the pipeline has, in its order, each done, one after the other, within the
    # time the run took (the last one closes when the run is stored as done).
    assert [entry["name"] for entry in run.stages] == list(STAGES)
    times = [t for entry in run.stages for t in (entry["started"], entry["finished"])][:-1]
    assert times == sorted(times)
    assert run.started.timestamp() - 1 <= times[0] <= times[-1] <= run.finished.timestamp() + 1
    rows = run.status_dict()["stages"]
    assert [row["state"] for row in rows] == ["done"] * len(STAGES)
    assert sum(row["seconds"] for row in rows) <= (run.finished - run.started).total_seconds()
    assert set(run.artifact) == {"compiler_version", "graph", "devices"}
    # Each plan's fusion view is stored, laid out, with the run: the API serves it as is.
    stored = {(g.device, g.strategy): g for g in PlanGraph.objects.filter(run=run)}
    assert set(stored) == {("h100", "unfused"), ("h100", "xla")}
    view = json.loads(gzip.decompress(bytes(stored["h100", "xla"].data)))
    xla = run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
    assert [k["name"] for k in view["kernels"]] == [k["name"] for k in xla] \
        and set(view["layout"]) >= {"top", "inner", "layers"}
    assert list(run.artifact["devices"]["h100"]["strategies"]) == ["unfused", "xla"]
    kernels = run.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
    sources = KernelSource.objects.filter(run=run, device="h100", strategy="xla")
    assert sorted(s.kernel for s in sources) == sorted(k["name"] for k in kernels)
    source = sources.first()
    assert source.function in source.source
    assert ".entry" in source.ptx and source.resources["registers"] > 0
    assert all(isinstance(nodes, list) for nodes in source.line_nodes.values())


def test_a_bad_graph_fails_with_the_importers_message_at_stage_import(
        owner, compile_worker, redis_url, monkeypatch):
    monkeypatch.setattr(runs, "enqueue_compile", send_to(redis_url))
    # submit_run rejects a bad graph itself, so store one the way an older release might have.
    run = Run.objects.create(id="B" * 22, owner=owner, filename="bad.hlo",
                             graph_bytes=SOFTMAX[: len(SOFTMAX) // 2], devices=["h100"],
                             strategies=["xla"], compiler_version="test")
    runs.enqueue_compile(run.id)

    run = wait_for(run.id, finished, "failed", [compile_worker.log])

    assert run.status == Run.FAILED
    assert run.error_stage == "import"
    assert run.error.startswith("bad.hlo:")
    assert [(row["name"], row["state"]) for row in run.status_dict()["stages"]] == \
        [("import", "failed")] + [(name, "waiting") for name in STAGES[1:]]
    assert not KernelSource.objects.filter(run=run).exists()
    assert run.artifact is None


def test_a_failed_job_is_a_json_line_with_its_task_run_stage_and_traceback(
        owner, celery_env, redis_url, worker_factory):
    # A worker of its own (its own broker database): its whole log is this test's to read.
    broker_url = redis_url.rsplit("/", 1)[0] + "/6"
    worker = worker_factory("jsonlog", {**celery_env, "REDIS_URL": broker_url})
    run = Run.objects.create(id="J" * 22, owner=owner, filename="bad.hlo",
                             graph_bytes=SOFTMAX[: len(SOFTMAX) // 2], devices=["h100"],
                             strategies=["xla"], compiler_version="test")
    with app.connection_for_write(broker_url) as connection:
        task_id = compile_run.apply_async((run.id,), connection=connection).id

    run = wait_for(run.id, finished, "failed", [worker.log])

    assert run.status == Run.FAILED
    lines = worker.log_entries()
    (failure,) = [entry for entry in lines if entry["message"].startswith(f"Run {run.id} failed")]
    assert failure["level"] == "WARNING" and failure["logger"] == "workers.tasks"
    assert (failure["task_id"], failure["task_name"]) == (task_id, "workers.compile_run")
    assert (failure["run_id"], failure["stage"]) == (run.id, "import")
    assert failure["traceback"].startswith("Traceback (most recent call last)")
    assert "compiler.errors.InputError: bad.hlo:" in failure["traceback"]
    # Celery's own lines about the task are JSON too, and name it.
    assert any(entry["logger"] == "celery.worker.strategy" and task_id in entry["message"]
               for entry in lines)


def test_the_worker_reads_a_gzip_upload_from_the_graph_store_and_fails_one_whose_file_is_gone(
        owner, compile_worker, redis_url, monkeypatch):
    """The web process stores the upload's file (explorer/graph_store.py) and the worker, a
    process of its own, reads it from the same store: a gzip upload compiles; a run whose file
    was lost fails at import, saying to upload the graph again."""
    from django.conf import settings

    monkeypatch.setattr(runs, "enqueue_compile", send_to(redis_url))
    packed = gzip.compress(SOFTMAX)
    kept = runs.submit_run(owner, packed, "softmax.hlo.gz", ["h100"], ["xla"])
    lost = runs.submit_run(owner, SOFTMAX + b"\n// another file\n", "lost.hlo", ["h100"],
                           ["xla"])
    path = Path(settings.GRAPH_STORE_DIR) / lost.graph_id[:2] / lost.graph_id[2:4] / lost.graph_id
    path.unlink()

    kept = wait_for(kept.id, finished, "done", [compile_worker.log])
    lost = wait_for(lost.id, finished, "failed", [compile_worker.log])

    assert kept.status == Run.DONE, kept.error
    assert kept.graph_sha256 == hashlib.sha256(SOFTMAX).hexdigest()
    assert (lost.status, lost.error_stage) == (Run.FAILED, "import")
    assert "missing from the graph store" in lost.error and "upload the graph again" in lost.error


def test_a_job_whose_worker_is_killed_mid_job_is_redelivered_and_completes(
        owner, celery_env, redis_url, worker_factory, monkeypatch):
    # Workers of their own on another Redis database: the session's worker must not take the job.
    broker_url = redis_url.rsplit("/", 1)[0] + "/1"
    env = {**celery_env, "REDIS_URL": broker_url}
    doomed = worker_factory("doomed", {**env, "COMPILE_TEST_CODEGEN_DELAY_S": "60"})
    monkeypatch.setattr(runs, "enqueue_compile", send_to(broker_url))

    run = runs.submit_run(owner, SOFTMAX, "softmax.hlo", ["a100"], ["cost"])
    wait_for(run.id, lambda r: r.stage == "codegen", "at stage codegen", [doomed.log])
    doomed.kill()
    rescuer = worker_factory("rescuer", env)

    run = wait_for(run.id, finished, "done", [doomed.log, rescuer.log])

    assert run.status == Run.DONE, run.error
    assert run.attempts == 2
    # Taken up by a live worker: the rescuer, or the session's worker, whose sweeper (the same
    # database) may send the abandoned job again before the rescuer has started (a compile
    # worker imports torch as it starts).
    assert not run.claimed_by.startswith("doomed-")
    assert KernelSource.objects.filter(run=run).exists()


def test_the_plans_are_shown_as_explored_before_the_build_and_then_replaced_by_the_artifact(
        owner, celery_env, redis_url, worker_factory, monkeypatch):
    # A worker of its own that holds each run in codegen for a while: the preview is there to
    # be seen while nothing is built yet.
    broker_url = redis_url.rsplit("/", 1)[0] + "/7"
    worker = worker_factory("preview", {**celery_env, "REDIS_URL": broker_url,
                                        "COMPILE_TEST_CODEGEN_DELAY_S": "3"})
    monkeypatch.setattr(runs, "enqueue_compile", send_to(broker_url))
    strategies = ["unfused", "xla", "stitch", "cost"]

    run = runs.submit_run(owner, SOFTMAX, "softmax.hlo", ["h100"], strategies)
    compiling = wait_for(run.id, lambda r: r.stage == "codegen", "at stage codegen",
                         [worker.log])

    assert compiling.status == Run.RUNNING and compiling.artifact is None
    # The explore stage counted plans; every one was explored and previewed before codegen.
    explore = next(entry for entry in compiling.stages if entry["name"] == "explore")
    assert explore["finished"] is not None
    preview = compiling.preview
    assert preview["explored"] == {"plans": 4, "of": 4}
    assert list(preview["devices"]["h100"]["strategies"]) == strategies
    explored = preview["devices"]["h100"]["strategies"]
    assert all(kernel["registers"] is None for plan in explored.values()
               for kernel in plan["kernels"])
    assert not KernelSource.objects.filter(run=run).exists()

    done = wait_for(run.id, finished, "done", [worker.log])

    assert done.status == Run.DONE, done.error
    assert done.preview is None
    built = done.artifact["devices"]["h100"]["strategies"]
    assert "explored" not in done.artifact and "preview" not in done.artifact
    for name, plan in explored.items():
        assert [k["nodes"] for k in built[name]["kernels"]] == \
            [k["nodes"] for k in plan["kernels"]]
    assert any(kernel["registers"] for plan in built.values() for kernel in plan["kernels"])


def test_a_run_that_fails_after_exploring_leaves_no_preview(
        owner, celery_env, redis_url, worker_factory, monkeypatch):
    # Held in codegen past its soft time limit (which the message carries): the run fails with
    # its plans explored.
    broker_url = redis_url.rsplit("/", 1)[0] + "/8"
    worker = worker_factory("doomed-preview", {**celery_env, "REDIS_URL": broker_url,
                                               "COMPILE_TEST_CODEGEN_DELAY_S": "60"})

    def enqueue(run_id: str) -> None:
        with app.connection_for_write(broker_url) as connection:
            compile_run.apply_async((run_id,), connection=connection, soft_time_limit=10,
                                    time_limit=70)
    monkeypatch.setattr(runs, "enqueue_compile", enqueue)

    run = runs.submit_run(owner, SOFTMAX, "softmax.hlo", ["h100"], ["xla", "cost"])
    compiling = wait_for(run.id, lambda r: r.preview is not None and r.stage == "codegen",
                         "previewed", [worker.log])
    assert compiling.preview["explored"] == {"plans": 2, "of": 2}

    failed = wait_for(run.id, finished, "failed", [worker.log])

    assert (failed.status, failed.error_stage) == (Run.FAILED, "codegen")
    assert failed.preview is None and failed.artifact is None
    assert not RunArtifact.objects.filter(run_id=run.id).exists()
