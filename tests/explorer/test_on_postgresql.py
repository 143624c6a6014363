"""The models, pages, API, uploads and access rules on PostgreSQL, the database a deployment
on several machines runs on (README, "Several machines"); the rest of the suite runs on SQLite.

This session starts a PostgreSQL server of its own (tests/postgresql.py: Debian's binaries, a
throwaway cluster on a free loopback port) and runs ON_POSTGRESQL in a child pytest whose
DATABASE_URL points at it, so that explorer/settings.py configures PostgreSQL as for a
deployment, and the test database is made by the migrations. The test fails with the child's
report when any of those tests fails there, and is skipped, saying why, only when PostgreSQL is
not installed.

ON_POSTGRESQL is chosen for what it covers per second (the whole suite has a time budget): every
route's access rules, which read runs, teams, invites and keys in every way the views do
(test_access_matrix.py, most of the time); the models' claims and conditional updates; uploads
(streamed into the graph store, stored by content, bundles, quotas; test_graph_store.py,
test_storage_quota.py); the API's answers and exports; the run page and a compiling run's
preview; the team flows (row locks on memberships, names unique whatever their case), sign-up
and the log-in locks (axes keeps addresses in an `inet` column there); and what PostgreSQL
found (test_json_key_order.py, test_nul_characters.py); and the plain-SQL reads of users, runs
and keys, and sessions (test_lookups.py). The child hashes passwords with Django's fast test hasher, as every test
session does (tests/settings.py). It adds about 80 s to `make test` on the shared 2-core
machine; the history, compare and gallery pages' tests are left to SQLite.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import postgresql

REPO_ROOT = Path(__file__).resolve().parents[2]
ON_POSTGRESQL = [
    "tests/explorer/test_access_matrix.py",
    "tests/explorer/test_models.py",
    "tests/explorer/test_upload_view.py",
    "tests/explorer/test_upload_bundles.py",
    "tests/explorer/test_api_runs.py",
    "tests/explorer/test_api_export.py",
    "tests/explorer/test_api_graph.py",
    "tests/explorer/test_run_view.py",
    "tests/explorer/test_run_preview_view.py",
    "tests/explorer/test_run_lifecycle.py",
    "tests/explorer/test_graph_store.py",
    "tests/explorer/test_storage_quota.py",
    "tests/explorer/test_teams_view.py",
    "tests/explorer/test_team_review.py",
    "tests/explorer/test_invites.py",
    "tests/explorer/test_signup_view.py",
    "tests/explorer/test_login_throttle.py",
    "tests/explorer/test_api_tokens.py",
    "tests/explorer/test_json_key_order.py",
    "tests/explorer/test_nul_characters.py",
    "tests/explorer/test_lookups.py",
    "tests/workers/test_sweeper.py",
]
# The child's own limit; this test's (pytest-timeout) leaves it time to report.
CHILD_TIMEOUT_S = 540


@pytest.fixture(scope="module")
def server():
    try:
        running = postgresql.start()
    except postgresql.NotInstalled as reason:
        pytest.skip(str(reason))
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.timeout(CHILD_TIMEOUT_S + 60)
def test_the_models_pages_api_and_access_rules_pass_their_tests_on_postgresql(server, tmp_path):
    environment = {**os.environ, "DATABASE_URL": server.url}
    environment.pop("DATABASE_PATH", None)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "tests.postgresql", f"--basetemp={tmp_path / 'child'}", *ON_POSTGRESQL]
    try:
        child = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True,
                               text=True, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as timeout:
        output = timeout.stdout.decode(errors="replace") if timeout.stdout else ""
        pytest.fail(f"the tests on PostgreSQL ran past {CHILD_TIMEOUT_S} s:\n{output[-20_000:]}")
    report = child.stdout + child.stderr
    print(report)
    assert child.returncode == 0, (
        f"the tests failed on PostgreSQL (exit status {child.returncode}):\n{report[-40_000:]}"
        f"\nthe server's log:\n{server.log()[-5_000:]}")
