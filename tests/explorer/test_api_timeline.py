"""A plan's timeline and data-parallel overlap at /api/v1/runs/<id>/timeline, and its
downloads: the Perfetto trace and the Model Explorer graph. The figures are the compiler's
(tests/compiler/test_timeline.py, test_dp.py, test_exports.py check them); here: the API
serves the same as the compiler works out from the run's artifact, to whom it should."""
import json

from django.urls import reverse
from perfetto.protos.perfetto.trace import perfetto_trace_pb2

from compiler.fusion.explore import exploration_to_dict, explore
from compiler.importers import load_graph
from compiler.ir.summary import summarize
from compiler.ir.training import training_outputs
from compiler.stages.dp import data_parallel, dp_overlap
from compiler.stages.timeline import plan_timeline
from explorer.models import Run
from tests.explorer.access import DATA, AccessTestCase
from tests.explorer.test_api_schema import DOCUMENT, problems

STEP = DATA / "hlo" / "transformer_step_bf16.hlo"


def step_artifact() -> dict:
    """The training step's plans as the explore stage leaves them (no build: the timeline needs
    none), with its graph summary as a run's artifact holds it."""
    graph = load_graph(str(STEP))
    result = exploration_to_dict(summarize(graph), "h100",
                                 explore(graph, "h100", ["xla", "cost"]))
    return {"compiler_version": "test", "graph": result["graph"],
            "devices": {"h100": result}}


class TimelineTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.artifact = step_artifact()
        cls.step_run = Run.objects.create(
            id="t" * 22, owner=cls.owner, team=cls.team, visibility=Run.TEAM, status=Run.DONE,
            filename=STEP.name, graph_bytes=STEP.read_bytes(), devices=["h100"],
            strategies=["xla", "cost"], compiler_version="test", artifact=cls.artifact)
        cls.url = reverse("api-run-timeline", args=[cls.step_run.pk])

    def get(self, user, url):
        self.client.force_login(user)
        return self.client.get(url)

    def test_it_serves_the_compilers_timeline_and_overlap_of_the_asked_plan(self):
        response = self.get(self.owner, self.url + "?strategy=xla&runtime=stream&dp_world=8"
                                                   "&interconnect=ib&bucket_mb=2")

        self.assertEqual(response.status_code, 200)
        body = response.json()
        plan = self.artifact["devices"]["h100"]["strategies"]["xla"]
        timeline = plan_timeline(plan, "h100", "stream", self.artifact["graph"]["outputs"])
        served = body["timeline"]
        self.assertEqual([k["end_us"] for k in served["kernels"]],
                         [k["end_us"] for k in timeline["kernels"]])
        self.assertEqual(served["outputs"], timeline["outputs"])
        self.assertEqual(served["critical_path"], timeline["critical_path"])
        first = served["kernels"][0]
        self.assertEqual(first["url"], reverse("explorer-kernel", args=[
            self.step_run.pk, "h100", "xla", first["name"]]))
        expected = dp_overlap(timeline, self.artifact["graph"]["training"],
                              data_parallel(8, "ib", 2))
        self.assertEqual(body["dp"], json.loads(json.dumps(expected)))
        self.assertEqual(problems(body, DOCUMENT["components"]["schemas"]["PlanTimeline"]), [])

    def test_without_dp_world_there_is_no_overlap_and_the_runs_runtime_is_used(self):
        body = self.get(self.teammate, self.url + "?strategy=cost").json()

        self.assertIsNone(body["dp"])
        self.assertEqual(body["runtime"], self.step_run.runtime)
        self.assertEqual(body["training"]["gradients"],
                         self.artifact["graph"]["training"]["gradients"])

    def test_a_run_compiled_before_training_outputs_were_recorded_reads_its_upload(self):
        graph = {key: value for key, value in self.artifact["graph"].items()
                 if key != "training"}
        older = Run.objects.create(
            id="o" * 22, owner=self.owner, visibility=Run.PRIVATE, status=Run.DONE,
            filename=STEP.name, graph_bytes=STEP.read_bytes(), devices=["h100"],
            strategies=["xla", "cost"], compiler_version="test",
            artifact={**self.artifact, "graph": graph})

        body = self.get(self.owner, reverse("api-run-timeline", args=[older.pk])
                        + "?dp_world=8").json()

        self.assertEqual(body["training"], training_outputs(load_graph(str(STEP))))
        self.assertTrue(body["dp"]["training"])

    def test_a_bad_interconnect_or_plan_is_a_400_that_says_why(self):
        bad_link = self.get(self.owner, self.url + "?dp_world=8&interconnect=pigeon")
        bad_plan = self.get(self.owner, self.url + "?strategy=stitch")

        self.assertEqual(bad_link.status_code, 400)
        self.assertIn("unknown interconnect", bad_link.json()["error"])
        self.assertEqual(bad_plan.status_code, 400)
        self.assertIn("xla, cost", bad_plan.json()["error"])

    def test_a_stranger_gets_a_404(self):
        self.assertEqual(self.get(self.stranger, self.url).status_code, 404)
        trace = reverse("api-run-plan-trace", args=[self.step_run.pk, "h100", "cost"])
        self.assertEqual(self.get(self.stranger, trace).status_code, 404)

    def test_the_trace_download_is_a_perfetto_trace_of_the_plan(self):
        url = reverse("api-run-plan-trace", args=[self.step_run.pk, "h100", "cost"])
        response = self.get(self.owner, url + "?dp_world=8")

        self.assertEqual(response.status_code, 200)
        self.assertIn("fusion-run-" + self.step_run.pk + "-h100-cost.perfetto-trace",
                      response["Content-Disposition"])
        trace = perfetto_trace_pb2.Trace.FromString(response.content)
        names = {packet.track_descriptor.name for packet in trace.packet
                 if packet.HasField("track_descriptor")}
        self.assertIn("kernels: projected", names)
        self.assertIn("all-reduce: each output released when ready", names)

    def test_the_model_explorer_download_holds_every_node_in_its_kernel(self):
        url = reverse("api-run-plan-model-explorer", args=[self.step_run.pk, "h100", "cost"])
        response = self.get(self.owner, url)

        self.assertEqual(response.status_code, 200)
        self.assertIn("model-explorer.json", response["Content-Disposition"])
        (graph,) = response.json()["graphs"]
        plan = self.artifact["devices"]["h100"]["strategies"]["cost"]
        owner = {name: kernel["name"] for kernel in plan["kernels"] for name in kernel["nodes"]}
        self.assertEqual({node["id"]: node["namespace"] for node in graph["nodes"]},
                         {name: owner.get(name, "") for name in load_graph(str(STEP)).nodes})


class RunPageDownloadTests(AccessTestCase):
    def test_the_run_page_links_each_plans_trace_and_model_explorer_graph(self):
        run = self.make_done_run("p" * 22, Run.PUBLIC)

        page = self.client.get(reverse("explorer-run", args=[run.pk])).content.decode()

        for device in run.devices:
            for strategy in run.strategies:
                for name in ("api-run-plan-trace", "api-run-plan-model-explorer"):
                    self.assertIn(f'href="{reverse(name, args=[run.pk, device, strategy])}"',
                                  page)
