"""Settings shared by every test directory.

The test database is a real SQLite file in this run's temporary directory, not SQLite's default
in-memory database: task and browser tests start Celery workers as separate processes, and those
open the same file (tests/services.py passes its path as DATABASE_PATH), as does the browser
tests' live server thread. A file per run also keeps test runs that happen at the same time in
one checkout apart.
"""
import os
from pathlib import Path

import pytest

# JAX runs on the CPU in the tests. With the CUDA plugin installed (for the xla-gpu strategy's
# deviceless compile) and no GPU, JAX would otherwise log a traceback each time it starts.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Redis and Celery worker fixtures, shared by tests/workers/ and tests/browser/.
pytest_plugins = ["tests.services"]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """How `make test` shares the tests among its pytest-xdist processes: a file's tests stay
    together, so its module fixtures (compiled graphs, interpreter values) are built once, as
    with `--dist loadfile`; and the browser tests all go to one process, since they share one
    compiled 12-layer step, one live server, one set of Celery workers and one Chromium per
    process. (xdist's own `loadgroup` marks would say the same, but pytest 9 no longer shows
    the group it writes into a test's id to xdist's scheduler.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByFileBrowserTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/browser" if path.startswith("tests/browser/") else path

    return ByFileBrowserTogether(config, log)


@pytest.fixture(scope="session")
def test_database_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("database") / "test.sqlite3"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, test_database_path):
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":  # not with DATABASE_URL (PostgreSQL)
        database.setdefault("TEST", {})["NAME"] = str(test_database_path)


@pytest.fixture(scope="session", autouse=True)
def plain_static_file_names():
    """Pages link static files by their plain names in tests, as with DEBUG on. With the
    project's manifest storage they would link the content-hashed names that only collectstatic
    makes (and compressing Plotly's bundle costs it about 15 s), and the browser tests' live
    server serves static files from the finders, which know no hashed names.
    tests/explorer/test_static_files.py collects and serves them as a deployment does."""
    from django.conf import settings
    from django.test import override_settings

    plain = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
    with override_settings(STORAGES={**settings.STORAGES, "staticfiles": plain}):
        yield


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test starts with an empty cache. Pages and documents are kept in Django's cache
    under keys made of what they show, and the rows a class's setUpTestData makes are the same
    in each of its tests: a page kept by one test would otherwise answer another's request,
    rendered before that test changed what it checks."""
    from django.conf import settings
    from django.core.cache import caches

    for alias in settings.CACHES:
        caches[alias].clear()
