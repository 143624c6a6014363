"""Structured logs: one JSON object per line on stderr, from the web process (Django and
gunicorn), the compile workers and the GPU workers alike; `make run` keeps them in var/.

Every unhandled error of a page or an API call (Django's `django.request` logger, and
explorer.middleware for the API) and every failed job (workers/tasks.py) is logged with its
traceback, so a 500 always leaves a trace. A line carries every `extra` field of its call, the
stack (`stack_info=True`), and what the log context holds where it was logged: the request's
id in a web process (RequestId below), the task's id and name and its job's id in a worker
(workers/logs.py):

    {"time": "2026-11-27T15:50:02.113Z", "level": "ERROR", "logger": "explorer.api",
     "message": "...", "request_id": "9f1c...", "method": "POST", "path": "/api/v1/runs",
     "status": 500, "traceback": "Traceback (most recent call last): ..."}
"""

from __future__ import annotations

import logging
import logging.config
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import datetime, timezone
from typing import Any

from pythonjsonlogger.json import JsonFormatter as BaseJsonFormatter

# What every line logged in the current context carries (a request's id, a task's). A
# ContextVar: each thread of a web process and each task has its own.
_context: ContextVar[dict[str, Any]] = ContextVar("log_context", default={})


def bind(**fields: Any) -> Token:
    """Add `fields` to every line logged in this context until `reset(token)`."""
    return _context.set({**_context.get(), **fields})


def reset(token: Token) -> None:
    _context.reset(token)


@contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    token = bind(**fields)
    try:
        yield
    finally:
        reset(token)


class JsonFormatter(BaseJsonFormatter):
    def __init__(self) -> None:
        super().__init__(
            ["asctime", "levelname", "name", "message"],
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger",
                           "exc_info": "traceback"},
            json_default=str,
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return (datetime.fromtimestamp(record.created, timezone.utc)
                .isoformat(timespec="milliseconds").replace("+00:00", "Z"))

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord,
                   message_dict: dict[str, Any]) -> None:
        super().add_fields(log_data, record, message_dict)
        # The context's fields after the call's own: an `extra` of the same name wins.
        for key, value in _context.get().items():
            log_data.setdefault(key, value)
        # Django's loggers pass the request and the status (`extra`); the request object
        # itself would print as its repr.
        request = log_data.get("request")
        if hasattr(request, "path"):
            del log_data["request"]
            log_data["method"] = getattr(request, "method", None)
            log_data["path"] = request.path
            # Django logs a 4xx or 5xx response after the middleware has returned, out of
            # the request's context: the id travels on the request.
            if getattr(request, "request_id", None):
                log_data.setdefault("request_id", request.request_id)
        if "status_code" in log_data:
            log_data["status"] = log_data.pop("status_code")


# What a request id taken from a proxy's X-Request-ID header may look like; anything else is
# replaced by one of ours (the header is the client's when no proxy sets it).
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class RequestId:
    """Gives every request an id that every line logged while serving it carries, and sends it
    back in the X-Request-ID header, so a user's report of an error finds its traceback. With
    settings.TRUST_REQUEST_ID_HEADER on (a proxy in front that sets the header), the proxy's
    id is kept, which ties our lines to the proxy's own log."""

    def __init__(self, get_response):
        from django.conf import settings

        self.get_response = get_response
        self.trust_header = settings.TRUST_REQUEST_ID_HEADER

    def __call__(self, request):
        given = request.headers.get("X-Request-ID", "") if self.trust_header else ""
        request.request_id = given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        with log_context(request_id=request.request_id):
            response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response


def configure(config: dict) -> None:
    """Django's LOGGING_CONFIG: `config`, and Python's warnings as log lines too (a worker's
    warning at start, a library's deprecation), which would print as plain text on stderr."""
    logging.config.dictConfig(config)
    logging.captureWarnings(True)


def logging_config(level: str) -> dict:
    """Django's LOGGING and gunicorn's logconfig_dict: everything at `level` and above to
    stderr as JSON lines."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "explorer.logs.JsonFormatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            # Django's own: 5xx with their tracebacks (4xx are warnings), nothing mailed.
            "django": {"handlers": ["stderr"], "level": level, "propagate": False},
            # A Celery worker gives these two a plain-text handler of its own, unless they
            # have one: Celery's task logger and its pool's (billiard, named multiprocessing).
            "celery.task": {"handlers": ["stderr"], "level": level, "propagate": False},
            "multiprocessing": {"handlers": ["stderr"], "level": level, "propagate": False},
            # Gunicorn's own (explorer/gunicorn.conf.py): worker boots, exits and timeouts. Its
            # access log, when WEB_ACCESS_LOG names one, keeps its own format and file.
            "gunicorn.error": {"handlers": ["stderr"], "level": level, "propagate": False},
        },
    }
