"""The sweeper: no job is lost or stuck because a message was.

A job's row is the truth; its broker message only wakes a worker. Messages go missing: the
broker was down when the job was stored (`runs._enqueue` leaves it unsent), Redis restarted
empty (`make run`'s Redis keeps nothing), or a worker was killed holding one (the broker gives
it back only after its visibility timeout, an hour by default). `sweep` sends again:
- a queued job never sent, stored more than JOB_SEND_GRACE_S ago (settings; on_commit sends
  at once, so such a job's send failed);
- queued jobs sent before the broker last started, when their queue is empty: a Redis that
  restarted empty lost their messages (`make run`'s keeps nothing), so they are sent at the
  next sweep, within JOB_SWEEP_INTERVAL_S of the broker coming back. The broker's start is
  its uptime (Redis INFO) back from now; under normal operation no job was sent before it,
  so this sends nothing twice;
- queued jobs sent more than JOB_RESEND_S ago, when their queue in the broker is empty (their
  messages are gone some other way: a FLUSHALL, a worker killed holding one it had reserved.
  A queue that still holds messages is a backlog, and sending more would only grow it; a
  message a busy worker has reserved is not in the queue either, hence the wait, which
  bounds such duplicates to one per job every JOB_RESEND_S);
- a running job whose lease expired (its worker died) and that was not sent since: the next
  worker claims it within about one lease (Job.claim takes an expired lease over).
A job sent twice is claimed once (Job.claim is one conditional UPDATE); the other message
finds nothing to do. Every worker sweeps every JOB_SWEEP_INTERVAL_S in a daemon thread
(`Sweeping`, started when the worker is ready), so sweeping needs no extra process; the same
thread lets go of the uploads of runs that failed long ago (explorer/graph_store.py
prune_failed_uploads).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

import redis
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from explorer import graph_store, runs
from explorer.models import Measurement, Run, SavedPlan, TuneJob, TuneShard
from explorer.presence import redis_client
from explorer.queues import (COMPILE_PLAN, COMPILE_RUN, MEASURE_RUN, TUNE_RUN, TUNE_SHARD,
                             queue_of)

logger = logging.getLogger(__name__)


def _jobs() -> tuple:
    """Each job kind with its broker queue (the routes in settings) and how it is sent."""
    return ((Run, queue_of(COMPILE_RUN), runs.enqueue_compile),
            (Measurement, queue_of(MEASURE_RUN), runs.enqueue_measure),
            (SavedPlan, queue_of(COMPILE_PLAN), runs.enqueue_saved_plan),
            (TuneJob, queue_of(TUNE_RUN), runs.enqueue_tune),
            (TuneShard, queue_of(TUNE_SHARD), runs.enqueue_tune_shard))


# Redis counts its uptime in whole seconds, as the difference of two clock readings in whole
# seconds: the start it gives is within this much of the true one, either way.
UPTIME_GRAIN = timedelta(seconds=1)


def broker_state(now) -> tuple[dict[str, int], datetime] | None:
    """Messages waiting in each job queue of the broker (Redis lists named after the queues),
    and a time no earlier than the broker's start: `now` less its uptime, plus UPTIME_GRAIN,
    so that no job sent before the start is taken for one sent after it (a job sent within
    that second after it may be sent once more: a duplicate, which finds its run claimed, and
    only right after a restart). None when the broker cannot be read."""
    try:
        client = redis_client(timeout_s=2)
        lengths = {queue: int(client.llen(queue)) for _, queue, _ in _jobs()}
        uptime_s = int(client.info("server")["uptime_in_seconds"])
    except redis.RedisError as error:
        logger.warning("sweeper: cannot read the broker's queues: %s", error)
        return None
    return lengths, now - timedelta(seconds=uptime_s) + UPTIME_GRAIN


def sweep(now=None, lengths: dict[str, int] | None = None,
          broker_started: datetime | None = None) -> dict[str, list]:
    """Send again the jobs whose messages are missing (module docstring); {kind: [pk, ...]}
    of those sent. `lengths` and `broker_started`: the broker's queue lengths and start (both
    read from Redis when `lengths` is None); with none at all, nothing is sent (the broker is
    down: sending would fail anyway)."""
    now = now or timezone.now()
    if lengths is None:
        state = broker_state(now)
        if state is None:
            return {}
        lengths, broker_started = state
    sent: dict[str, list] = {}
    for model, queue, enqueue in _jobs():
        lost = Q(status=model.QUEUED, enqueued_at__isnull=True,
                 created__lt=now - timedelta(seconds=settings.JOB_SEND_GRACE_S))
        if lengths.get(queue, 0) == 0:
            resend_before = now - timedelta(seconds=settings.JOB_RESEND_S)
            if broker_started is not None:
                resend_before = max(resend_before, broker_started)
            lost |= Q(status=model.QUEUED, enqueued_at__lt=resend_before)
        lost |= Q(status=model.RUNNING, lease_expires__lt=now) & (
            Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=F("lease_expires")))
        pks = list(model.objects.filter(lost).order_by("created").values_list("pk", flat=True))
        for pk in pks:
            enqueue(pk)
        if pks:
            logger.warning("sweeper: sent %d %s job(s) again: %s", len(pks), model.__name__,
                           ", ".join(map(str, pks[:10])))
            sent[model.__name__] = pks
    return sent


class Sweeping:
    """Runs `sweep` every `interval_s` in a daemon thread of the worker, so lost and abandoned
    jobs are sent again without a separate process, and
    explorer.graph_store.prune_failed_uploads."""

    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="job-sweeper", daemon=True)

    def start(self) -> Sweeping:
        self.thread.start()
        return self

    def _run(self) -> None:
        from django.db import connection

        chores = (("job sweep", sweep),
                  ("failed runs' uploads prune", graph_store.prune_failed_uploads))
        while not self.stopped.wait(self.interval_s):
            for name, chore in chores:
                try:
                    chore()
                except Exception:  # noqa: BLE001 - the database restarting: try again next time
                    logger.exception("%s failed", name)
            connection.close()   # this thread's own connection, not kept between sweeps

    def stop(self) -> None:
        self.stopped.set()


_sweeping: Sweeping | None = None


def connect_signals() -> None:
    """Make every worker of this app sweep for lost jobs while it runs."""
    worker_ready.connect(_start, weak=False)
    worker_shutdown.connect(_stop, weak=False)


def _start(sender, **_kwargs) -> None:
    global _sweeping
    _sweeping = Sweeping(settings.JOB_SWEEP_INTERVAL_S).start()


def _stop(sender, **_kwargs) -> None:
    if _sweeping is not None:
        _sweeping.stop()
