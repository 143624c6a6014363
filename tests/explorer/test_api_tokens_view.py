"""The API keys page (explorer-api-tokens): a user makes keys (shown once) and revokes them; a key
made there authenticates API calls; nobody sees or revokes another user's keys."""
from django.urls import reverse

from explorer.models import ApiToken, Run
from tests.explorer.access import AccessTestCase


class ApiTokensViewTests(AccessTestCase):
    url = reverse("explorer-api-tokens")

    def test_a_key_made_here_is_shown_once_and_works_on_the_api(self):
        self.client.force_login(self.owner)
        response = self.client.post(self.url, {"name": "ci", "scope": "submit",
                                               "expires": "never"}, follow=True)

        self.assertRedirects(response, self.url)   # a refresh does not post again
        key = response.context["new_key"]
        self.assertTrue(key.startswith(ApiToken.KEY_PREFIX))
        self.assertContains(response, key)
        self.assertEqual(response["Cache-Control"], "no-store")
        self.assertNotContains(self.client.get(self.url), key)  # never shown again
        token = ApiToken.objects.get(user=self.owner)
        self.assertEqual((token.name, token.scope, token.expires), ("ci", "submit", None))
        self.assertNotEqual(token.key_hash, key)

        self.client.logout()
        run = self.make_run("k" * 22, Run.PRIVATE)
        api = self.client.get(reverse("api-run", args=[run.pk]),
                              HTTP_AUTHORIZATION=f"Bearer {key}")
        self.assertEqual(api.status_code, 200)

    def test_revoking_a_key_stops_it_working(self):
        token, key = ApiToken.create_for(self.owner, "old")
        self.client.force_login(self.owner)
        self.client.post(self.url, {"revoke": token.pk})

        self.assertFalse(ApiToken.objects.filter(pk=token.pk).exists())
        self.client.logout()
        api = self.client.get(reverse("api-runs"), HTTP_AUTHORIZATION=f"Bearer {key}")
        self.assertEqual(api.status_code, 401)

    def test_a_teammate_neither_sees_nor_revokes_anothers_keys(self):
        token, _ = ApiToken.create_for(self.owner, "owners-key")
        self.client.force_login(self.teammate)

        self.assertNotContains(self.client.get(self.url), "owners-key")
        self.client.post(self.url, {"revoke": token.pk})
        self.assertTrue(ApiToken.objects.filter(pk=token.pk).exists())

    def test_a_malformed_revoke_changes_nothing(self):
        ApiToken.create_for(self.owner, "kept")
        self.client.force_login(self.owner)

        self.assertEqual(self.client.post(self.url, {"revoke": "1 OR 1"}).status_code, 302)
        self.assertEqual(ApiToken.objects.count(), 1)

    def test_a_stranger_sees_only_their_own(self):
        ApiToken.create_for(self.owner, "owners-key")
        ApiToken.create_for(self.stranger, "strangers-key")
        self.client.force_login(self.stranger)

        response = self.client.get(self.url)
        self.assertContains(response, "strangers-key")
        self.assertNotContains(response, "owners-key")

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        self.assertEqual(self.client.get(self.url).status_code, 302)
        self.assertEqual(self.client.post(self.url, {"name": "x"}).status_code, 302)
        self.assertFalse(ApiToken.objects.exists())

    def test_a_new_key_is_read_only_and_expires_in_90_days_unless_asked(self):
        self.client.force_login(self.owner)
        key = self.client.post(self.url, {"name": "dash"}, follow=True).context["new_key"]

        token = ApiToken.objects.get(user=self.owner)
        self.assertEqual(token.scope, ApiToken.READ)
        self.assertAlmostEqual((token.expires - token.created).days, 90, delta=1)
        self.assertContains(self.client.get(self.url), "read")
        self.client.logout()
        auth = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
        self.assertEqual(self.client.get(reverse("api-runs"), **auth).status_code, 200)
        refused = self.client.post(reverse("api-runs"), {"text": "x"},
                                   content_type="application/json", **auth)
        self.assertEqual(refused.status_code, 403)
        self.assertIn("read-only", refused.json()["error"])
        self.assertFalse(Run.objects.exists())

    def test_an_unknown_scope_or_lifetime_makes_no_key(self):
        self.client.force_login(self.owner)
        for fields in ({"scope": "admin"}, {"expires": "1000"}):
            self.assertEqual(self.client.post(self.url, fields).status_code, 400)
        self.assertFalse(ApiToken.objects.exists())


    def test_it_shows_the_storage_the_users_runs_and_teams_take_of_their_quotas(self):
        self.make_run("k" * 22, Run.TEAM)
        self.client.force_login(self.owner)
        with self.settings(STORAGE_QUOTA_BYTES=2 * 1024**3, TEAM_STORAGE_QUOTA_BYTES=10 * 1024**3):
            response = self.client.get(self.url)

        self.assertContains(response, "Your runs' uploaded graphs take <strong>1.5\xa0KB</strong> "
                                      "of your\n      2.0\xa0GB")
        self.assertContains(response, ">kernels</a>\n        take 1.5\xa0KB of its 10.0\xa0GB")
        self.client.force_login(self.stranger)
        self.assertContains(self.client.get(self.url), "take <strong>0\xa0bytes</strong>")
