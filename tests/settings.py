"""The test session's Django settings: the app's own (explorer/settings.py), with a secret key.

The settings require SECRET_KEY unless DEBUG is on; the tests run with DEBUG off, as a
deployment does, and with a key of their own, random per session. It is put in the
environment before the settings are read, so the Celery workers and servers the tests start
(tests/services.py) inherit it and compute the same run ids.
"""
import atexit
import os
import secrets
import shutil
import tempfile

os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
# The uploaded graphs' files go to a folder of this process's own, never var/graphs, removed
# when it exits. Set in the environment, so the Celery workers and servers a test starts
# (tests/services.py) read and write the same folder. Set anew in each process (not inherited
# from pytest-xdist's controller): a test that checks a file is gone is not disturbed by
# another process storing the same bytes.
os.environ["GRAPH_STORE_DIR"] = tempfile.mkdtemp(prefix="fusion-graphs-")
atexit.register(shutil.rmtree, os.environ["GRAPH_STORE_DIR"], ignore_errors=True)

from explorer.settings import *  # noqa: E402,F401,F403

# Passwords hashed with Django's fast test hasher, as its testing docs advise: the default's
# million PBKDF2 rounds cost about a second per user a test makes (most of a view test class's
# set-up) and prove nothing the tests check. The app's own hashers are what explorer/settings.py
# says; tests/explorer/test_password_views.py and the sign-up tests work with either.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The shared cache (sessions, the sign-up and password-reset limits) is a Redis database in a
# deployment; most tests run with no Redis server, so here it is this process's memory, as
# Django's locmem cache keeps it (the live server of the browser tests is a thread of the test
# process, so it shares it too). tests/explorer/test_shared_cache.py runs it on a real Redis.
CACHES = {**CACHES, "shared": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                               "LOCATION": "shared"}}
