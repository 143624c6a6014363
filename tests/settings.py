"""The test session's Django settings: the app's own (explorer/settings.py), with a secret key.

The settings require SECRET_KEY unless DEBUG is on; the tests run with DEBUG off, as a
deployment does, and with a key of their own, random per session. It is put in the
environment before the settings are read, so the Celery workers and servers the tests start
(tests/services.py) inherit it and compute the same run ids.
"""
import os
import secrets

os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

from explorer.settings import *  # noqa: E402,F401,F403

# Passwords hashed with Django's fast test hasher, as its testing docs advise: the default's
# million PBKDF2 rounds cost about a second per user a test makes (most of a view test class's
# set-up) and prove nothing the tests check. The app's own hashers are what explorer/settings.py
# says; tests/explorer/test_password_views.py and the sign-up tests work with either.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
