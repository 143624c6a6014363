"""The API's rate limit (explorer/api.py RateLimit): each API key, else each logged-in user,
else each address, may send settings.API_RATE_LIMIT requests per API_RATE_WINDOW_S seconds;
past that a JSON 429 says when to retry, and so does its Retry-After header."""
from django.test import override_settings
from django.urls import reverse

from explorer.models import ApiToken
from tests.explorer.access import AccessTestCase

RUNS = reverse("api-runs")


@override_settings(API_RATE_LIMIT=3, API_RATE_WINDOW_S=60)
class RateLimitTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.key = ApiToken.create_for(cls.owner, "ci")[1]
        cls.other_key = ApiToken.create_for(cls.owner, "dashboard", ApiToken.READ)[1]

    def get(self, key: str | None = None, url: str = RUNS):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.client.get(url, headers=headers)

    def test_a_key_past_its_limit_gets_a_429_that_says_when_to_retry(self):
        answers = [self.get(self.key) for _ in range(4)]

        self.assertEqual([answer.status_code for answer in answers], [200, 200, 200, 429])
        refused = answers[-1]
        self.assertTrue(1 <= int(refused["Retry-After"]) <= 60, refused["Retry-After"])
        error = refused.json()["error"]
        self.assertIn("too many requests: at most 3 in 60 s per API key", error)
        self.assertIn(f"retry in {refused['Retry-After']} s", error)

    def test_each_key_has_its_own_count(self):
        for _ in range(3):
            self.get(self.key)

        self.assertEqual(self.get(self.key).status_code, 429)
        self.assertEqual(self.get(self.other_key).status_code, 200)

    def test_a_session_is_counted_per_user_and_an_anonymous_caller_per_address(self):
        self.client.force_login(self.owner)
        self.assertEqual([self.get().status_code for _ in range(4)], [200, 200, 200, 429])
        self.client.force_login(self.teammate)
        self.assertEqual(self.get().status_code, 200)
        self.client.logout()
        openapi = reverse("api-openapi")
        self.assertEqual([self.get(url=openapi).status_code for _ in range(4)],
                         [200, 200, 200, 429])

    def test_a_limit_of_0_is_no_limit(self):
        with override_settings(API_RATE_LIMIT=0):
            self.assertEqual({self.get(self.key).status_code for _ in range(5)}, {200})

    def test_the_pages_are_not_limited(self):
        self.client.force_login(self.owner)
        for _ in range(4):
            self.get()

        self.assertEqual(self.client.get(reverse("explorer-history")).status_code, 200)
