"""The API fuzzed from its own OpenAPI document (schemathesis): for every operation, requests
generated from what the document says it takes, valid and not, sent with an API key to the
app in this process; no answer may be a server error, and every answer must be one the
document declares, in the declared shape.

About half the requests about a run ask about a real, finished run of the key's owner (the
rest about ids no run has). The examples are derandomised, so a run of the suite is repeatable;
a failure prints the request that caused it."""
import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings

from explorer.api import schema
from explorer.models import ApiToken, Run
from tests.explorer.access import AccessTestCase



class AppUnderTest(WSGIHandler):
    """Django's WSGI application as its test client runs it: the end of a request leaves the
    test's database connection (and transaction) open."""

    def __call__(self, environ, start_response):
        for signal in (request_started, request_finished):
            signal.disconnect(close_old_connections)
        try:
            response = super().__call__(environ, start_response)
            body = b"".join(response)
            response.close()
        finally:
            for signal in (request_started, request_finished):
                signal.connect(close_old_connections)
        return [body]


API = schemathesis.openapi.from_dict(schema("http://testserver/api/v1"))
API.app = AppUnderTest()
EXAMPLES = 50


@pytest.fixture
def asker(db, monkeypatch):
    """An API key and a finished run of its user's; compile and measure jobs are not sent."""
    monkeypatch.setattr("explorer.runs.enqueue_compile", lambda run_id: True)
    monkeypatch.setattr("explorer.runs.enqueue_measure", lambda measurement_id: True)
    owner = User.objects.create_user("fuzzer")
    run = AccessTestCase.make_done_run("f" * 22, Run.PRIVATE, owner=owner)
    return ApiToken.create_for(owner, "fuzz")[1], run.pk


@API.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_no_operation_answers_a_server_error_or_an_undocumented_answer(case, asker):
    key, run_id = asker
    if len(case.path_parameters.get("run_id", "")) % 2:
        case.path_parameters["run_id"] = run_id
    # Not positive_data_acceptance: a request can match the document and still be refused,
    # rightly, for what only the server knows (a file that is no graph, a device the run lacks).
    case.call_and_validate(headers={"Authorization": f"Bearer {key}",
                                    "Accept-Encoding": "identity"},
                           excluded_checks=[schemathesis.checks.positive_data_acceptance])
