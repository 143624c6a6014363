"""Faults with real processes: a real Redis and real Celery workers, killed, starved or cut
off, and no run is lost, stuck or computed twice.

Each test has a broker of its own (another Redis database, or a Redis server of its own), so
the session's worker never takes its jobs. The workers run with a short lease (tests/services.py)
so that what takes minutes in production takes seconds here.
"""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from explorer import queues, runs
from explorer.models import Run
from tests.explorer.access import SOFTMAX
from tests.services import _free_loopback_port, _stop, finished, send_to, start_redis, wait_for_run

RUN_TIMEOUT_S = 60
# A run whose message a Redis restarted empty lost is sent again within this long of a worker
# that sweeps every second being ready: its first sweep (about a second), with room for a
# loaded machine; far less than JOB_RESEND_S, the 5 minutes it took before.
RESEND_BOUND_S = 20

pytestmark = pytest.mark.timeout(180)


def _softmax() -> bytes:
    return SOFTMAX.read_bytes()


def wait_for(run_id: str, condition, what: str, logs) -> Run:
    return wait_for_run(run_id, condition, what, logs, RUN_TIMEOUT_S)


@pytest.fixture
def owner(transactional_db):
    return get_user_model().objects.create_user("ada", password="x")


def other_broker(redis_url: str, database: int) -> str:
    return f"{redis_url.rsplit('/', 1)[0]}/{database}"


def send_jobs_to(broker: str, monkeypatch) -> None:
    """Make the app send its jobs to `broker`, the way it sends them (runs._enqueue: a broker
    down leaves the job unsent; a sent one gets its enqueued_at; queues.send_job: by the task's
    name), giving up on a broker that is down after one retry."""
    send_job = queues.send_job

    def to_this_broker(task_name: str, pk) -> None:
        with queues.app.connection_for_write(broker) as connection:
            send_job(task_name, pk, connection=connection, retry_policy={"max_retries": 1})
    monkeypatch.setattr(queues, "send_job", to_this_broker)


def test_a_live_worker_keeps_its_job_through_a_long_silent_stage_and_a_duplicate_delivery(
        owner, celery_env, redis_url, worker_factory, monkeypatch):
    # The first worker spends 10 s at the start of codegen without a word of progress: more
    # than two leases of the tests' 4 s. Its heartbeat must keep the job; a second worker that gets a
    # duplicate message meanwhile must not take it over.
    first_broker, second_broker = other_broker(redis_url, 2), other_broker(redis_url, 3)
    slow = worker_factory("slow", {**celery_env, "REDIS_URL": first_broker,
                                   "COMPILE_TEST_CODEGEN_DELAY_S": "10"})
    second = worker_factory("second", {**celery_env, "REDIS_URL": second_broker})
    monkeypatch.setattr(runs, "enqueue_compile", send_to(first_broker))

    run = runs.submit_run(owner, _softmax(), "softmax.hlo", ["h100"], ["xla"])
    wait_for(run.id, lambda r: r.stage == "codegen", "at stage codegen", [slow.log])
    send_to(second_broker)(run.id)             # the duplicate delivery
    run = wait_for(run.id, finished, "done", [slow.log, second.log])

    assert run.status == Run.DONE, run.error
    assert run.attempts == 1
    assert run.claimed_by.startswith("slow-")
    assert "compile_run" in second.log()       # it did get the duplicate, and left it


