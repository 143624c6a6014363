"""Crafted input to the API is refused with a 400 that names the field and what is wrong with it,
before anything is stored, never a 500 (issue 34: an independent probe reached a 500 with each
of these); file names follow one rule whichever way the file came (explorer/uploads.py
upload_file_name)."""
import hashlib
import json
import os
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from compiler.fusion.explore import STRATEGIES
from explorer import graph_store
from explorer.models import ApiToken, GraphBlob, Run
from tests.explorer.access import SOFTMAX, AccessTestCase

RUNS = reverse("api-runs")


@mock.patch("explorer.runs.enqueue_compile")
class CraftedSubmissionTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.key = ApiToken.create_for(cls.owner, "probe")[1]

    def setUp(self):
        # Bytes no other test stores: whether their file reached the store can be told.
        self.text = f"// {self.id()}\n{SOFTMAX.read_text()}"
        self.sha256 = hashlib.sha256(self.text.encode()).hexdigest()

    def post_json(self, body, raw: bool = False):
        data = body if raw else json.dumps(body)
        return self.client.post(RUNS, data, content_type="application/json",
                                headers={"Authorization": f"Bearer {self.key}"})

    def submission(self, **fields) -> dict:
        return {"filename": "softmax.hlo", "text": self.text, "devices": ["h100"],
                "strategies": ["xla"], **fields}

    def assert_refused(self, response, *words: str) -> None:
        self.assertEqual(response.status_code, 400, response.content[:300])
        error = response.json()["error"]
        for word in words:
            self.assertIn(word, error)
        self.assertEqual(Run.objects.count(), 0)
        self.assertFalse(GraphBlob.objects.exists())
        self.assertFalse(graph_store.exists(self.sha256), "the graph's file was stored")

    def test_a_lone_surrogate_in_the_name_is_refused_before_the_file_is_stored(self, enqueue):
        response = self.post_json(self.submission(name="\ud800"))

        self.assert_refused(response, "name must be Unicode text", "lone surrogate")
        enqueue.assert_not_called()

    def test_a_lone_surrogate_in_the_graphs_text_is_refused(self, enqueue):
        response = self.post_json(self.submission(text=self.text + "\udfff"))

        self.assert_refused(response, "text must be Unicode text")

    def test_a_visibility_that_is_a_list_or_an_object_is_refused(self, enqueue):
        for visibility in ([], {}):
            with self.subTest(visibility=visibility):
                response = self.post_json(self.submission(visibility=visibility))

                self.assert_refused(response, "visibility must be one of private, team, "
                                              f"public, not {visibility!r}")

    def test_a_team_that_is_a_list_is_refused(self, enqueue):
        response = self.post_json(self.submission(visibility="team", team=[]))

        self.assert_refused(response, "team must be one of your teams' names")

    def test_a_team_id_no_row_can_have_is_no_team_of_the_callers(self, enqueue):
        for team in (10 ** 30, "9" * 5000):
            with self.subTest(team=str(team)[:10]):
                response = self.post_json(self.submission(visibility="team", team=team))

                self.assert_refused(response, "you are not a member of a team")

    def test_a_body_nested_100000_deep_is_refused(self, enqueue):
        response = self.post_json('{"filename": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                  raw=True)

        self.assert_refused(response, "the request body nests", "too deeply")

    def test_a_multipart_body_without_a_boundary_is_refused(self, enqueue):
        response = self.client.post(RUNS, b"--x\r\n\r\n", content_type="multipart/form-data",
                                    headers={"Authorization": f"Bearer {self.key}"})

        self.assert_refused(response, "multipart/form-data", "boundary")

    def test_too_many_tags_or_too_long_ones_are_refused(self, enqueue):
        for tags, words in ((["t"] * 21, "tags must hold at most 20 items"),
                            (["ok", "x" * 51], "tags[1] must hold at most 50 characters")):
            with self.subTest(words=words):
                self.assert_refused(self.post_json(self.submission(tags=tags)), words)

    def test_a_name_past_200_characters_is_refused(self, enqueue):
        response = self.post_json(self.submission(name="n" * 201))

        self.assert_refused(response, "name must hold at most 200 characters")

    def test_an_unknown_device_or_strategy_is_named_with_the_choices(self, enqueue):
        response = self.post_json(self.submission(devices=["h100", "tpu"],
                                                  strategies=["magic"]))

        self.assert_refused(response, "devices[1] must be one of v100, a100, h100",
                            "not 'tpu'", "strategies[0] must be one of unfused")

    def test_a_directory_in_a_json_file_name_is_dropped_as_multipart_drops_it(self, enqueue):
        sent = self.post_json(self.submission(filename="../../etc/softmax.hlo"))
        upload = SimpleUploadedFile("../../etc/softmax.hlo", self.text.encode())
        uploaded = self.client.post(RUNS, {"file": upload, "devices": "a100"},
                                    headers={"Authorization": f"Bearer {self.key}"})

        self.assertEqual((sent.status_code, uploaded.status_code), (201, 201))
        names = {Run.objects.get(pk=response.json()["id"]).filename
                 for response in (sent, uploaded)}
        self.assertEqual(names, {"softmax.hlo"})

    def test_a_file_name_past_255_characters_is_shortened_before_its_suffix(self, enqueue):
        long_name = "x" * 300 + ".hlo"
        sent = self.post_json(self.submission(filename=long_name))
        upload = SimpleUploadedFile(long_name, self.text.encode())
        uploaded = self.client.post(RUNS, {"file": upload, "devices": "a100"},
                                    headers={"Authorization": f"Bearer {self.key}"})

        self.assertEqual((sent.status_code, uploaded.status_code), (201, 201))
        for response in (sent, uploaded):
            filename = Run.objects.get(pk=response.json()["id"]).filename
            self.assertEqual(filename, "x" * 251 + ".hlo")

    def test_control_characters_in_a_file_name_are_dropped(self, enqueue):
        response = self.post_json(self.submission(filename="soft\x01max\n.hlo"))

        self.assertEqual(response.status_code, 201)
        self.assertEqual(Run.objects.get().filename, "softmax.hlo")

    def test_an_option_sent_as_null_takes_its_default(self, enqueue):
        response = self.post_json(self.submission(name=None, tags=None, devices=None,
                                                  strategies=None, runtime=None,
                                                  visibility=None, team=None))

        self.assertEqual(response.status_code, 201, response.content[:300])
        run = Run.objects.get()
        self.assertEqual((run.name, run.tags, run.devices, run.runtime, run.visibility),
                         ("", [], ["h100"], "graph", "private"))
        self.assertEqual(set(run.strategies), set(STRATEGIES))

    def test_nothing_is_left_in_the_stores_temporary_folder(self, enqueue):
        folder = graph_store.temp_folder()
        before = set(os.listdir(folder))

        self.post_json(self.submission(name="\ud800"))
        self.post_json('{"filename": ' + "[" * 100_000 + "]" * 100_000 + "}", raw=True)

        self.assertEqual(set(os.listdir(folder)) - before, set())


class CraftedQueryTests(AccessTestCase):
    def setUp(self):
        self.client.force_login(self.owner)

    def test_a_page_of_superscript_digits_is_refused(self):
        response = self.client.get(RUNS, {"page": "²"})

        self.assertEqual(response.status_code, 400)
        self.assertEqual(response.json()["error"], "page must be a whole number, not '²'")

    def test_a_per_page_of_superscript_digits_is_refused(self):
        response = self.client.get(RUNS, {"per_page": "¹"})

        self.assertEqual(response.status_code, 400)
        self.assertEqual(response.json()["error"], "per_page must be a whole number, not '¹'")

    def test_a_per_page_past_the_most_says_the_most(self):
        response = self.client.get(RUNS, {"per_page": "201"})

        self.assertEqual(response.status_code, 400)
        self.assertEqual(response.json()["error"], "per_page must be at most 200, not 201")
