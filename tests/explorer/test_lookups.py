"""The rows every request reads first, in plain SQL (explorer/lookups.py): the same instances
the ORM builds, and the same rules for users; and the sessions they are read for (Django's
cached_db engine: from the shared cache, the database when the cache has lost them)."""
from datetime import timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends import db as django_db_sessions
from django.contrib.sessions.models import Session
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from explorer.lookups import by_pk, row
from explorer.models import ApiToken, Run
from tests.explorer.access import AccessTestCase

HISTORY = reverse("explorer-history")


def field_values(instance) -> dict:
    return {field.attname: getattr(instance, field.attname)
            for field in instance._meta.concrete_fields}


class RowTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        Run.objects.filter(pk=cls.done.pk).update(tags=["attn", "bf16"], name="a <name>")

    def test_a_run_read_in_sql_is_the_orms_field_for_field(self):
        """Dates come out as aware datetimes, JSON as lists: the ORM's conversions."""
        self.assertEqual(field_values(by_pk(Run, self.done.pk)),
                         field_values(Run.objects.get(pk=self.done.pk)))

    def test_a_user_and_an_api_key_read_in_sql_are_the_orms(self):
        self.assertEqual(field_values(by_pk(User, str(self.owner.pk))),
                         field_values(User.objects.get(pk=self.owner.pk)))
        token, _ = ApiToken.create_for(self.owner, "ci", days=30)
        self.assertEqual(field_values(row(ApiToken, "key_hash", token.key_hash)),
                         field_values(ApiToken.objects.get(pk=token.pk)))

    def test_a_missing_or_malformed_key_is_none(self):
        self.assertIsNone(by_pk(Run, "n" * 22))
        self.assertIsNone(by_pk(User, "12 OR 1=1"))
        self.assertIsNone(by_pk(User, 10**6))


class SessionTests(AccessTestCase):
    def session_of(self, user, engine=settings.SESSION_ENGINE, expires=None) -> str:
        """A logged-in session of `user` as `engine` stores it, set as the client's cookie."""
        session = import_module(engine).SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "explorer.lookups.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        if expires is not None:
            session.set_expiry(expires)
        session.create()
        self.client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key
        return session.session_key

    def test_a_live_session_logs_its_user_in(self):
        self.session_of(self.owner)
        response = self.client.get(HISTORY)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.wsgi_request.user, self.owner)

    def test_a_live_session_is_read_from_the_cache_not_the_database(self):
        self.session_of(self.owner)
        with CaptureQueriesContext(connection) as queries:
            self.client.get(HISTORY)
        self.assertFalse([query for query in queries if "django_session" in query["sql"]])

    def test_a_session_the_cache_lost_is_read_from_the_database(self):
        """As every session made before the switch to cached_db: no one is logged out."""
        self.session_of(self.owner, engine=django_db_sessions.__name__)
        caches[settings.SESSION_CACHE_ALIAS].clear()
        self.assertEqual(self.client.get(HISTORY).wsgi_request.user, self.owner)

    def test_an_expired_session_is_no_session(self):
        self.session_of(self.owner, expires=timezone.now() - timedelta(seconds=1))

        response = self.client.get(HISTORY)
        self.assertEqual(response.status_code, 302)
        self.assertFalse(response.wsgi_request.user.is_authenticated)

    def test_a_deactivated_users_session_logs_no_one_in(self):
        self.session_of(self.owner)
        User.objects.filter(pk=self.owner.pk).update(is_active=False)

        self.assertFalse(self.client.get(HISTORY).wsgi_request.user.is_authenticated)

    def test_a_password_changed_elsewhere_ends_the_session(self):
        self.session_of(self.owner)
        self.owner.set_password("a new one, 2026")
        self.owner.save()

        self.assertFalse(self.client.get(HISTORY).wsgi_request.user.is_authenticated)

    def test_logging_out_deletes_the_session(self):
        key = self.session_of(self.owner)
        self.client.post(reverse("logout"))

        self.assertFalse(Session.objects.filter(session_key=key).exists())
        self.client.cookies[settings.SESSION_COOKIE_NAME] = key
        self.assertFalse(self.client.get(HISTORY).wsgi_request.user.is_authenticated)
