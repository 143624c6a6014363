"""Structured logs: one JSON object per line on stderr, which `make run` keeps in var/.

Every unhandled error of a page or an API call (Django's `django.request` logger, and
explorer.middleware for the API) and every failed job (workers/tasks.py) is logged with its
traceback, so a 500 always leaves a trace:

    {"time": "2026-11-27T15:50:02.113Z", "level": "ERROR", "logger": "explorer.api",
     "message": "...", "method": "POST", "path": "/api/v1/runs", "status": 500,
     "traceback": "Traceback (most recent call last): ..."}
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc)
            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = getattr(record, "request", None)
        if request is not None and hasattr(request, "path"):
            entry["method"] = getattr(request, "method", None)
            entry["path"] = request.path
        status = getattr(record, "status_code", None)
        if status is not None:
            entry["status"] = status
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def logging_config(level: str) -> dict:
    """Django's LOGGING: everything at `level` and above to stderr as JSON lines."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "explorer.logs.JsonFormatter"}},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            # Django's own: 5xx with their tracebacks (4xx are warnings), nothing mailed.
            "django": {"handlers": ["stderr"], "level": level, "propagate": False},
        },
    }
