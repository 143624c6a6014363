"""Exporting a run: /api/v1/runs/<id>/export.json and export.csv."""
import copy
import csv
import gzip
import io
import json
from datetime import timedelta

from django.urls import reverse

from explorer.api import CSV_COLUMNS
from explorer.models import KernelSource, Run
from tests.explorer.access import AccessTestCase, softmax_artifact

INTEGER_COLUMNS = ("nodes", "dram_bytes", "block_size", "grid_size", "registers",
                   "shared_bytes", "spill_bytes")
FLOAT_COLUMNS = ("sol_us", "proj_us", "measured_us", "occupancy", "waves")


class ExportTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.json_url = reverse("api-run-export-json", args=[cls.done.pk])
        cls.csv_url = reverse("api-run-export-csv", args=[cls.done.pk])

    def get(self, user, url):
        self.client.force_login(user)
        return self.client.get(url)

    def csv_rows(self) -> list[dict]:
        response = self.get(self.owner, self.csv_url)
        self.assertEqual(response.status_code, 200)
        return list(csv.DictReader(io.StringIO(response.content.decode())))

    def kernels(self):
        for device, result in self.done.artifact["devices"].items():
            for strategy, strategy_result in result["strategies"].items():
                for kernel in strategy_result["kernels"]:
                    yield device, strategy, kernel

    def test_the_json_export_is_a_download_of_the_run_and_its_artifact(self):
        response = self.get(self.owner, self.json_url)

        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "application/json")
        self.assertEqual(response["Content-Disposition"],
                         f'attachment; filename="fusion-run-{self.done.pk}.json"')
        body = response.json()
        self.assertEqual(body["run"]["id"], self.done.pk)
        self.assertEqual(body["run"]["status"], "done")

    def test_the_json_export_holds_what_the_compiler_produced_sources_included(self):
        artifact = self.get(self.owner, self.json_url).json()["artifact"]

        self.assertEqual(artifact, softmax_artifact())
        self.assertEqual(len(artifact["sources"]),
                         KernelSource.objects.filter(run=self.done).count())

    def test_the_csv_export_is_a_download_with_the_documented_header(self):
        response = self.get(self.owner, self.csv_url)

        self.assertEqual(response["Content-Type"], "text/csv; charset=utf-8")
        self.assertEqual(response["Content-Disposition"],
                         f'attachment; filename="fusion-run-{self.done.pk}.csv"')
        header = next(csv.reader(io.StringIO(response.content.decode())))
        self.assertEqual(tuple(header), CSV_COLUMNS)

    def test_the_csv_has_one_row_per_device_strategy_and_kernel(self):
        rows = self.csv_rows()

        self.assertEqual([(row["device"], row["strategy"], row["kernel"]) for row in rows],
                         [(device, strategy, kernel["name"])
                          for device, strategy, kernel in self.kernels()])
        self.assertEqual({row["strategy"] for row in rows}, {"unfused", "xla", "stitch", "cost"})

    def test_the_csv_numbers_are_the_artifacts_numbers(self):
        for row, (_, _, kernel) in zip(self.csv_rows(), self.kernels(), strict=True):
            self.assertEqual(int(row["nodes"]), len(kernel["nodes"]))
            self.assertEqual((row["kind"], row["limiter"], row["schedule"] or None),
                             (kernel["kind"], kernel["limiter"], kernel.get("schedule")))
            for column in INTEGER_COLUMNS[1:]:
                expected = kernel.get(column)
                self.assertEqual(int(row[column]) if row[column] else None, expected, column)
            for column in FLOAT_COLUMNS:
                expected = kernel.get(column)
                self.assertEqual(float(row[column]) if row[column] else None, expected, column)

    def test_unmeasured_kernels_have_an_empty_measured_cell_not_a_number(self):
        self.assertEqual({row["measured_us"] for row in self.csv_rows()}, {""})

    def test_a_teammate_exports_a_team_run(self):
        self.assertEqual(self.get(self.teammate, self.csv_url).status_code, 200)
        self.assertEqual(self.get(self.teammate, self.json_url).status_code, 200)

    def test_a_stranger_gets_a_404(self):
        self.assertEqual(self.get(self.stranger, self.csv_url).status_code, 404)
        self.assertEqual(self.get(self.stranger, self.json_url).status_code, 404)

    def test_an_anonymous_caller_may_not_export_a_run_that_is_not_public(self):
        # A 404, as for a run that does not exist; a public run's exports are open to anyone
        # (test_gallery.py).
        self.assertEqual(self.client.get(self.csv_url).status_code, 404)
        self.assertEqual(self.client.get(self.json_url).status_code, 404)

    def test_a_queued_run_cannot_be_exported_yet(self):
        run = self.make_run("q" * 22)
        response = self.get(self.owner, reverse("api-run-export-csv", args=[run.pk]))

        self.assertEqual(response.status_code, 409)
        self.assertEqual(response.json()["status"]["status"], "queued")


class CachedExportTests(AccessTestCase):
    """Each export is built once and kept gzipped, and built again when what it holds changes:
    the run recompiled, renamed or shared differently."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.json_url = reverse("api-run-export-json", args=[cls.done.pk])
        cls.csv_url = reverse("api-run-export-csv", args=[cls.done.pk])

    def setUp(self):
        self.client.force_login(self.owner)

    def test_a_client_that_accepts_gzip_gets_the_export_gzipped(self):
        response = self.client.get(self.json_url, HTTP_ACCEPT_ENCODING="gzip")

        self.assertEqual(response["Content-Encoding"], "gzip")
        self.assertEqual(response["Content-Disposition"],
                         f'attachment; filename="fusion-run-{self.done.pk}.json"')
        body = json.loads(gzip.decompress(response.content))
        self.assertEqual(body["artifact"], softmax_artifact())
        self.assertEqual(gzip.decompress(response.content), self.client.get(self.json_url).content)

    def test_a_renamed_run_exports_its_new_name(self):
        self.client.get(self.json_url)
        Run.objects.filter(pk=self.done.pk).update(name="renamed", tags=["nightly"])

        run = self.client.get(self.json_url).json()["run"]
        self.assertEqual((run["name"], run["tags"]), ("renamed", ["nightly"]))

    def test_a_recompiled_run_exports_its_new_numbers(self):
        self.client.get(self.json_url)
        self.client.get(self.csv_url)
        artifact = copy.deepcopy(softmax_artifact())
        artifact.pop("sources")
        for kernel in artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]:
            kernel["sol_us"] = 77.25
        run = Run.objects.get(pk=self.done.pk)
        run.artifact, run.finished = artifact, (run.finished or run.created) + timedelta(seconds=1)
        run.save()

        exported = self.client.get(self.json_url).json()["artifact"]
        self.assertEqual(exported["devices"]["h100"]["strategies"]["cost"]["kernels"][0]["sol_us"],
                         77.25)
        rows = csv.DictReader(io.StringIO(self.client.get(self.csv_url).content.decode()))
        cost = [row for row in rows if (row["device"], row["strategy"]) == ("h100", "cost")]
        self.assertEqual({row["sol_us"] for row in cost}, {"77.25"})
