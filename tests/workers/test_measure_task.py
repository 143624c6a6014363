"""workers.measure_run against a real Redis and real Celery worker processes on the gpu queue.

This machine has no GPU, so a gpu-queue worker here announces that it cannot measure and fails
the job with the reason; tests/gpu/test_measure_gpu.py runs the measurement itself on a GPU.
"""
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from compiler.pipeline import compile_graph
from explorer import runs
from explorer.models import Measurement, Run
from explorer.presence import gpu_status
from workers import app
from workers.tasks import measure_run

SOFTMAX = Path(__file__).resolve().parents[1] / "data" / "hlo" / "softmax.hlo"
TIMEOUT_S = 45

pytestmark = pytest.mark.timeout(120)


def send_measure_to(broker_url: str):
    def enqueue(measurement_id: int) -> None:
        with app.connection_for_write(broker_url) as connection:
            measure_run.apply_async((measurement_id,), connection=connection)
    return enqueue


def wait_until(condition, what: str, logs):
    deadline = time.monotonic() + TIMEOUT_S
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"never {what}\n" + "\n".join(log() for log in logs))
        time.sleep(0.1)
    return value


@pytest.fixture
def done_run(transactional_db) -> Run:
    owner = get_user_model().objects.create_user("ada", password="x")
    artifact = compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], ["cost"])
    artifact.pop("sources")
    return Run.objects.create(id="m" * 22, owner=owner, filename=SOFTMAX.name,
                              graph_bytes=SOFTMAX.read_bytes(), devices=["h100"],
                              strategies=["cost"], compiler_version="test",
                              status=Run.DONE, artifact=artifact)


def test_the_task_has_a_stable_name_late_acks_time_limits_and_the_gpu_queue():
    assert measure_run.name == "workers.measure_run"
    assert measure_run.acks_late is True and measure_run.reject_on_worker_lost is True
    assert 0 < measure_run.soft_time_limit < measure_run.time_limit
    assert app.amqp.router.route({}, measure_run.name)["queue"].name == "gpu"


def test_a_measurement_waits_for_a_gpu_worker_which_takes_it_later(
        done_run, celery_env, redis_url, worker_factory, monkeypatch):
    # A Redis database of its own: no worker of the session may see this queue.
    broker_url = redis_url.rsplit("/", 1)[0] + "/2"
    monkeypatch.setattr(runs, "enqueue_measure", send_measure_to(broker_url))
    assert gpu_status(broker_url)["online"] is False

    measurement, created = runs.request_measurement(done_run, done_run.owner)
    assert created
    time.sleep(1)  # nobody consumes the gpu queue yet: the job waits
    assert Measurement.objects.get(pk=measurement.pk).status == Measurement.QUEUED

    worker = worker_factory("gpu", {**celery_env, "REDIS_URL": broker_url}, queues="gpu")
    announced = wait_until(lambda: gpu_status(broker_url)["workers"], "announced", [worker.log])
    assert announced[0]["hostname"].startswith("gpu-")
    assert announced[0]["gpu"] is None and "CuPy is not installed" in announced[0]["reason"]
    assert "listens on the gpu queue but cannot measure" in gpu_status(broker_url)["summary"]

    failed = wait_until(
        lambda: Measurement.objects.filter(pk=measurement.pk, status=Measurement.FAILED).first(),
        "failed", [worker.log])
    assert failed.error_stage == "gpu"
    assert failed.error.startswith("The GPU worker gpu-") and "no GPU" in failed.error
    assert failed.attempts == 1 and failed.result is None
    assert worker.process.poll() is None  # the worker lives on
    # Its log is JSON lines; the failure's names the task, the job and its run, and the stage.
    (failure,) = [entry for entry in worker.log_entries()
                  if entry["message"].startswith(f"Measurement {measurement.pk} failed")]
    assert failure["task_name"] == "workers.measure_run" and failure["task_id"]
    assert (failure["measurement_id"], failure["run_id"]) == (measurement.pk, done_run.pk)
    assert failure["stage"] == "gpu" and "GpuUnavailable" in failure["traceback"]

    worker.process.terminate()
    worker.process.wait(20)
    assert gpu_status(broker_url)["workers"] == []  # it said goodbye
