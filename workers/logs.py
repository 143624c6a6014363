"""Every line a task logs, in its worker's pool process, carries the task's id and name
(explorer/logs.py's log context; the job's id is added by workers.tasks.JobTask)."""
from __future__ import annotations

from contextvars import Token

from celery.signals import task_postrun, task_prerun

from explorer.logs import bind, reset

# Each running task's token, to take its fields off again when it ends.
_tokens: dict[str, Token] = {}


def connect_signals() -> None:
    task_prerun.connect(_enter, weak=False)
    task_postrun.connect(_leave, weak=False)


def _enter(task_id: str, task, **_kwargs) -> None:
    _tokens[task_id] = bind(task_id=task_id, task_name=task.name)


def _leave(task_id: str, **_kwargs) -> None:
    token = _tokens.pop(task_id, None)
    if token is not None:
        reset(token)
