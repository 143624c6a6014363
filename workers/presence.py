"""Which GPU workers are online: what lets a page say "not measured — no GPU worker online".

A worker that consumes the `gpu` queue announces itself in Redis when it is ready: one key per
worker, `fusion-explorer:gpu-worker:<hostname>`, holding its GPU's name (or, for a worker on a
machine without a usable GPU, why not) and expiring after three heartbeats; a daemon thread in
the worker's main process renews it every GPU_WORKER_HEARTBEAT_S seconds and the worker deletes
it when it shuts down. A worker killed outright disappears when its key expires.

Reading is one SCAN and one MGET on Redis. Asking the workers themselves (Celery's `inspect`)
would make every page wait for replies that may never come.

Every worker also runs the job sweeper (explorer/sweeper.py) in a daemon thread from the same
signal, every JOB_SWEEP_INTERVAL_S seconds, and lets go of the uploads of runs that failed long
ago (explorer/graph_store.py prune_failed_uploads).
"""
from __future__ import annotations

import functools
import json
import logging
import threading
import time
from datetime import datetime, timezone

import redis
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from compiler.runtime.gpu import gpu_available

logger = logging.getLogger(__name__)

KEY_PREFIX = "fusion-explorer:gpu-worker:"
GPU_QUEUE = "gpu"
# How long a page waits for Redis before it says the GPU workers' state is unknown.
READ_TIMEOUT_S = 0.5


def redis_client(redis_url: str | None = None, timeout_s: float | None = None) -> redis.Redis:
    """A client of the broker's Redis (REDIS_URL unless given) that gives up after
    `timeout_s` seconds."""
    return redis.Redis.from_url(redis_url or settings.REDIS_URL, socket_timeout=timeout_s,
                                socket_connect_timeout=timeout_s)


@functools.cache
def _reader(redis_url: str) -> redis.Redis:
    """One client (and connection pool) per process and URL for the pages: a fresh connection
    per page view would cost more than the read itself."""
    return redis_client(redis_url, READ_TIMEOUT_S)


def gpu_workers(redis_url: str | None = None) -> list[dict] | None:
    """The announcements of the workers on the gpu queue ({"hostname", "gpu", "reason",
    "since"}), by hostname; None when Redis cannot be reached."""
    try:
        client = _reader(redis_url or settings.REDIS_URL)
        keys = sorted(client.scan_iter(match=KEY_PREFIX + "*", count=100))
        values = client.mget(keys) if keys else []
    except redis.RedisError as error:
        _warn_unreachable(error)
        return None
    return [json.loads(value) for value in values if value is not None]


# A page view that finds Redis down logs it at most this often (seconds), not once per view.
WARN_EVERY_S = 60
_last_warning = 0.0


def _warn_unreachable(error: Exception) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= WARN_EVERY_S:
        _last_warning = now
        logger.warning("cannot read the GPU workers' announcements: %s", error)


def gpu_status(redis_url: str | None = None) -> dict:
    """{"online": whether a worker with a GPU is announced, "workers": the announcements,
    "summary": one line for a page}."""
    workers = gpu_workers(redis_url)
    if workers is None:
        return {"online": False, "workers": [], "summary": "GPU workers unknown: Redis is "
                                                            "unreachable"}
    with_gpu = [worker for worker in workers if worker.get("gpu")]
    if with_gpu:
        names = ", ".join(f"{worker['hostname']} ({worker['gpu']})" for worker in with_gpu)
        return {"online": True, "workers": workers, "summary": f"GPU worker online: {names}"}
    summary = "no GPU worker online"
    if workers:
        summary += " (" + "; ".join(f"{worker['hostname']} listens on the gpu queue but cannot "
                                    f"measure: {worker['reason']}" for worker in workers) + ")"
    return {"online": False, "workers": workers, "summary": summary}


# --- The worker side ---------------------------------------------------------------------------

class Heartbeat:
    """Keeps one worker's announcement alive until `stop()`."""

    def __init__(self, hostname: str, interval_s: float, redis_url: str | None = None):
        available, what = gpu_available()
        self.key = KEY_PREFIX + hostname
        self.interval_s = interval_s
        self.value = json.dumps({"hostname": hostname, "gpu": what if available else None,
                                 "reason": None if available else what,
                                 "since": datetime.now(timezone.utc).isoformat()})
        self.client = redis_client(redis_url, timeout_s=5)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="gpu-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self.thread.start()
        return self

    def _beat(self) -> None:
        while not self.stopped.is_set():
            try:
                self.client.set(self.key, self.value, ex=max(1, round(3 * self.interval_s)))
            except redis.RedisError as error:  # Redis restarting: try again next beat
                logger.warning("GPU worker heartbeat failed: %s", error)
            self.stopped.wait(self.interval_s)

    def stop(self) -> None:
        self.stopped.set()
        try:
            self.client.delete(self.key)
        except redis.RedisError:
            pass  # the key expires on its own


_heartbeat: Heartbeat | None = None


def consumes_gpu_queue(consumer) -> bool:
    return GPU_QUEUE in consumer.app.amqp.queues.consume_from


class Sweeping:
    """Runs explorer.sweeper.sweep every `interval_s` in a daemon thread of the worker, so
    lost and abandoned jobs are sent again without a separate process, and
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

        from explorer.graph_store import prune_failed_uploads
        from explorer.sweeper import sweep

        chores = (("job sweep", sweep), ("failed runs' uploads prune", prune_failed_uploads))
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
    """Make every worker of this app sweep for lost jobs, and announce itself when it consumes
    the gpu queue."""
    worker_ready.connect(_announce, weak=False)
    worker_shutdown.connect(_retire, weak=False)


def _announce(sender, **_kwargs) -> None:
    global _heartbeat, _sweeping
    if consumes_gpu_queue(sender):
        _heartbeat = Heartbeat(sender.hostname, settings.GPU_WORKER_HEARTBEAT_S).start()
    _sweeping = Sweeping(settings.JOB_SWEEP_INTERVAL_S).start()


def _retire(sender, **_kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()
    if _sweeping is not None:
        _sweeping.stop()
