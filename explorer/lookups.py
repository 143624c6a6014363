"""The rows every request reads first, read with SQL written once.

A page or an API answer begins with a few reads by key: the session, its user, the run with
its owner (and team), an API key. The ORM builds each query's SQL anew for every request: 0.3-1
ms of CPU a query on the 2-core development VM, where SQLite answers in about 0.05 ms. With a
finished run's page kept (explorer/views.py RUN_PAGE_CACHE_S) and /results kept as bytes, those
reads were most of what a logged-in visit or an API answer cost under load (benchmarks/load.py;
benchmarks/README.md). Here they are plain `SELECT * FROM table WHERE column = %s` statements
(portable: SQLite and PostgreSQL), and `Model.objects.raw` builds the instances with the same
column conversions the ORM applies. Nothing else about the rows changes: related rows (a run's
owner) load when first used, as ever, and every other query goes through the ORM.

`ModelBackend` is Django's, with the user read this way (AUTHENTICATION_BACKENDS). Sessions are
Django's cached_db ones, read from Redis (SESSION_ENGINE).
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend as DjangoModelBackend
from django.core.exceptions import ValidationError
from django.db import connections, models


def row(model: type[models.Model], column: str, value, using: str = "default"):
    """The instance of `model` whose `column` (a unique column's name in the table) holds
    `value`, or None."""
    quote = connections[using].ops.quote_name
    found = list(model._default_manager.db_manager(using).raw(
        f"SELECT * FROM {quote(model._meta.db_table)} WHERE {quote(column)} = %s", [value]))
    return found[0] if found else None


def by_pk(model: type[models.Model], value, using: str = "default"):
    """The instance of `model` with primary key `value` (converted as the ORM would: a user id
    comes out of the session as text), or None, also when `value` is no valid key."""
    field = model._meta.pk
    try:
        value = field.to_python(value)
    except ValidationError:
        return None
    return row(model, field.column, value, using)


class ModelBackend(DjangoModelBackend):
    """Django's ModelBackend, reading the logged-in user of each request in plain SQL."""

    def get_user(self, user_id):
        user = by_pk(get_user_model(), user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
