"""Thin Celery tasks: each calls compiler/ and stores the artifacts, and holds no compiler logic.

Every task has an explicit, stable name (queued messages outlive code moves), acks_late so a job
whose worker dies is delivered again, and soft and hard time limits so a stuck job ends.
"""
from workers.celery import app


@app.task(name="workers.ping", acks_late=True, soft_time_limit=10, time_limit=20)
def ping() -> str:
    """Health check: answers "pong" once a worker consumes the compile queue."""
    return "pong"
