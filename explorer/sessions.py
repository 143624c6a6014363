"""Sessions in the database, as Django's `db` engine keeps them, read in plain SQL
(SESSION_ENGINE = "explorer.sessions").

Reading a session is one `SELECT` by key of a live (unexpired) row on every request of a
logged-in visitor; the ORM would build that statement's SQL each time (why: explorer/lookups.py).
Writing, creating, cycling and deleting sessions are Django's own code, unchanged, and the
table is Django's `django_session`: switching between this engine and Django's loses no
session.
"""
from __future__ import annotations

from django.contrib.sessions.backends import db
from django.db import connections, router
from django.utils import timezone


class SessionStore(db.SessionStore):
    def _get_session_from_db(self):
        """The live session row of this key, or None (and no key, as Django's store does)."""
        connection = connections[router.db_for_read(self.model)]
        quote = connection.ops.quote_name
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {quote('session_data')} FROM {quote(self.model._meta.db_table)} "
                f"WHERE {quote('session_key')} = %s AND {quote('expire_date')} > %s",
                [self.session_key, now])
            found = cursor.fetchone()
        if found is None:
            self._session_key = None
            return None
        return self.model(session_key=self.session_key, session_data=found[0])
