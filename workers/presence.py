"""GPU workers announce themselves: what the pages read (explorer/presence.py, which defines the
announcement's key and its fields) to say whether a measurement can be made.

A worker that consumes the queue measurement jobs go to announces itself in Redis when it is
ready, holding its GPU's name (or, for a worker on a machine without a usable GPU, why not); a
daemon thread in the worker's main process renews the key every GPU_WORKER_HEARTBEAT_S seconds
and the worker deletes it when it shuts down. A worker killed outright disappears when its key
expires, after three heartbeats. An emulated worker (GPU_WORKER_EMULATED) announces the CPU
emulator as its GPU, with "emulated": true, so every page that names it says so.
"""
from __future__ import annotations

import json
import logging
import threading
from datetime import datetime, timezone

import redis
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from compiler.runtime.gpu import gpu_available
from compiler.stages.measure import EMULATOR
from explorer.presence import KEY_PREFIX, redis_client
from explorer.queues import MEASURE_RUN, queue_of

logger = logging.getLogger(__name__)


class Heartbeat:
    """Keeps one worker's announcement alive until `stop()`."""

    def __init__(self, hostname: str, interval_s: float, redis_url: str | None = None,
                 emulated: bool = False):
        available, what = (True, EMULATOR) if emulated else gpu_available()
        self.key = KEY_PREFIX + hostname
        self.interval_s = interval_s
        self.value = json.dumps({"hostname": hostname, "gpu": what if available else None,
                                 "reason": None if available else what, "emulated": emulated,
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
    """Whether the worker consumes the queue measurement jobs go to (`gpu`)."""
    return queue_of(MEASURE_RUN) in consumer.app.amqp.queues.consume_from


def connect_signals() -> None:
    """Make every worker of this app that consumes the gpu queue announce itself."""
    worker_ready.connect(_announce, weak=False)
    worker_shutdown.connect(_retire, weak=False)


def _announce(sender, **_kwargs) -> None:
    global _heartbeat
    if consumes_gpu_queue(sender):
        _heartbeat = Heartbeat(sender.hostname, settings.GPU_WORKER_HEARTBEAT_S,
                               emulated=settings.GPU_WORKER_EMULATED).start()


def _retire(sender, **_kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()