def test_a_killed_worker_s_run_is_resumed_within_about_a_lease_without_the_broker(
        owner, celery_env, redis_url, worker_factory, monkeypatch):
    # The broker would give the killed worker's message back only after an hour (its
    # visibility timeout, as in production); the rescuer's sweeper sends the job again once
    # the lease runs out.
    broker = other_broker(redis_url, 4)
    env = {**celery_env, "REDIS_URL": broker, "CELERY_VISIBILITY_TIMEOUT_S": "3600",
           "JOB_SWEEP_INTERVAL_S": "1"}
    doomed = worker_factory("doomed", {**env, "COMPILE_TEST_CODEGEN_DELAY_S": "60"})
    monkeypatch.setattr(runs, "enqueue_compile", send_to(broker))

    run = runs.submit_run(owner, _softmax(), "softmax.hlo", ["h100"], ["xla"])
    wait_for(run.id, lambda r: r.stage == "codegen", "at stage codegen", [doomed.log])
    doomed.kill()
    status = wait_for(run.id, lambda r: r.status_dict()["interrupted"], "interrupted",
                      [doomed.log]).status_dict()
    assert "will be retried" in status["stage_detail"]
    rescuer = worker_factory("rescuer", env)
    run = wait_for(run.id, finished, "done", [doomed.log, rescuer.log])

    assert run.status == Run.DONE, run.error
    assert run.attempts == 2 and not run.claimed_by.startswith("doomed")
    # Every worker sweeps the database (this one, and the session's worker of the other tests,
    # which then takes the job on its own broker): one of them sent it again.
    assert "Run job(s) again" in rescuer.log() or run.claimed_by.startswith("pytest")


def test_a_run_submitted_while_redis_is_down_is_kept_and_compiled_once_it_is_back_empty(
        owner, celery_env, worker_factory, tmp_path, monkeypatch):
    port = _free_loopback_port()
    broker = f"redis://127.0.0.1:{port}/0"
    redis_server = start_redis(tmp_path, port)
    try:
        worker = worker_factory("patient", {**celery_env, "REDIS_URL": broker,
                                            "JOB_SWEEP_INTERVAL_S": "1",
                                            "JOB_SEND_GRACE_S": "1"})
        _stop(redis_server)
        send_jobs_to(broker, monkeypatch)

        run = runs.submit_run(owner, _softmax(), "softmax.hlo", ["h100"], ["xla"])
        stored = Run.objects.get(pk=run.pk)
        assert (stored.status, stored.enqueued_at) == (Run.QUEUED, None)
        client = Client()
        client.force_login(owner)
        assert client.get(reverse("explorer-run", args=[run.pk])).status_code == 200

        redis_server = start_redis(tmp_path, port)   # back, and empty
        run = wait_for(run.id, finished, "done", [worker.log])
        assert run.status == Run.DONE, run.error
        assert run.attempts == 1
    finally:
        _stop(redis_server)


def test_a_run_queued_before_redis_restarted_empty_is_sent_again_at_the_next_sweep(
        owner, celery_env, worker_factory, tmp_path, monkeypatch):
    # The run's message waits in Redis for a worker; Redis restarts empty. The first sweep
    # after it is back sends the run again (it was sent before the broker started), not
    # JOB_RESEND_S after it was first sent (5 minutes by default; 2 here, past the test's
    # wait for the run); and only once.
    port = _free_loopback_port()
    broker = f"redis://127.0.0.1:{port}/0"
    redis_server = start_redis(tmp_path, port)
    try:
        send_jobs_to(broker, monkeypatch)
        run = runs.submit_run(owner, _softmax(), "softmax.hlo", ["h100"], ["xla"])
        assert Run.objects.get(pk=run.pk).enqueued_at is not None     # sent, and waiting
        _stop(redis_server)
        redis_server = start_redis(tmp_path, port)   # back, and empty

        worker = worker_factory("after-restart", {**celery_env, "REDIS_URL": broker,
                                                  "JOB_SWEEP_INTERVAL_S": "1",
                                                  "JOB_RESEND_S": str(2 * RUN_TIMEOUT_S)})
        ready = timezone.now()
        run = wait_for(run.id, finished, "done", [worker.log])

        assert run.status == Run.DONE, run.error
        assert run.attempts == 1
        resent_after_s = (run.enqueued_at - ready).total_seconds()
        assert resent_after_s < RESEND_BOUND_S, worker.log()
        assert worker.log().count("Run job(s) again") == 1
    finally:
        _stop(redis_server)
