"""The task queue as the web app sees it: the Celery app every process sends jobs with, and the
names of the job tasks, by which they are sent.

The web app sends a job by its task's name and never imports workers/, which registers the
tasks under these names on this same app (workers/celery.py) and imports the web app's models:
the dependency goes one way, from the workers down to the web app. A job's message is routed
by CELERY_TASK_ROUTES (settings) on the name alone, so a job sent by name lands on the queue
its task's own `delay()` would send it to, and carries the same options (`send_job`).
"""
from __future__ import annotations

from celery import Celery
from django.conf import settings

# Configured from Django's CELERY_* settings; workers/celery.py adds the tasks and the workers'
# signals to it.
app = Celery("fusion_explorer")
app.config_from_object("django.conf:settings", namespace="CELERY")

# Stable names: messages already queued outlive any move of the code that handles them.
COMPILE_RUN = "workers.compile_run"
MEASURE_RUN = "workers.measure_run"
COMPILE_PLAN = "workers.compile_saved_plan"
TUNE_RUN = "workers.tune_run"
TUNE_SHARD = "workers.tune_shard"

# Each job task's soft and hard time limits, by the settings that hold them.
_TIME_LIMIT_SETTINGS = {
    COMPILE_RUN: ("COMPILE_SOFT_TIME_LIMIT_S", "COMPILE_TIME_LIMIT_S"),
    MEASURE_RUN: ("MEASURE_SOFT_TIME_LIMIT_S", "MEASURE_TIME_LIMIT_S"),
    COMPILE_PLAN: ("COMPILE_SOFT_TIME_LIMIT_S", "COMPILE_TIME_LIMIT_S"),
    TUNE_RUN: ("COMPILE_SOFT_TIME_LIMIT_S", "COMPILE_TIME_LIMIT_S"),
    TUNE_SHARD: ("COMPILE_SOFT_TIME_LIMIT_S", "COMPILE_TIME_LIMIT_S"),
}


def time_limits(task_name: str) -> dict[str, int]:
    """The job task's time limits, as Celery's task options: what its definition declares
    (workers/tasks.py) and what each of its messages carries. A worker applies a message's
    limits over its task's own, so both are read here, from one place."""
    soft, hard = _TIME_LIMIT_SETTINGS[task_name]
    return {"soft_time_limit": getattr(settings, soft), "time_limit": getattr(settings, hard)}


def send_job(task_name: str, pk, **options) -> None:
    """Send a job (the primary key of its row) to the task named `task_name`, on the queue the
    routes give that name, with what the task's own `delay()` would send: its time limits, and
    no result kept in Redis (the job's row holds it). `options` go to Celery's `send_task` (a
    test's connection to its own broker, say). Raises what the broker's client raises when it
    cannot be reached."""
    app.send_task(task_name, (pk,), ignore_result=True, **time_limits(task_name), **options)


def queue_of(task_name: str) -> str:
    """The queue CELERY_TASK_ROUTES sends the task named `task_name` to."""
    return app.amqp.router.route({}, task_name)["queue"].name
