"""The API keys page (explorer-api-tokens): a user makes keys (shown once) and revokes them; a key
made there authenticates API calls; nobody sees or revokes another user's keys."""
from django.urls import reverse

from explorer.models import ApiToken, Run
from tests.explorer.access import AccessTestCase


class ApiTokensViewTests(AccessTestCase):
    url = reverse("explorer-api-tokens")

    def test_a_key_made_here_is_shown_once_and_works_on_the_api(self):
        self.client.force_login(self.owner)
        response = self.client.post(self.url, {"name": "ci"})

        key = response.context["new_key"]
        self.assertTrue(key.startswith(ApiToken.KEY_PREFIX))
        self.assertContains(response, key)
        self.assertNotContains(self.client.get(self.url), key)  # never shown again
        token = ApiToken.objects.get(user=self.owner)
        self.assertEqual(token.name, "ci")
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
