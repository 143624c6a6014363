"""Log lines are JSON objects with everything a call gave them (explorer/logs.py), and every
line logged while serving a request carries the request's id."""

import json
import logging
import sys

import pytest
from django.test import Client

from explorer.logs import JsonFormatter, log_context


def record(level=logging.INFO, exc_info=None, stack_info=None, **extra) -> logging.LogRecord:
    """A record as `logger.log(level, ..., exc_info=, stack_info=, extra=extra)` makes it."""
    logger = logging.getLogger("tests.logs")
    made = logger.makeRecord(logger.name, level, __file__, 1, "run %s failed", ("R1",),
                             exc_info, extra=extra)
    made.stack_info = stack_info
    return made


def line(made: logging.LogRecord) -> dict:
    text = JsonFormatter().format(made)
    assert "\n" not in text  # one line, whatever the traceback holds
    return json.loads(text)


def test_a_line_carries_the_time_level_logger_message_and_every_extra_field():
    entry = line(record(logging.WARNING, stage="import", attempts=2, sizes=[1, 2]))
    assert entry["level"] == "WARNING" and entry["logger"] == "tests.logs"
    assert entry["message"] == "run R1 failed"
    assert entry["time"].endswith("Z") and "T" in entry["time"]
    assert (entry["stage"], entry["attempts"], entry["sizes"]) == ("import", 2, [1, 2])


def test_a_value_json_cannot_hold_is_written_as_its_text():
    class Shape:
        def __str__(self):
            return "f32[16,8]"

    assert line(record(shape=Shape()))["shape"] == "f32[16,8]"


def test_the_stack_and_the_exception_s_traceback_reach_the_line():
    try:
        raise ValueError("no such op: frobnicate")
    except ValueError:
        exc_info = sys.exc_info()
    entry = line(record(logging.ERROR, exc_info=exc_info,
                        stack_info="Stack (most recent call last):\n  File \"x.py\", line 3"))
    assert entry["traceback"].startswith("Traceback (most recent call last)")
    assert "ValueError: no such op: frobnicate" in entry["traceback"]
    assert entry["stack_info"].startswith("Stack (most recent call last)")


def test_a_real_logger_call_with_stack_info_writes_the_caller_s_stack(caplog):
    with caplog.at_level(logging.INFO, logger="tests.logs"):
        logging.getLogger("tests.logs").info("here", stack_info=True, extra={"run_id": "R2"})
    entry = line(caplog.records[-1])
    assert entry["run_id"] == "R2"
    assert "test_a_real_logger_call_with_stack_info_writes_the_caller_s_stack" \
        in entry["stack_info"]


def test_the_log_context_s_fields_are_on_every_line_and_an_extra_field_wins():
    with log_context(task_id="t-1", run_id="R1"):
        inside = line(record(run_id="R9"))
        with log_context(stage="codegen"):
            nested = line(record())
    after = line(record())
    assert (inside["task_id"], inside["run_id"]) == ("t-1", "R9")
    assert (nested["task_id"], nested["stage"]) == ("t-1", "codegen")
    assert "task_id" not in after and "stage" not in after


def test_a_django_request_becomes_its_method_path_and_id():
    class Request:
        method, path, request_id = "POST", "/api/v1/runs", "abc"

    entry = line(record(logging.ERROR, request=Request(), status_code=500))
    assert (entry["method"], entry["path"], entry["request_id"]) == ("POST", "/api/v1/runs", "abc")
    assert entry["status"] == 500 and "request" not in entry and "status_code" not in entry


@pytest.mark.django_db
def test_every_request_gets_an_id_that_its_lines_and_its_response_carry(caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        first = Client().get("/no-such-page")
        second = Client().get("/no-such-page")
    ids = [first["X-Request-ID"], second["X-Request-ID"]]
    assert len(set(ids)) == 2 and all(len(i) == 32 for i in ids)
    # Django logs the 404 after the middleware has returned: the id comes with the request.
    logged = [line(r) for r in caplog.records if r.name == "django.request"]
    assert [(e["request_id"], e["status"], e["path"]) for e in logged] == \
        [(ids[0], 404, "/no-such-page"), (ids[1], 404, "/no-such-page")]


@pytest.mark.django_db
def test_a_client_s_x_request_id_is_kept_only_behind_a_trusted_proxy(settings):
    assert Client().get("/no-such-page", HTTP_X_REQUEST_ID="mine")["X-Request-ID"] != "mine"
    settings.TRUST_REQUEST_ID_HEADER = True
    assert Client().get("/no-such-page", HTTP_X_REQUEST_ID="lb-7f3a.1")["X-Request-ID"] \
        == "lb-7f3a.1"
    # Not an id: replaced, whoever sent it.
    odd = Client().get("/no-such-page", HTTP_X_REQUEST_ID="a b\"}")["X-Request-ID"]
    assert odd != "a b\"}" and len(odd) == 32
