"""A run's results at /api/v1/runs/<id>/results and one kernel at .../kernels/<d>/<s>/<k>."""
import copy
import gzip
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from explorer.api import results_document
from explorer.documents import json_bytes
from explorer.models import KernelSource, Run
from tests.explorer.access import AccessTestCase, softmax_artifact
from tests.explorer.heavy import make_heavy_runs

KERNEL = ("h100", "cost", "stitch-regional.0")   # softmax.hlo's one stitched kernel


class ResultsTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("api-run-results", args=[cls.done.pk])

    def get(self, user, url=None):
        self.client.force_login(user)
        return self.client.get(url or self.url)

    def test_it_gives_the_owner_the_artifact(self):
        response = self.get(self.owner)

        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.json(), {"id": self.done.pk, **self.done.artifact,
                                           "measurement": None})

    def test_each_device_has_the_codegen_json_shape(self):
        devices = self.get(self.owner).json()["devices"]

        self.assertEqual(set(devices), {"a100", "h100"})
        cost = devices["h100"]["strategies"]["cost"]
        self.assertEqual(set(cost["total"]) >= {"sol_us", "proj_us", "measured_us"}, True)
        self.assertIsNone(cost["kernels"][0]["measured_us"])
        self.assertEqual(cost["kernels"][0]["name"], "stitch-regional.0")

    def test_a_teammate_fetches_a_team_runs_results(self):
        self.assertEqual(self.get(self.teammate).status_code, 200)

    def test_a_stranger_gets_a_404(self):
        response = self.get(self.stranger)

        self.assertEqual(response.status_code, 404)
        self.assertEqual(response.json(), {"error": "no such run"})

    def test_an_anonymous_caller_gets_a_401(self):
        self.assertEqual(self.client.get(self.url).status_code, 401)

    def test_a_running_run_gets_a_409_with_its_status(self):
        run = self.make_run("q" * 22, status=Run.RUNNING, stage="build", progress_done=2,
                            progress_total=5)
        response = self.get(self.owner, reverse("api-run-results", args=[run.pk]))

        self.assertEqual(response.status_code, 409)
        body = response.json()
        self.assertEqual(body["status"], run.status_dict())
        self.assertIn("running", body["error"])
        self.assertTrue(body["status_url"].endswith(f"/api/v1/runs/{run.pk}/status"))

    def test_a_failed_run_gets_its_error_and_stage(self):
        run = self.make_run("f" * 22, status=Run.FAILED, error="softmax.hlo:3:7: bad shape",
                            error_stage="import")
        response = self.get(self.owner, reverse("api-run-results", args=[run.pk]))

        self.assertEqual(response.status_code, 409)
        self.assertEqual(response.json()["error"],
                         "the run failed at stage import: softmax.hlo:3:7: bad shape")
        self.assertEqual(response.json()["status"]["error_stage"], "import")


class CachedResultsTests(AccessTestCase):
    """The document is serialised and gzipped once per run (and measurement): what later
    requests get is those bytes, until the run is compiled again."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.PRIVATE)
        cls.url = reverse("api-run-results", args=[cls.done.pk])

    def setUp(self):
        self.client.force_login(self.owner)

    def get(self, **headers):
        response = self.client.get(self.url, **headers)
        self.assertEqual(response.status_code, 200)
        return response

    def test_a_client_that_accepts_gzip_gets_the_stored_bytes_of_a_fresh_document(self):
        response = self.get(HTTP_ACCEPT_ENCODING="gzip, deflate")

        self.assertEqual(response["Content-Encoding"], "gzip")
        self.assertIn("Accept-Encoding", response["Vary"])
        run = Run.objects.get(pk=self.done.pk)
        self.assertEqual(gzip.decompress(response.content),
                         json_bytes(results_document(run, None, None)))

    def test_a_client_that_does_not_accept_gzip_gets_the_same_document_plain(self):
        packed = self.get(HTTP_ACCEPT_ENCODING="gzip").content
        plain = self.get()

        self.assertFalse(plain.has_header("Content-Encoding"))
        self.assertEqual(plain.content, gzip.decompress(packed))
        self.assertEqual(plain.json(), {"id": self.done.pk, **self.done.artifact,
                                        "measurement": None})

    def test_a_second_request_reads_no_artifact(self):
        self.get()
        with CaptureQueriesContext(connection) as queries:
            self.get()

        self.assertEqual([query["sql"] for query in queries
                          if '"explorer_runartifact"' in query["sql"]], [])

    def test_a_recompiled_run_gets_its_new_results(self):
        self.get()
        artifact = copy.deepcopy(softmax_artifact())
        artifact.pop("sources")
        artifact["devices"]["h100"]["strategies"]["cost"]["total"]["proj_us"] = 123.5
        run = Run.objects.get(pk=self.done.pk)
        run.artifact, run.finished = artifact, (run.finished or run.created) + timedelta(seconds=1)
        run.save()

        total = self.get().json()["devices"]["h100"]["strategies"]["cost"]["total"]
        self.assertEqual(total["proj_us"], 123.5)

    def test_the_queries_do_not_grow_with_the_owners_other_runs(self):
        self.get()
        with CaptureQueriesContext(connection) as alone:
            self.get()
        count = len(alone)   # now: the list it reads is cleared by the next request
        make_heavy_runs(self.owner, 3)
        self.get()

        with self.assertNumQueries(count):
            self.get()


class KernelTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("api-run-kernel", args=[cls.done.pk, *KERNEL])

    def get(self, user, url=None):
        self.client.force_login(user)
        return self.client.get(url or self.url)

    def test_it_gives_the_kernels_entry_source_ptx_and_line_map(self):
        body = self.get(self.owner).json()
        source = KernelSource.objects.get(run=self.done, device="h100", strategy="cost",
                                          kernel="stitch-regional.0")

        self.assertEqual(body["kernel"],
                         self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0])
        self.assertEqual((body["function"], body["source"]), (source.function, source.source))
        self.assertIn(".target sm_90", body["ptx"])
        self.assertEqual(body["line_nodes"], source.line_nodes)
        self.assertEqual(body["resources"]["registers"], source.resources["registers"])

    def test_an_unknown_kernel_gets_a_404_naming_it(self):
        response = self.get(self.owner, reverse("api-run-kernel",
                                                args=[self.done.pk, "h100", "cost", "nope.0"]))

        self.assertEqual(response.status_code, 404)
        self.assertIn("h100/cost/nope.0", response.json()["error"])

    def test_a_teammate_sees_a_team_runs_kernel(self):
        self.assertEqual(self.get(self.teammate).status_code, 200)

    def test_a_stranger_gets_a_404(self):
        self.assertEqual(self.get(self.stranger).status_code, 404)
