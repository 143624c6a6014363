"""Which GPU workers are online: what lets a page say "not measured — no GPU worker online".

A worker that consumes the queue measurement jobs go to announces itself in Redis while it runs
(workers/presence.py writes the announcements): one key per worker,
`fusion-explorer:gpu-worker:<hostname>`, holding {"hostname", "gpu" (its GPU's name, or null
on a machine without a usable GPU), "reason" (why not, or null), "emulated" (true for a worker
that checks kernels on the CPU emulator and times nothing: settings.GPU_WORKER_EMULATED),
"since"} as JSON and expiring after three heartbeats. The key's name and the client both sides
use are defined here, on the web side, which the workers import (never the other way round).

Reading is one SCAN and one MGET on Redis. Asking the workers themselves (Celery's `inspect`)
would make every page wait for replies that may never come.
"""
from __future__ import annotations

import functools
import json
import logging
import time

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

KEY_PREFIX = "fusion-explorer:gpu-worker:"
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
