"""`manage.py import_measurements DIR`: a GPU campaign's measured plans as measurements of the runs
of the same graph, device and compiler version, each figure labelled with where it came from.

The campaign folder is tests/explorer/data/campaign-h200 (the committed H200 campaign's softmax, see its
README). Its plans file records no graph digest or compiler version, as every campaign before
they were recorded; the tests add them to a copy, naming the graph of the runs here, and check
that the campaign's own figures (read from the folder) are what the runs then hold and show."""
import hashlib
import json
import shutil
from functools import cache
from io import StringIO
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from compiler.stages.pipeline import compile_graph
from explorer.management.commands.load_samples import samples_user
from explorer.models import Measurement, Run
from tests.explorer.access import SOFTMAX, STRATEGIES, AccessTestCase

CAMPAIGN = Path(__file__).resolve().parent / "data" / "campaign-h200"
DEVICE = "h200"
VERSION = "test"   # the compiler version AccessTestCase's runs carry
ORIGIN = ("NVIDIA H200, driver 580.159.04, clocks up to 1980 MHz SM, 3201 MHz memory, "
          "campaign of 2026-11-27, imported")


@cache
def h200_artifact() -> dict:
    artifact = compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, [DEVICE], STRATEGIES)
    artifact.pop("sources")
    return artifact


def campaign_plans() -> dict:
    return json.loads((CAMPAIGN / "plans" / "softmax.json").read_text())


class ImportMeasurementsTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.sample = cls.h200_run("s" * 22, samples_user(), Run.PUBLIC)
        cls.private = cls.h200_run("p" * 22, cls.owner, Run.PRIVATE)
        cls.other_device = cls.make_run("h" * 22, Run.PRIVATE, Run.DONE,
                                        artifact=h200_artifact())
        cls.other_version = cls.h200_run("v" * 22, cls.owner, Run.PRIVATE,
                                         compiler_version="another")
        cls.compiling = cls.h200_run("c" * 22, cls.owner, Run.PRIVATE, status=Run.RUNNING)

    @classmethod
    def h200_run(cls, run_id: str, owner: User, visibility: str, **fields) -> Run:
        fields = {"status": Run.DONE, "compiler_version": VERSION, **fields}
        return Run.objects.create(id=run_id, owner=owner, visibility=visibility,
                                  filename=SOFTMAX.name, graph_bytes=SOFTMAX.read_bytes(),
                                  devices=[DEVICE], strategies=STRATEGIES,
                                  artifact=h200_artifact(), **fields)

    def campaign(self, edit=None, **recorded) -> Path:
        """A copy of the campaign whose plans file records `recorded` (by default the digest of
        softmax.hlo and the runs' compiler version), edited by `edit(plans)`."""
        folder = Path(self.enterContext(_temporary_folder())) / "campaign"
        shutil.copytree(CAMPAIGN, folder)
        plans = {**campaign_plans(), "graph_sha256": hashlib.sha256(
            SOFTMAX.read_bytes()).hexdigest(), "compiler_version": VERSION, **recorded}
        if edit:
            edit(plans)
        (folder / "plans" / "softmax.json").write_text(json.dumps(plans))
        return folder

    def import_(self, folder: Path) -> str:
        out = StringIO()
        call_command("import_measurements", str(folder), stdout=out)
        return out.getvalue()

    def test_the_committed_campaign_records_no_graph_so_it_matches_no_run_and_says_so(self):
        output = self.import_(CAMPAIGN)

        self.assertIn("plans/softmax.json: records no graph_sha256 or compiler_version", output)
        self.assertIn("0 measurement(s) added.", output)
        self.assertFalse(Measurement.objects.exists())

    def test_every_done_run_of_the_graph_device_and_compiler_gets_the_campaigns_times(self):
        output = self.import_(self.campaign())

        self.assertIn("2 measurement(s) added.", output)
        self.assertEqual({m.run_id for m in Measurement.objects.all()},
                         {self.sample.pk, self.private.pk})
        measurement = Measurement.objects.get(run=self.sample)
        self.assertEqual((measurement.status, measurement.gpu), (Measurement.DONE, ORIGIN))
        result = measurement.result
        self.assertEqual(result["origin"], ORIGIN)
        self.assertEqual(result["imported"]["driver"], "580.159.04")
        self.assertEqual(result["imported"]["clocks"]["max.sm"], "1980 MHz")
        expected = campaign_plans()["strategies"]
        measured = result["devices"][DEVICE]
        self.assertTrue(measured["matches_gpu"])
        for strategy in STRATEGIES:
            ours, theirs = measured["strategies"][strategy], expected[strategy]
            self.assertEqual(ours["end_to_end"]["median_us"], theirs["end_to_end_us"])
            self.assertEqual(ours["total_us"], theirs["measured_sum_us"])
            self.assertEqual([k["measured_us"] for k in ours["kernels"]],
                             [k["measured_us"] for k in theirs["kernels"]])
        anchor = json.loads((CAMPAIGN / "anchors" / "softmax.json").read_text())["cupy_eager"]
        self.assertEqual(measured["eager"]["measured_us"], anchor["median_us"])

    def test_importing_twice_adds_nothing(self):
        folder = self.campaign()
        self.import_(folder)
        output = self.import_(folder)

        self.assertIn(f"run {self.sample.pk}: imported before, nothing added", output)
        self.assertIn("0 measurement(s) added.", output)
        self.assertEqual(Measurement.objects.count(), 2)

    def test_the_run_and_kernel_pages_show_the_times_and_say_where_they_came_from(self):
        self.import_(self.campaign())
        cost = campaign_plans()["strategies"]["cost"]

        page = self.client.get(reverse("explorer-run", args=[self.sample.pk]))
        self.assertContains(page, f"measured on {ORIGIN}")
        self.assertContains(page, f"Measured on {ORIGIN}")
        kernel = self.client.get(reverse("explorer-kernel", args=[
            self.sample.pk, DEVICE, "cost", cost["kernels"][0]["name"]]))
        self.assertContains(kernel, f"On {ORIGIN}")
        self.client.force_login(self.owner)
        results = self.client.get(reverse("api-run-results", args=[self.private.pk])).json()
        total = results["devices"][DEVICE]["strategies"]["cost"]["total"]
        self.assertEqual(total["measured_us"], cost["end_to_end_us"])

    def test_a_plan_whose_kernels_are_not_the_runs_is_left_out_and_reported(self):
        def rename(plans):
            plans["strategies"]["xla"]["kernels"][0]["name"] = "input.99"

        output = self.import_(self.campaign(rename))

        self.assertIn(f"run {self.sample.pk}: its xla plan's kernels are not the campaign's: "
                      f"left out", output)
        strategies = Measurement.objects.get(run=self.sample).result["devices"][DEVICE][
            "strategies"]
        self.assertEqual(sorted(strategies), sorted(set(STRATEGIES) - {"xla"}))

    def test_a_campaign_of_another_graph_matches_nothing_and_says_so(self):
        output = self.import_(self.campaign(graph_sha256="0" * 64))

        self.assertIn(f"no done run of graph {'0' * 12} for {DEVICE} made by compiler {VERSION}",
                      output)
        self.assertFalse(Measurement.objects.exists())

    def test_a_dry_runs_synthetic_timings_are_never_imported(self):
        folder = self.campaign()
        (folder / "campaign.json").write_text(json.dumps(
            {"dry_run": True, "size": "small", "device": DEVICE}))

        self.assertIn("a dry run, whose timings are synthetic: nothing imported",
                      self.import_(folder))
        self.assertFalse(Measurement.objects.exists())

    def test_a_folder_that_is_not_a_campaigns_is_refused_naming_the_file(self):
        folder = Path(self.enterContext(_temporary_folder()))
        with self.assertRaisesRegex(CommandError, r"campaign\.json: not found"):
            self.import_(folder)
        with self.assertRaisesRegex(CommandError, "no such folder"):
            self.import_(folder / "missing")


def _temporary_folder():
    import tempfile

    return tempfile.TemporaryDirectory()
