"""The fusion view's graph at /api/v1/runs/<id>/graph?device=D&strategy=S."""
import gzip
import json

from django.core.cache import cache
from django.urls import reverse

from compiler.importers import load_graph
from explorer.models import PlanGraph, Run
from tests.explorer.access import SOFTMAX, AccessTestCase, softmax_artifact


class GraphTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("g" * 22, Run.TEAM)
        cls.url = reverse("api-run-graph", args=[cls.done.pk])

    def get(self, user, query="", url=None):
        self.client.force_login(user)
        return self.client.get((url or self.url) + query)

    def test_it_lists_every_node_with_the_kernel_of_the_asked_plan(self):
        response = self.get(self.owner, "?device=a100&strategy=xla")

        self.assertEqual(response.status_code, 200)
        body = response.json()
        self.assertEqual((body["device"], body["strategy"]), ("a100", "xla"))
        graph = load_graph(SOFTMAX)
        self.assertEqual([node["id"] for node in body["nodes"]], list(graph.nodes))
        plan = softmax_artifact()["devices"]["a100"]["strategies"]["xla"]
        owner = {name: kernel["name"] for kernel in plan["kernels"] for name in kernel["nodes"]}
        self.assertEqual({node["id"]: node["kernel"] for node in body["nodes"]},
                         {name: owner.get(name) for name in graph.nodes})
        self.assertEqual(sorted(map(tuple, body["edges"])),
                         sorted((o, node.name) for node in graph for o in node.operands))
        self.assertEqual([kernel["name"] for kernel in body["kernels"]],
                         [kernel["name"] for kernel in plan["kernels"]])

    def test_the_view_the_worker_stored_is_served_with_the_artifacts_kernel_figures(self):
        # Worked out once (and stored), then served from storage: its layout as stored, its
        # kernels' figures as the artifact (and any measurement) has them now.
        first = self.get(self.owner, "?device=h100&strategy=cost").json()
        stored = PlanGraph.objects.get(run=self.done, device="h100", strategy="cost")
        view = json.loads(gzip.decompress(bytes(stored.data)))
        self.assertEqual(view["layout"], first["layout"])
        view["layout"]["layers"] = 12345            # a mark: this answer is the stored one
        for kernel in view["kernels"]:
            kernel["proj_us"] = -1.0                # stale figures are not served
        stored.data = gzip.compress(json.dumps(view).encode())
        stored.save()
        cache.clear()

        body = self.get(self.owner, "?device=h100&strategy=cost").json()
        self.assertEqual(body["layout"]["layers"], 12345)
        plan = softmax_artifact()["devices"]["h100"]["strategies"]["cost"]
        self.assertEqual([kernel["proj_us"] for kernel in body["kernels"]],
                         [kernel["proj_us"] for kernel in plan["kernels"]])
        self.assertEqual(body["nodes"], first["nodes"])

    def test_by_default_it_shows_the_first_device_and_its_fastest_plan(self):
        body = self.get(self.owner).json()

        plans = softmax_artifact()["devices"]["a100"]["strategies"]
        # The lowest projected total, ties to the earlier strategy in exploration order.
        fastest = min(plans, key=lambda name: plans[name]["total"]["proj_us"])
        self.assertEqual((body["device"], body["strategy"]), ("a100", fastest))

    def test_an_unknown_device_or_strategy_is_a_400_that_names_the_choices(self):
        response = self.get(self.owner, "?device=v100")
        self.assertEqual(response.status_code, 400)
        self.assertEqual(response.json()["error"],
                         "device 'v100' is not one of this run's: a100, h100")

        response = self.get(self.owner, "?device=h100&strategy=greedy")
        self.assertEqual(response.status_code, 400)
        self.assertIn("strategy 'greedy' is not one of this run's: unfused, xla, stitch, cost",
                      response.json()["error"])

    def test_a_teammate_sees_it_a_stranger_gets_a_404_and_nobody_a_404(self):
        self.assertEqual(self.get(self.teammate).status_code, 200)
        self.assertEqual(self.get(self.stranger).status_code, 404)
        self.client.logout()
        self.assertEqual(self.client.get(self.url).status_code, 404)

    def test_a_public_run_is_answered_without_credentials_and_bad_ones_are_refused(self):
        public = self.make_done_run("p" * 22, Run.PUBLIC)
        url = reverse("api-run-graph", args=[public.pk])
        self.client.logout()
        self.assertEqual(self.client.get(url).status_code, 200)
        response = self.client.get(url, HTTP_AUTHORIZATION="Bearer not-a-key")
        self.assertEqual(response.status_code, 401)

    def test_it_carries_the_layout_of_every_kernel_and_every_node_outside_them(self):
        body = self.get(self.owner, "?device=h100&strategy=unfused").json()

        top = {entry["id"]: entry for entry in body["layout"]["top"]}
        alone = {n["id"] for n in body["nodes"] if n["kernel"] is None and not n["also_in"]}
        self.assertEqual(set(top), {k["name"] for k in body["kernels"]} | alone)
        self.assertEqual(set(body["layout"]["inner"]), {k["name"] for k in body["kernels"]})
        nodes = {n["id"]: n for n in body["nodes"]}
        for source, target in body["edges"]:   # a value read through memory goes down
            reader = nodes[target]["kernel"]
            if reader is None or reader in nodes[source]["also_in"]:
                continue                       # into a tuple, or recomputed by its reader
            writer = nodes[source]["kernel"] or source
            self.assertLess(top[writer]["layer"], top[reader]["layer"])

    def test_a_running_run_gets_a_409(self):
        run = self.make_run("q" * 22, status=Run.RUNNING, stage="build")
        response = self.get(self.owner, url=reverse("api-run-graph", args=[run.pk]))

        self.assertEqual(response.status_code, 409)

    def test_a_plan_that_does_not_match_the_upload_is_a_422_not_a_crash(self):
        artifact = softmax_artifact()
        kernels = artifact["devices"]["h100"]["strategies"]["cost"]["kernels"]
        edited = {**artifact, "devices": {**artifact["devices"], "h100": {
            **artifact["devices"]["h100"], "strategies": {"cost": {
                "total": {"proj_us": 1.0}, "kernels": [{**kernels[0], "nodes": ["no-such-op"]}]
            }}}}}
        run = self.make_done_run("x" * 22, Run.PRIVATE, artifact=edited)
        response = self.get(self.owner, "?device=h100&strategy=cost",
                            url=reverse("api-run-graph", args=[run.pk]))

        self.assertEqual(response.status_code, 422)
        self.assertIn("'no-such-op'", response.json()["error"])
