"""API authentication: bearer tokens (ApiToken, create_api_token), sessions and CSRF."""
from datetime import timedelta
from io import StringIO
from unittest import mock

from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from explorer.models import ApiToken, Run
from tests.explorer.access import SOFTMAX, AccessTestCase

RUNS = reverse("api-runs")


@mock.patch("explorer.runs.enqueue_compile")
class ApiTokenTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.token, cls.key = ApiToken.create_for(cls.owner, name="ci")
        cls.make_run("p" * 22)

    def bearer(self, key):
        return {"HTTP_AUTHORIZATION": f"Bearer {key}"}

    def submit(self, client, **headers):
        return client.post(RUNS, {"filename": "softmax.hlo", "text": SOFTMAX.read_text()},
                           content_type="application/json", **headers)

    def test_a_script_lists_its_runs_with_a_bearer_key(self, enqueue):
        response = self.client.get(RUNS, **self.bearer(self.key))

        self.assertEqual(response.status_code, 200)
        self.assertEqual([run["id"] for run in response.json()["results"]], ["p" * 22])

    def test_only_the_keys_sha256_is_stored(self, enqueue):
        self.assertNotIn(self.key, str(ApiToken.objects.values().get()))
        self.assertEqual(len(self.token.key_hash), 64)
        self.assertEqual(ApiToken.hash_key(self.key), self.token.key_hash)

    def test_using_a_token_records_when(self, enqueue):
        self.assertIsNone(self.token.last_used)
        self.client.get(RUNS, **self.bearer(self.key))

        self.token.refresh_from_db()
        self.assertIsNotNone(self.token.last_used)

    def test_a_database_locked_too_long_for_the_record_still_answers(self, enqueue):
        # What benchmarks/load.py saw: SQLite storing a 100 MB upload on a loaded machine kept
        # its write lock past the timeout, and a GET failed on the last_used write.
        locked = OperationalError("database is locked")
        with mock.patch("django.db.models.query.QuerySet.update", side_effect=locked):
            response = self.client.get(RUNS, **self.bearer(self.key))

        self.assertEqual(response.status_code, 200)
        self.token.refresh_from_db()
        self.assertIsNone(self.token.last_used)

    def test_an_unknown_key_gets_a_401_in_json(self, enqueue):
        response = self.client.get(RUNS, **self.bearer("fe_not-a-key"))

        self.assertEqual(response.status_code, 401)
        self.assertEqual(response.json(), {"error": "unknown, revoked or expired API key"})
        self.assertIn("Bearer", response["WWW-Authenticate"])

    def test_another_authorization_scheme_gets_a_401(self, enqueue):
        response = self.client.get(RUNS, HTTP_AUTHORIZATION=f"Token {self.key}")

        self.assertEqual(response.status_code, 401)
        self.assertIn("Bearer <API key>", response.json()["error"])

    def test_an_inactive_users_key_stops_working(self, enqueue):
        self.owner.is_active = False
        self.owner.save()

        self.assertEqual(self.client.get(RUNS, **self.bearer(self.key)).status_code, 401)

    def test_an_anonymous_caller_gets_a_401_in_json_not_a_redirect(self, enqueue):
        response = self.client.get(RUNS)

        self.assertEqual(response.status_code, 401)
        self.assertEqual(response["Content-Type"], "application/json")
        self.assertIn("authentication required", response.json()["error"])

    def test_a_logged_in_browser_uses_its_session(self, enqueue):
        self.client.force_login(self.owner)

        self.assertEqual(self.client.get(RUNS).json()["count"], 1)

    def test_a_session_post_without_the_csrf_token_is_refused(self, enqueue):
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.owner)
        response = self.submit(client)

        self.assertEqual(response.status_code, 403)
        self.assertIn("CSRF", response.json()["error"])
        self.assertEqual(Run.objects.count(), 1)

    def test_a_session_post_with_the_csrf_token_is_accepted(self, enqueue):
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.owner)
        secret = "s" * 32
        client.cookies["csrftoken"] = secret
        response = self.submit(client, HTTP_X_CSRFTOKEN=secret)

        self.assertEqual(response.status_code, 201)

    def test_a_token_post_needs_no_csrf_token(self, enqueue):
        response = self.submit(Client(enforce_csrf_checks=True), **self.bearer(self.key))

        self.assertEqual(response.status_code, 201)
        self.assertEqual(Run.objects.get(pk=response.json()["id"]).owner, self.owner)

    def test_the_command_prints_a_working_key_once(self, enqueue):
        out, err = StringIO(), StringIO()
        call_command("create_api_token", "teammate", "--name", "laptop", stdout=out,
                     stderr=err)
        key = out.getvalue().strip()

        self.assertTrue(key.startswith(ApiToken.KEY_PREFIX))
        self.assertEqual(ApiToken.objects.get(name="laptop").user, self.teammate)
        self.assertIn("only time", err.getvalue())
        response = self.client.get(RUNS, **self.bearer(key))
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.json()["count"], 0)

    def test_an_expired_key_is_refused_like_an_unknown_one(self, enqueue):
        ApiToken.objects.filter(pk=self.token.pk).update(
            expires=timezone.now() - timedelta(seconds=1))
        response = self.client.get(RUNS, **self.bearer(self.key))

        self.assertEqual(response.status_code, 401)
        self.assertIn("expired", response.json()["error"])

    def test_a_key_that_expires_later_works_until_then(self, enqueue):
        _, key = ApiToken.create_for(self.owner, "week", days=7)
        self.assertEqual(self.client.get(RUNS, **self.bearer(key)).status_code, 200)

    def test_a_read_only_key_reads_but_changes_nothing(self, enqueue):
        _, key = ApiToken.create_for(self.owner, "dash", scope=ApiToken.READ)
        run = Run.objects.get(pk="p" * 22)

        self.assertEqual(self.client.get(reverse("api-run", args=[run.pk]),
                                         **self.bearer(key)).status_code, 200)
        for response in (self.submit(self.client, **self.bearer(key)),
                         self.client.delete(reverse("api-run", args=[run.pk]),
                                            **self.bearer(key)),
                         self.client.post(reverse("api-run-retry", args=[run.pk]),
                                          **self.bearer(key))):
            self.assertEqual(response.status_code, 403)
            self.assertIn("read-only", response.json()["error"])
        self.assertEqual(list(Run.objects.values_list("pk", flat=True)), [run.pk])

    def test_the_command_makes_a_scoped_expiring_key(self, enqueue):
        out = StringIO()
        call_command("create_api_token", "teammate", "--scope", "read", "--days", "30",
                     stdout=out, stderr=StringIO())
        token = ApiToken.objects.get(key_hash=ApiToken.hash_key(out.getvalue().strip()))

        self.assertEqual(token.scope, ApiToken.READ)
        self.assertAlmostEqual((token.expires - timezone.now()).days, 30, delta=1)

    def test_the_command_names_an_unknown_user(self, enqueue):
        with self.assertRaisesMessage(CommandError, "no user 'nobody'"):
            call_command("create_api_token", "nobody", stdout=StringIO())
