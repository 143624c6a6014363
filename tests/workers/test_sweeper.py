"""The sweeper (workers/sweeper.py) and jobs stored while the broker is down: nothing a user
submits is lost, and a job whose message or worker is gone is sent again."""

import threading
from datetime import timedelta
from unittest import mock

import pytest
from django.conf import settings
from django.utils import timezone

from explorer.models import Run
from explorer.queues import COMPILE_RUN
from explorer.runs import submit_run
from tests.explorer.access import SOFTMAX
from workers import sweeper


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("ada", password="x")


def _run(owner, strategies=("xla",), **fields) -> Run:
    with mock.patch("explorer.runs.enqueue_compile"):
        run = submit_run(owner, SOFTMAX.read_bytes(), "softmax.hlo", ["h100"], list(strategies))
    Run.objects.filter(pk=run.pk).update(**fields)
    return Run.objects.get(pk=run.pk)


@pytest.mark.django_db(transaction=True)
def test_an_upload_while_the_broker_is_down_is_stored_queued_and_sent_later(owner):
    from kombu.exceptions import OperationalError

    with mock.patch("explorer.queues.send_job",
                    side_effect=OperationalError("Error 111 connecting to 127.0.0.1:6379")):
        run = submit_run(owner, SOFTMAX.read_bytes(), "softmax.hlo", ["h100"], ["xla"])
    run.refresh_from_db()
    assert (run.status, run.enqueued_at) == (Run.QUEUED, None)

    later = timezone.now() + timedelta(seconds=settings.JOB_SEND_GRACE_S + 1)
    with mock.patch("explorer.queues.send_job") as send:
        sent = sweeper.sweep(now=later, lengths={"compile": 0, "gpu": 0})
    send.assert_called_once_with(COMPILE_RUN, run.pk)
    assert sent == {"Run": [run.pk]}
    run.refresh_from_db()
    assert run.enqueued_at is not None


@pytest.mark.django_db
def test_queued_jobs_are_sent_again_only_when_their_queue_is_empty(owner):
    old = timezone.now() - timedelta(seconds=settings.JOB_RESEND_S + 5)
    run = _run(owner, enqueued_at=old)
    with mock.patch("explorer.runs.enqueue_compile") as enqueue:
        sweeper.sweep(lengths={"compile": 3, "gpu": 0})     # a backlog: the message waits
        enqueue.assert_not_called()
        sweeper.sweep(lengths={"compile": 0, "gpu": 0})     # Redis restarted empty
        enqueue.assert_called_once_with(run.pk)
    recent = _run(owner, strategies=("cost",), enqueued_at=timezone.now())
    with mock.patch("explorer.runs.enqueue_compile") as enqueue:
        sweeper.sweep(lengths={"compile": 0, "gpu": 0})
    assert recent.pk not in [call.args[0] for call in enqueue.call_args_list]


@pytest.mark.django_db
def test_a_job_sent_before_the_broker_restarted_empty_is_sent_at_the_next_sweep(owner):
    now = timezone.now()
    run = _run(owner, enqueued_at=now - timedelta(seconds=10))
    restarted = now - timedelta(seconds=2)
    with mock.patch("explorer.runs.enqueue_compile") as enqueue:
        # A Redis that kept its data (an append-only file) still holds the message.
        sweeper.sweep(now=now, lengths={"compile": 1, "gpu": 0}, broker_started=restarted)
        enqueue.assert_not_called()
        sweeper.sweep(now=now, lengths={"compile": 0, "gpu": 0}, broker_started=restarted)
    enqueue.assert_called_once_with(run.pk)


@pytest.mark.django_db
def test_a_job_sent_since_the_broker_started_is_not_sent_twice_before_job_resend_s(owner):
    # Its queue is empty because a worker has reserved its message: sending it again would
    # only make a duplicate.
    now = timezone.now()
    _run(owner, enqueued_at=now - timedelta(seconds=settings.JOB_RESEND_S - 5))
    with mock.patch("explorer.runs.enqueue_compile") as enqueue:
        sweeper.sweep(now=now, lengths={"compile": 0, "gpu": 0},
                      broker_started=now - timedelta(hours=1))
    enqueue.assert_not_called()


def test_the_brokers_start_is_now_less_its_uptime_in_whole_seconds_and_one_more():
    client = mock.Mock(**{"llen.return_value": 0,
                          "info.return_value": {"uptime_in_seconds": 7}})
    now = timezone.now()
    with mock.patch("workers.sweeper.redis_client", return_value=client):
        lengths, started = sweeper.broker_state(now)

    assert lengths == {"compile": 0, "gpu": 0}
    # Uptime 7 s: Redis started between 8 and 6 s ago; jobs sent before 6 s ago count as sent
    # before it.
    assert started == now - timedelta(seconds=6)
    client.info.assert_called_once_with("server")


@pytest.mark.django_db
def test_a_running_job_whose_worker_died_is_sent_once_after_its_lease(owner):
    now = timezone.now()
    run = _run(owner, status=Run.RUNNING, enqueued_at=now - timedelta(minutes=10),
               lease_expires=now - timedelta(seconds=1))
    alive = _run(owner, strategies=("cost",), status=Run.RUNNING,
                 enqueued_at=now - timedelta(minutes=10), lease_expires=now + timedelta(seconds=60))
    with mock.patch("explorer.queues.send_job") as send:
        sweeper.sweep(lengths={"compile": 5, "gpu": 0})
        sweeper.sweep(lengths={"compile": 5, "gpu": 0})     # sent since the lease expired
    assert [call.args for call in send.call_args_list] == [(COMPILE_RUN, run.pk)]
    assert alive.pk != run.pk


@pytest.mark.django_db
def test_with_the_broker_unreadable_nothing_is_sent(owner, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    _run(owner, enqueued_at=None, created=timezone.now() - timedelta(hours=1))
    with mock.patch("explorer.runs.enqueue_compile") as enqueue:
        assert sweeper.sweep() == {}
    enqueue.assert_not_called()


def test_every_workers_sweeping_thread_also_lets_go_of_old_failed_runs_uploads():
    called = {"prune_failed_uploads": threading.Event()}
    with mock.patch("workers.sweeper.sweep", side_effect=RuntimeError("Redis restarting")), \
            mock.patch("explorer.graph_store.prune_failed_uploads",
                       side_effect=lambda: called["prune_failed_uploads"].set()) as prune:
        sweeping = sweeper.Sweeping(interval_s=0.01).start()
        try:
            # A sweep that fails (the broker restarting) does not keep the pruning from running.
            assert called["prune_failed_uploads"].wait(10)
        finally:
            sweeping.stop()
            sweeping.thread.join(10)
    assert prune.called
