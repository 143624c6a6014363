"""The sweeper: no job is lost or stuck because a message was.

A job's row is the truth; its broker message only wakes a worker. Messages go missing: the
broker was down when the job was stored (`runs._enqueue` leaves it unsent), Redis restarted
empty (`make run`'s Redis keeps nothing), or a worker was killed holding one (the broker gives
it back only after its visibility timeout, an hour by default). `sweep` sends again:
- a queued job never sent, stored more than JOB_SEND_GRACE_S ago (settings; on_commit sends
  at once, so such a job's send failed);
- queued jobs sent more than JOB_RESEND_S ago, when their queue in the broker is empty (their
  messages are gone: a queue that still holds messages is a backlog, and sending more would
  only grow it; a message a busy worker has reserved is not in the queue either, hence the
  wait, which bounds such duplicates to one per job every JOB_RESEND_S);
- a running job whose lease expired (its worker died) and that was not sent since: the next
  worker claims it within about one lease (Job.claim takes an expired lease over).
A job sent twice is claimed once (Job.claim is one conditional UPDATE); the other message
finds nothing to do. Every worker sweeps every JOB_SWEEP_INTERVAL_S (workers/presence.py
starts the thread), so sweeping needs no extra process.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from explorer.models import Measurement, Run

logger = logging.getLogger(__name__)



def _jobs() -> tuple:
    """Each job kind with its broker queue (the routes in settings) and how it is sent."""
    from explorer.runs import enqueue_compile, enqueue_measure
    from workers.presence import GPU_QUEUE

    return ((Run, "compile", enqueue_compile), (Measurement, GPU_QUEUE, enqueue_measure))


def queue_lengths() -> dict[str, int] | None:
    """Messages waiting in each job queue of the broker (Redis lists named after the queues);
    None when the broker cannot be read."""
    import redis

    from workers.presence import redis_client

    try:
        client = redis_client(timeout_s=2)
        return {queue: int(client.llen(queue)) for _, queue, _ in _jobs()}
    except redis.RedisError as error:
        logger.warning("sweeper: cannot read the broker's queues: %s", error)
        return None


def sweep(now=None, lengths: dict[str, int] | None = None) -> dict[str, list]:
    """Send again the jobs whose messages are missing (module docstring); {kind: [pk, ...]}
    of those sent. `lengths`: the broker's queue lengths (read from Redis when None); with
    none at all, nothing is sent (the broker is down: sending would fail anyway)."""
    now = now or timezone.now()
    lengths = queue_lengths() if lengths is None else lengths
    if lengths is None:
        return {}
    sent: dict[str, list] = {}
    for model, queue, enqueue in _jobs():
        lost = Q(status=model.QUEUED, enqueued_at__isnull=True,
                 created__lt=now - timedelta(seconds=settings.JOB_SEND_GRACE_S))
        if lengths.get(queue, 0) == 0:
            lost |= Q(status=model.QUEUED,
                      enqueued_at__lt=now - timedelta(seconds=settings.JOB_RESEND_S))
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
