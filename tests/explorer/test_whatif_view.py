"""What-if in the web app (explorer/plan_edits.py): a run's plan edited through
explorer-whatif, priced against the compiler's own from-scratch pricing of the same grouping,
refusals that change nothing, undo as a shorter list, the CUDA of an edited kernel, saving
under the run's access rules and plan files exported and saved back."""
import json

from django.urls import reverse

from compiler.fusion.plan_files import graph_digest, plan_from_kernels
from compiler.stages.pipeline import import_graph
from compiler.target.devices import get_device
from compiler.target.sol import SolModel
from explorer import plan_edits, runs
from explorer.models import Run, SavedPlan, TuneJob
from tests.explorer.access import SOFTMAX, AccessTestCase, softmax_artifact


def from_scratch_total(kernels: list[dict], device: str = "h100", runtime: str = "graph") -> float:
    """The projected total of a grouping priced from nothing (no edit history)."""
    graph = import_graph(SOFTMAX.read_bytes(), SOFTMAX.name)
    plan = plan_from_kernels(graph, SolModel(graph, get_device(device)), kernels, "test",
                             runtime)
    return plan.projected_totals()["proj_us"]


class FreshSessions:
    """A test case whose what-if sessions start closed (none kept from another test) and are
    priced without a learned model."""

    def setUp(self):
        super().setUp()
        plan_edits._sessions.clear()
        patcher = self.settings(WHATIF_LEARNED=False)
        patcher.enable()
        self.addCleanup(patcher.disable)


