"""Submitting and listing runs at /api/v1/runs, one run at /api/v1/runs/<id> and its status."""
from datetime import timedelta
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from explorer.models import Run
from tests.explorer.access import SOFTMAX, AccessTestCase
from tests.explorer.heavy import make_heavy_runs

RUNS = reverse("api-runs")
BAD_HLO = (b"HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
           b"  ROOT r = f32[4] frobnicate(p)\n}\n")


@mock.patch("explorer.runs.enqueue_compile")
class SubmitRunTests(AccessTestCase):
    def submit_json(self, user, **fields):
        self.client.force_login(user)
        body = {"filename": "softmax.hlo", "text": SOFTMAX.read_text(), "devices": ["h100"],
                "strategies": ["xla", "cost"], **fields}
        with self.captureOnCommitCallbacks(execute=True):
            return self.client.post(RUNS, body, content_type="application/json")

    def test_a_json_submission_creates_a_queued_run_and_enqueues_its_compile(self, enqueue):
        response = self.submit_json(self.owner, name="my softmax", tags=["attn", "fp32"])

        self.assertEqual(response.status_code, 201)
        body = response.json()
        run = Run.objects.get()
        self.assertEqual(body["id"], run.pk)
        enqueue.assert_called_once_with(run.pk)
        self.assertEqual((run.owner, run.status, run.name), (self.owner, "queued", "my softmax"))
        self.assertEqual((run.tags, run.devices, run.strategies),
                         (["attn", "fp32"], ["h100"], ["xla", "cost"]))
        self.assertEqual(body["url"], f"http://testserver/r/{run.pk}")
        self.assertEqual(body["status_url"], f"http://testserver/api/v1/runs/{run.pk}/status")
        self.assertEqual(body["results_url"], f"http://testserver/api/v1/runs/{run.pk}/results")

    def test_a_run_is_compiled_for_the_runtime_asked_for(self, enqueue):
        response = self.submit_json(self.owner, runtime="stream")

        self.assertEqual(response.status_code, 201)
        run = Run.objects.get()
        self.assertEqual(run.runtime, "stream")
        self.client.force_login(self.owner)
        self.assertEqual(self.client.get(f"{RUNS}/{run.pk}").json()["runtime"], "stream")
        # The same graph and options as a CUDA graph: another run.
        self.assertEqual(self.submit_json(self.owner).status_code, 201)
        refused = self.submit_json(self.owner, runtime="cudagraphs")
        self.assertEqual(refused.status_code, 400)
        self.assertIn("runtime must be one of graph, stream", refused.json()["error"])

    def test_a_multipart_upload_creates_a_run_too(self, enqueue):
        self.client.force_login(self.owner)
        graph = SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes())
        response = self.client.post(RUNS, {"file": graph, "devices": "a100,h100",
                                           "strategies": ["unfused", "stitch"],
                                           "tags": ["a", "b"]})

        self.assertEqual(response.status_code, 201)
        run = Run.objects.get(pk=response.json()["id"])
        self.assertEqual(bytes(run.graph_bytes), SOFTMAX.read_bytes())
        self.assertEqual((run.devices, run.strategies, run.tags),
                         (["a100", "h100"], ["unfused", "stitch"], ["a", "b"]))

    def test_resubmitting_returns_the_same_run_with_a_200(self, enqueue):
        first = self.submit_json(self.owner)
        again = self.submit_json(self.owner, name="another label")

        self.assertEqual(again.status_code, 200)
        self.assertEqual(again.json(), {**first.json(), "labels_not_applied": ["name"]})
        self.assertEqual(Run.objects.count(), 1)
        enqueue.assert_called_once()

    def test_the_same_graph_from_another_user_is_another_run(self, enqueue):
        first = self.submit_json(self.owner).json()["id"]
        second = self.submit_json(self.stranger)

        self.assertEqual(second.status_code, 201)
        self.assertNotEqual(second.json()["id"], first)

    def test_it_rejects_malformed_hlo_with_the_importers_file_line_and_column(self, enqueue):
        response = self.submit_json(self.owner, filename="bad.hlo", text=BAD_HLO.decode())

        self.assertEqual(response.status_code, 400)
        self.assertTrue(response.json()["error"].startswith(
            "bad.hlo:5:19: unknown opcode 'frobnicate'"))
        self.assertFalse(Run.objects.exists())
        enqueue.assert_not_called()

    def test_it_names_an_unknown_device(self, enqueue):
        response = self.submit_json(self.owner, devices=["tpu"])

        self.assertEqual(response.status_code, 400)
        self.assertIn("tpu", response.json()["error"])

    def test_it_rejects_options_of_the_wrong_type(self, enqueue):
        response = self.submit_json(self.owner, strategies="cost")

        self.assertEqual(response.status_code, 400)
        self.assertEqual(response.json()["error"], "strategies must be a list of strings")

    def test_it_needs_a_filename_and_text(self, enqueue):
        self.client.force_login(self.owner)
        response = self.client.post(RUNS, {"text": "x"}, content_type="application/json")

        self.assertEqual(response.status_code, 400)
        self.assertIn("filename", response.json()["error"])

    def test_a_json_body_past_its_limit_is_a_413_that_says_how_to_send_it(self, enqueue):
        with self.settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
            response = self.submit_json(self.owner)

        self.assertEqual(response.status_code, 413)
        error = response.json()["error"]
        self.assertIn("at most 1,000 bytes", error)
        self.assertIn("multipart/form-data", error)
        self.assertIn("FUSION_EXPLORER_MAX_INPUT_BYTES", error)
        enqueue.assert_not_called()

    def test_a_file_past_the_input_limit_is_a_413_naming_the_limit(self, enqueue):
        self.client.force_login(self.owner)
        upload = SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes())
        with mock.patch.dict("os.environ", {"FUSION_EXPLORER_MAX_INPUT_BYTES": "100"}):
            response = self.client.post(RUNS, {"file": upload})

        self.assertEqual(response.status_code, 413)
        self.assertIn("FUSION_EXPLORER_MAX_INPUT_BYTES", response.json()["error"])
        self.assertEqual(Run.objects.count(), 0)

    def test_it_refuses_a_body_that_is_not_json_or_multipart(self, enqueue):
        self.client.force_login(self.owner)
        response = self.client.post(RUNS, "x", content_type="text/plain")

        self.assertEqual(response.status_code, 415)

    def test_a_team_run_is_shared_with_a_team_of_the_callers(self, enqueue):
        response = self.submit_json(self.owner, visibility="team", team="kernels")

        run = Run.objects.get(pk=response.json()["id"])
        self.assertEqual((run.visibility, run.team), ("team", self.team))

    def test_a_team_run_needs_a_team_the_caller_belongs_to(self, enqueue):
        no_team = self.submit_json(self.owner, visibility="team")
        not_mine = self.submit_json(self.stranger, visibility="team", team="kernels")

        self.assertEqual(no_team.status_code, 400)
        self.assertEqual(not_mine.status_code, 400)
        self.assertIn("not a member", not_mine.json()["error"])
        self.assertFalse(Run.objects.exists())

    def test_an_anonymous_submission_gets_a_401(self, enqueue):
        response = self.client.post(RUNS, {}, content_type="application/json")

        self.assertEqual(response.status_code, 401)


class ListRunsTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.private = cls.make_run("a" * 22, name="softmax one", tags=["attn"])
        cls.team_run = cls.make_run("b" * 22, Run.TEAM, tags=["mlp"])
        cls.public = cls.make_run("c" * 22, Run.PUBLIC, name="layernorm")
        Run.objects.exclude(pk="b" * 22).update(devices=["h100"])
        for age, run in enumerate((cls.public, cls.team_run, cls.private)):
            Run.objects.filter(pk=run.pk).update(created=run.created - timedelta(minutes=age))

    def ids(self, user, **params):
        self.client.force_login(user)
        response = self.client.get(RUNS, params)
        self.assertEqual(response.status_code, 200)
        return [run["id"] for run in response.json()["results"]]

    def test_the_owner_lists_every_run_newest_first(self):
        self.assertEqual(self.ids(self.owner), ["c" * 22, "b" * 22, "a" * 22])

    def test_a_teammate_lists_team_and_public_runs(self):
        self.assertEqual(self.ids(self.teammate), ["c" * 22, "b" * 22])

    def test_a_stranger_lists_only_public_runs(self):
        self.assertEqual(self.ids(self.stranger), ["c" * 22])

    def test_the_list_agrees_with_can_view(self):
        for user in (self.owner, self.teammate, self.stranger):
            expected = {run.pk for run in Run.objects.all() if run.can_view(user)}
            self.assertEqual(set(self.ids(user)), expected)

    def test_it_filters_by_device_tag_and_text(self):
        self.assertEqual(self.ids(self.owner, device="a100"), ["b" * 22])
        self.assertEqual(self.ids(self.owner, tag="attn"), ["a" * 22])
        self.assertEqual(self.ids(self.owner, q="LAYERNORM"), ["c" * 22])

    def test_it_pages_with_links_to_the_next_and_previous_page(self):
        self.client.force_login(self.owner)
        first = self.client.get(RUNS, {"per_page": 2}).json()
        second = self.client.get(first["next"]).json()

        self.assertEqual((first["count"], first["pages"], first["previous"]), (3, 2, None))
        self.assertEqual([run["id"] for run in second["results"]], ["a" * 22])
        self.assertIsNone(second["next"])
        self.assertIn("per_page=2", second["previous"])

    def test_only_the_runs_of_the_page_are_read_whole(self):
        """The list reads the count and the page's runs, not every run the caller may see
        (with a filter on a list field, their ids and lists only)."""
        make_heavy_runs(self.owner, 3)
        self.client.force_login(self.owner)
        for params in ({"per_page": 2}, {"per_page": 2, "device": "h100"}):
            with CaptureQueriesContext(connection) as queries:
                response = self.client.get(RUNS, params)
            self.assertEqual(len(response.json()["results"]), 2)
            whole = [query["sql"] for query in queries
                     if '"explorer_run"."name"' in query["sql"]]
            self.assertEqual(len(whole), 1)
            self.assertIn("LIMIT 2", whole[0])

    def test_it_rejects_a_bad_page(self):
        self.client.force_login(self.owner)

        self.assertEqual(self.client.get(RUNS, {"page": "x"}).status_code, 400)
        self.assertEqual(self.client.get(RUNS, {"page": 9}).status_code, 404)
        self.assertEqual(self.client.get(RUNS, {"per_page": 999}).status_code, 400)

    def test_it_refuses_a_delete_with_a_405(self):
        self.client.force_login(self.owner)
        response = self.client.delete(RUNS)

        self.assertEqual(response.status_code, 405)
        self.assertEqual(response["Allow"], "GET, POST")


class RunDetailTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.running = cls.make_run("s" * 22, Run.TEAM, Run.RUNNING, stage="codegen",
                               progress_done=3, progress_total=7, name="softmax")
        cls.url = reverse("api-run", args=[cls.running.pk])
        cls.status_url = reverse("api-run-status", args=[cls.running.pk])

    def get(self, user, url):
        self.client.force_login(user)
        return self.client.get(url)

    def test_it_gives_the_owner_the_runs_metadata_and_progress(self):
        body = self.get(self.owner, self.url).json()

        self.assertEqual((body["id"], body["name"], body["owner"], body["team"]),
                         (self.running.pk, "softmax", "owner", "kernels"))
        self.assertEqual(body["progress"], self.running.status_dict())
        self.assertEqual(body["status"], "running")
        self.assertEqual(body["compiler_version"], "test")

    def test_the_status_is_the_pages_status(self):
        response = self.get(self.owner, self.status_url)

        self.assertEqual(response.json(), self.running.status_dict())
        self.assertEqual(response.json()["progress_done"], 3)

    def test_a_teammate_sees_a_team_run(self):
        self.assertEqual(self.get(self.teammate, self.url).status_code, 200)
        self.assertEqual(self.get(self.teammate, self.status_url).status_code, 200)

    def test_a_stranger_cannot_tell_a_hidden_run_from_a_missing_one(self):
        hidden = self.get(self.stranger, self.status_url)
        missing = self.get(self.stranger, reverse("api-run-status", args=["x" * 22]))

        self.assertEqual(hidden.status_code, 404)
        self.assertEqual(hidden.json(), missing.json())
        self.assertEqual(self.get(self.stranger, self.url).status_code, 404)

    def test_an_anonymous_caller_gets_a_401(self):
        self.assertEqual(self.client.get(self.url).status_code, 401)
        self.assertEqual(self.client.get(self.status_url).status_code, 401)


@mock.patch("explorer.runs.enqueue_compile")
class ResubmissionLabelTests(AccessTestCase):
    def test_an_existing_run_names_the_labels_it_did_not_take(self, enqueue):
        self.client.force_login(self.owner)
        body = {"filename": "softmax.hlo", "text": SOFTMAX.read_text(), "devices": ["h100"],
                "strategies": ["xla"], "name": "first"}
        first = self.client.post(RUNS, body, content_type="application/json")
        same = self.client.post(RUNS, body, content_type="application/json")
        other = self.client.post(RUNS, {**body, "name": "second", "visibility": "public",
                                        "tags": ["x"]}, content_type="application/json")

        self.assertEqual(first.status_code, 201)
        self.assertNotIn("labels_not_applied", first.json())
        self.assertEqual(same.json()["labels_not_applied"], [])
        self.assertEqual(other.status_code, 200)
        self.assertEqual(other.json()["labels_not_applied"], ["name", "visibility", "tags"])
        self.assertEqual(Run.objects.get().name, "first")
