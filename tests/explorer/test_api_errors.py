"""The API answers JSON for every status, and an unhandled error is logged with its traceback
(explorer/middleware.py, explorer/logs.py); pages keep Django's own error handling."""

import json
import logging

import pytest
from django.test import Client

from explorer import api
from explorer.logs import JsonFormatter


@pytest.fixture
def client():
    return Client(raise_request_exception=False)


def test_an_unhandled_error_in_the_api_is_a_json_500_and_is_logged(client, monkeypatch, caplog):
    def broken(base_url):
        raise RuntimeError("the schema generator broke")

    monkeypatch.setattr(api, "schema", broken)
    with caplog.at_level(logging.ERROR, logger="explorer.api"):
        response = client.get("/api/v1/openapi.json")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "logged" in response.json()["error"]
    (record,) = [r for r in caplog.records if r.name == "explorer.api"]
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "ERROR" and line["path"] == "/api/v1/openapi.json"
    assert line["status"] == 500 and "the schema generator broke" in line["traceback"]


@pytest.mark.django_db
def test_an_unknown_api_path_is_a_json_404(client):
    response = client.get("/api/v1/no-such-route")
    assert response.status_code == 404
    assert response.json() == {"error": "not found"}


@pytest.mark.django_db
def test_pages_keep_their_html_error_pages(client):
    response = client.get("/no-such-page")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
