"""A NUL character wherever a request can carry one is refused or stored escaped, never a 500.
PostgreSQL refuses a NUL in any text it is sent, even only to compare with (SQLite takes it):
before, a run id, a search or an API submission's name holding one failed with a 500 there.
tests/explorer/test_on_postgresql.py runs this module on PostgreSQL too."""
import json

from django.urls import reverse

from compiler.errors import InputError
from compiler.importers import import_bytes
from explorer.models import Run
from tests.explorer.access import SOFTMAX, AccessTestCase


class NulCharacterTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run()

    def setUp(self):
        self.client.force_login(self.owner)

    def test_an_address_holding_one_is_a_404_for_pages_and_the_api(self):
        for path in ("/r/abc%00def", "/api/v1/runs/abc%00def",
                     f"/r/{self.done.pk}/h100/cost/ker%00nel"):
            with self.subTest(path=path):
                self.assertEqual(self.client.get(path).status_code, 404)
        self.assertEqual(self.client.get("/api/v1/runs/abc%00").json(), {"error": "not found"})

    def test_a_query_holding_one_is_a_400(self):
        run = self.done.pk
        for path in ("/runs?q=a%00b", "/api/v1/runs?q=a%00b",
                     f"/compare?a={run}%00:h100:cost&b={run}:h100:xla",
                     f"/compare/cuda?a={run}:h100:cost&ka=x%00&b={run}:h100:xla&kb=y"):
            with self.subTest(path=path):
                self.assertEqual(self.client.get(path).status_code, 400)
        self.assertEqual(self.client.get("/runs?q=softmax").status_code, 200)

    def test_an_api_submission_holding_one_is_refused_naming_the_fields(self):
        submission = {"filename": "softmax.hlo", "text": SOFTMAX.read_text(),
                      "devices": ["h100"], "strategies": ["xla"]}
        for fields, named in (({"name": "a\x00b"}, "name"), ({"tags": ["ok", "a\x00"]}, "tags"),
                              ({"filename": "s\x00.hlo"}, "filename"),
                              ({"team": "k\x00", "visibility": "team"}, "team")):
            with self.subTest(named=named):
                response = self.client.post(reverse("api-runs"),
                                            json.dumps({**submission, **fields}),
                                            content_type="application/json")
                self.assertEqual(response.status_code, 400)
                self.assertEqual(response.json()["error"], f"a NUL character in {named}")
        self.assertEqual(Run.objects.count(), 1)

    def test_a_failure_message_quoting_one_is_stored_with_it_escaped(self):
        with self.assertRaises(InputError) as raised:
            import_bytes(b"HloModule m\x00", "m.hlo")
        self.assertIn("\x00", str(raised.exception))
        run = self.make_run("n" * 22)
        token = Run.claim(run.pk, "worker", 60, 3)

        self.assertTrue(Run.fail(run.pk, str(raised.exception), "import", token))
        run.refresh_from_db()
        self.assertEqual(run.error, str(raised.exception).replace("\x00", "\\x00"))