class WhatIfViewTests(FreshSessions, AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.shown = cls.make_done_run("w" * 22, Run.PUBLIC)
        cls.unfused = cls.shown.artifact["devices"]["h100"]["strategies"]["unfused"]["kernels"]

    def setUp(self):
        super().setUp()
        self.enqueued = []
        original = runs.enqueue_saved_plan
        runs.enqueue_saved_plan = self.enqueued.append
        self.addCleanup(setattr, runs, "enqueue_saved_plan", original)

    def post(self, url, data, user=None):
        if user is not None:
            self.client.force_login(user)
        return self.client.post(url, json.dumps(data), content_type="application/json")

    def what_if(self, edits, strategy="unfused", user=None):
        url = reverse("explorer-whatif", args=[self.shown.pk, "h100", strategy])
        return self.post(url, {"edits": edits}, user or self.owner)

    def adjacent_pair(self):
        """Two kernels of the unfused plan, the second reading the first."""
        owner = {n: k["name"] for k in self.unfused for n in k["nodes"]}
        for kernel in self.unfused:
            for value in kernel["inputs"]:
                if value in owner and owner[value] != kernel["name"]:
                    return owner[value], kernel["name"]
        raise AssertionError("no two kernels of the unfused plan read one another")

    def test_a_merge_is_priced_as_the_same_grouping_priced_from_scratch(self):
        a, b = self.adjacent_pair()
        response = self.what_if([{"op": "merge", "kernels": [a, b]}])

        self.assertEqual(response.status_code, 200)
        answer = response.json()
        self.assertIsNone(answer["refused"])
        self.assertEqual(answer["now"]["kernels"], len(self.unfused) - 1)
        self.assertEqual(answer["base"]["kernels"], len(self.unfused))
        self.assertAlmostEqual(answer["now"]["proj_us"], from_scratch_total(answer["kernels"]),
                               places=3)
        edit = answer["edits"][0]
        self.assertEqual(edit["describe"], f"merge {a}, {b}")
        self.assertEqual({k["name"] for k in edit["removed"]}, {a, b})
        self.assertEqual(len(edit["added"]), 1)
        merged = edit["added"][0]
        self.assertTrue({"sol_us", "proj_us", "limiter", "occupancy", "waves"} <= set(merged))
        # One launch less: the explanation's launch cause says so, and its causes add up to
        # the change of the plan's total.
        causes = {c["cause"]: c["delta_us"] for c in edit["explanation"]["causes"]}
        self.assertLess(causes["launch"], 0)
        self.assertAlmostEqual(sum(causes.values()), edit["after_us"] - edit["before_us"],
                               places=3)

    def test_a_merge_across_a_kernel_between_is_refused_with_the_cycle_and_changes_nothing(self):
        owner = {n: k["name"] for k in self.unfused for n in k["nodes"]}
        # The first kernel and a kernel that reads it only through another one.
        first = self.unfused[0]["name"]
        readers = {k["name"] for k in self.unfused
                   if any(owner.get(v) == first for v in k["inputs"])}
        later = next(k["name"] for k in self.unfused
                     if k["name"] not in readers | {first}
                     and any(owner.get(v) in readers for v in k["inputs"]))
        response = self.what_if([{"op": "merge", "kernels": [first, later]}])

        answer = response.json()
        self.assertEqual(response.status_code, 200)
        self.assertEqual(answer["refused"]["index"], 0)
        self.assertIn("makes a cycle through", answer["refused"]["reason"])
        self.assertEqual(answer["edits"], [])
        self.assertEqual(answer["now"], answer["base"])

    def test_a_shorter_list_is_an_undo_and_the_same_list_again_a_redo(self):
        a, b = self.adjacent_pair()
        merged = self.what_if([{"op": "merge", "kernels": [a, b]}]).json()
        undone = self.what_if([]).json()
        redone = self.what_if([{"op": "merge", "kernels": [a, b]}]).json()

        self.assertEqual(undone["now"], undone["base"])
        self.assertEqual(redone["now"], merged["now"])
        self.assertEqual(redone["kernels"], merged["kernels"])

    def test_a_fresh_process_replays_the_list_to_the_same_answer(self):
        a, b = self.adjacent_pair()
        edits = [{"op": "merge", "kernels": [a, b]}, {"op": "split", "kernel": "loop.0"}]
        first = self.what_if(edits).json()
        plan_edits._sessions.clear()
        again = self.what_if(edits).json()

        self.assertEqual(again["now"], first["now"])
        self.assertEqual(again["kernels"], first["kernels"])

    def test_bad_edits_are_refused_saying_which_and_why(self):
        response = self.what_if([{"op": "merge", "kernels": ["loop.0", 3]}])
        self.assertEqual(response.status_code, 400)
        self.assertIn("edit 1", response.json()["error"])
        self.assertIn("kernels", response.json()["error"])

        url = reverse("explorer-whatif", args=[self.shown.pk, "h100", "unfused"])
        response = self.client.post(url, "not json", content_type="application/json")
        self.assertEqual(response.status_code, 400)
        self.assertIn("not JSON", response.json()["error"])

        response = self.what_if([], strategy="nope")
        self.assertEqual(response.status_code, 404)
        self.assertIn("no h100/nope plan", response.json()["error"])

    def test_the_cuda_of_an_edited_kernel_is_one_request_away(self):
        a, b = self.adjacent_pair()
        edits = [{"op": "merge", "kernels": [a, b]}]
        merged = self.what_if(edits).json()["edits"][0]["added"][0]["name"]
        url = reverse("explorer-whatif-cuda", args=[self.shown.pk, "h100", "unfused"])
        response = self.post(url, {"edits": edits, "kernel": merged})

        self.assertEqual(response.status_code, 200)
        code = response.json()
        self.assertIn("__global__", code["source"])
        self.assertIn(code["function"], code["source"])

    def test_the_owner_saves_onto_the_run(self):
        a, b = self.adjacent_pair()
        url = reverse("explorer-save-plan", args=[self.shown.pk])
        with self.captureOnCommitCallbacks(execute=True):
            response = self.post(url, {"name": "merged", "device": "h100",
                                       "strategy": "unfused",
                                       "edits": [{"op": "merge", "kernels": [a, b]}]},
                                 self.owner)

        self.assertEqual(response.status_code, 201, response.content)
        answer = response.json()
        self.assertEqual(answer["run"], self.shown.pk)
        self.assertFalse(answer["own_run"])
        self.assertEqual(answer["url"], f"/r/{self.shown.pk}#h100/custom:merged")
        saved = SavedPlan.objects.get(run=self.shown)
        self.assertEqual((saved.device, saved.strategy, saved.author), ("h100", "custom:merged",
                                                                       self.owner))
        self.assertEqual(len(saved.plan["kernels"]), len(self.unfused) - 1)
        self.assertEqual(saved.plan["edits"], [{"op": "merge", "kernels": [a, b]}])
        self.assertEqual(self.enqueued, [saved.pk])
        # The same name again is refused.
        again = self.post(url, {"name": "merged", "device": "h100", "strategy": "unfused",
                                "edits": []})
        self.assertEqual(again.status_code, 409)
        self.assertIn("named merged", again.json()["error"])

    def test_a_strangers_save_on_a_public_run_makes_a_run_of_their_own(self):
        url = reverse("explorer-save-plan", args=[self.shown.pk])
        original = runs.enqueue_compile
        runs.enqueue_compile = lambda pk: True
        self.addCleanup(setattr, runs, "enqueue_compile", original)
        response = self.post(url, {"name": "mine", "device": "h100", "strategy": "xla",
                                   "edits": []}, self.stranger)

        self.assertEqual(response.status_code, 201, response.content)
        answer = response.json()
        self.assertTrue(answer["own_run"])
        theirs = Run.objects.get(pk=answer["run"])
        self.assertEqual(theirs.owner, self.stranger)
        self.assertEqual(theirs.visibility, Run.PRIVATE)
        self.assertEqual(theirs.graph_sha256, self.shown.graph_sha256)
        self.assertFalse(self.shown.saved_plans.exists())
        self.assertEqual([p.name for p in theirs.saved_plans.all()], ["mine"])

    def test_an_anonymous_visitor_edits_a_public_run_but_is_sent_to_log_in_to_save(self):
        a, b = self.adjacent_pair()
        url = reverse("explorer-whatif", args=[self.shown.pk, "h100", "unfused"])
        response = self.client.post(url, json.dumps({"edits": [{"op": "merge",
                                                                "kernels": [a, b]}]}),
                                    content_type="application/json")
        self.assertEqual(response.status_code, 200)
        save = reverse("explorer-save-plan", args=[self.shown.pk])
        response = self.client.post(save, "{}", content_type="application/json")
        self.assertEqual(response.status_code, 302)
        self.assertIn("/accounts/login/", response["Location"])

    def test_a_stranger_cannot_edit_a_private_run(self):
        private = self.make_done_run("p" * 22, Run.PRIVATE)
        url = reverse("explorer-whatif", args=[private.pk, "h100", "xla"])
        self.assertEqual(self.post(url, {"edits": []}, self.stranger).status_code, 404)

    def test_a_plan_file_is_exported_and_saved_back_and_a_bad_name_is_refused(self):
        url = reverse("explorer-plan-file", args=[self.shown.pk, "h100", "xla"])
        self.client.force_login(self.owner)
        response = self.client.get(url)

        self.assertEqual(response.status_code, 200)
        self.assertIn("attachment", response["Content-Disposition"])
        made = json.loads(response.content)
        graph = import_graph(SOFTMAX.read_bytes(), SOFTMAX.name)
        self.assertEqual(made["graph"]["digest"], graph_digest(graph))
        xla = self.shown.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
        self.assertEqual([k["nodes"] for k in made["kernels"]], [k["nodes"] for k in xla])

        save = reverse("explorer-save-plan", args=[self.shown.pk])
        response = self.post(save, {"name": "bad name!", "plan": made})
        self.assertEqual(response.status_code, 400)
        self.assertIn("a plan's name is", response.json()["error"])
        response = self.post(save, {"name": "xla-copy", "plan": made})
        self.assertEqual(response.status_code, 201)
        self.assertEqual(SavedPlan.objects.get(run=self.shown).device, "h100")


class SavedPlanPagesTests(AccessTestCase):
    """A run whose artifact holds a saved plan shows it wherever the strategies' plans show."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        artifact = json.loads(json.dumps(softmax_artifact()))
        for device, result in artifact["devices"].items():
            result["strategies"]["custom:mine"] = json.loads(json.dumps(
                result["strategies"]["xla"]))
            result["strategies"]["custom:mine"]["cost_model"] = None
        for key, source in list(artifact["sources"].items()):
            device, strategy, kernel = key.split("/", 2)
            if strategy == "xla":
                artifact["sources"][f"{device}/custom:mine/{kernel}"] = source
        cls.shown = cls.make_done_run("s" * 22, Run.TEAM, artifact=artifact)
        SavedPlan.objects.create(run=cls.shown, device="h100", name="mine", plan={},
                                 status=SavedPlan.DONE, author=cls.owner)
        cls.failed = SavedPlan.objects.create(
            run=cls.shown, device="h100", name="broken", plan={}, status=SavedPlan.FAILED,
            error="custom:broken: node exp.3 is in no kernel", author=cls.teammate)

    def test_the_run_page_lists_it_in_the_comparison_and_says_which_plans_failed(self):
        self.client.force_login(self.teammate)
        html = self.client.get(reverse("explorer-run", args=[self.shown.pk])).content.decode()

        self.assertIn("custom:mine", html)
        self.assertIn("custom:broken: node exp.3 is in no kernel", html)

    def test_its_panel_and_kernel_pages_open(self):
        self.client.force_login(self.owner)
        panel = self.client.get(reverse("explorer-plan-panel",
                                        args=[self.shown.pk, "h100", "custom:mine"]))
        self.assertEqual(panel.status_code, 200)
        self.assertIn("a plan made by hand", panel.content.decode())
        kernel = self.shown.artifact["devices"]["h100"]["strategies"]["custom:mine"]["kernels"][0]
        page = self.client.get(reverse("explorer-kernel", args=[self.shown.pk, "h100",
                                                                "custom:mine", kernel["name"]]))
        self.assertEqual(page.status_code, 200)

    def test_a_teammate_deletes_it_and_a_stranger_may_not(self):
        url = reverse("explorer-delete-plan", args=[self.shown.pk, self.failed.pk])
        self.client.force_login(self.stranger)
        self.assertEqual(self.client.post(url).status_code, 404)   # a team run: not theirs
        self.client.force_login(self.teammate)
        self.assertEqual(self.client.post(url).status_code, 200)
        self.assertFalse(SavedPlan.objects.filter(pk=self.failed.pk).exists())


class PlanFileRefusalTests(AccessTestCase):
    def test_a_plan_file_of_another_graph_is_refused_at_once_naming_both_graphs(self):
        shown = self.make_done_run("g" * 22, Run.PRIVATE)
        made = {"format": "fusion-explorer-plan", "version": 1,
                "graph": {"name": "jit_other", "nodes": 3, "digest": "ab" * 32},
                "device": "h100", "kernels": [{"name": "loop.0", "nodes": ["x"]}]}
        self.client.force_login(self.owner)
        response = self.client.post(reverse("explorer-save-plan", args=[shown.pk]),
                                    json.dumps({"name": "other", "plan": made}),
                                    content_type="application/json")

        self.assertEqual(response.status_code, 400)
        self.assertIn("the plan is for jit_other (digest abababababab)", response.json()["error"])
        self.assertFalse(SavedPlan.objects.exists())


class TuneViewTests(AccessTestCase):
    """The run page's Tune form and card (explorer/plan_edits.py tune_view, views.py
    _tuning_context)."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.shown = cls.make_done_run("n" * 22, Run.PUBLIC)

    def setUp(self):
        self.enqueued = []
        original = runs.enqueue_tune
        runs.enqueue_tune = self.enqueued.append
        self.addCleanup(setattr, runs, "enqueue_tune", original)

    def test_the_owner_tunes_and_a_second_request_meets_the_first(self):
        self.client.force_login(self.owner)
        url = reverse("explorer-tune", args=[self.shown.pk])
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post(url, {"device": "h100", "model": "projected",
                                              "search": "anneal", "budget_s": "12"},
                                        follow=True)
        job = TuneJob.objects.get(run=self.shown)
        self.assertEqual((job.device, job.budget_s, job.requested_by), ("h100", 12.0, self.owner))
        self.assertEqual(self.enqueued, [job.pk])
        self.assertContains(response, "Tuning the h100 plans for 12 s")
        again = self.client.post(url, {"device": "h100", "budget_s": "5"}, follow=True)
        self.assertContains(again, "already under way")
        self.assertEqual(TuneJob.objects.count(), 1)

    def test_a_bad_budget_says_so_and_a_stranger_may_not_tune(self):
        self.client.force_login(self.owner)
        url = reverse("explorer-tune", args=[self.shown.pk])
        response = self.client.post(url, {"device": "h100", "budget_s": "9000"}, follow=True)
        self.assertContains(response, "Not tuned: the budget is above 0 and at most 600 s")
        self.client.force_login(self.stranger)
        self.assertEqual(self.client.post(url, {"device": "h100"}).status_code, 403)
        self.assertFalse(TuneJob.objects.exists())

    def test_a_done_tuning_shows_its_result_and_chart(self):
        result = {"model": "projected", "search": "anneal", "seed": 0, "device": "h100",
                  "runtime": "graph", "starts": {"xla": 10.0, "cost": 8.0},
                  "best": {"score_us": 7.5, "start": "cost", "gain_us": 0.5, "kernels": 2,
                           "moves": [{"edit": "merge loop.0, loop.1", "gain_us": 0.5}]},
                  "top": [{"rank": 1, "score_us": 7.5, "start": "cost", "kernels": 2,
                           "moves": 1, "plan_id": "abc", "projected_us": 7.5, "sol_us": 1.0,
                           "disagreement": 6.5, "disagreement_between": "projected and sol"}],
                  "measure": [{"rank": 1, "why": "among the 1 best by the projected model"}],
                  "history": [[0, 0.0, 8.0], [40, 0.2, 7.5]], "evaluations": 100,
                  "refused": 3, "seconds": 0.5, "ms_per_evaluation": 5.0,
                  "first_improvement_s": 0.2}
        TuneJob.objects.create(run=self.shown, device="h100", status=TuneJob.DONE,
                               result=result)
        self.client.force_login(self.teammate)
        html = self.client.get(reverse("explorer-run", args=[self.shown.pk])).content.decode()
        self.assertIn("7.50 µs</strong> under the projected model", html)
        self.assertIn("Gain over the best start (projected model)", html)
        self.assertIn('class="chart__line"', html)
        self.assertIn("#1\n      (among the 1 best by the projected model)", html)
        # A teammate of a public run without its team may see it but not tune it.
        self.assertNotIn('id="tune-form"', html)
