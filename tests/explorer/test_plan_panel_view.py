"""A plan's panel (explorer-plan-panel), which the run page loads when its tab is opened, and its
decisions as JSON (explorer-plan-decisions), which the decision filter searches."""
from unittest import mock

from django.urls import reverse

from explorer import presenters
from explorer.models import Run
from explorer.presenters import sol_ratio
from tests.explorer.access import AccessTestCase, softmax_artifact
from tests.explorer.outliers import before_cost_models, with_outliers


class PlanPanelViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.xla = cls.done.artifact["devices"]["h100"]["strategies"]["xla"]
        cls.url = reverse("explorer-plan-panel", args=[cls.done.pk, "h100", "xla"])
        cls.decisions_url = reverse("explorer-plan-decisions", args=[cls.done.pk, "h100", "xla"])

    def get(self, user, url=None):
        self.client.force_login(user)
        return self.client.get(url or self.url)

    def test_a_kernel_whose_grid_leaves_sms_idle_says_how_many_it_uses(self):
        html = self.get(self.owner).content.decode()

        idle = [k for k in self.xla["kernels"] if k.get("projected")
                and k["projected"]["sms_used"] < 132]
        self.assertTrue(idle)  # softmax's kernels are small: a few blocks each
        for kernel in idle:
            self.assertIn(f"on {kernel['projected']['sms_used']} of 132 SMs", html)

    def test_it_gives_the_plans_kernels_and_decisions(self):
        response = self.get(self.owner)

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, f"Plan — xla ({len(self.xla['kernels'])} kernels)")
        for kernel in self.xla["kernels"]:
            url = reverse("explorer-kernel", args=[self.done.pk, "h100", "xla", kernel["name"]])
            self.assertContains(response, f'href="{url}"')
        self.assertContains(response, self.xla["decisions"][0]["reason"])

    def panel(self, artifact: dict, run_id: str, strategy: str = "xla"):
        run = self.make_done_run(run_id, artifact=artifact)
        url = reverse("explorer-plan-panel", args=[run.pk, "h100", strategy])
        return run, self.get(self.owner, url)

    def test_it_says_rules_decided_the_xla_plan_so_its_decisions_have_no_gain(self):
        response = self.get(self.owner)

        self.assertContains(response, "Fusions decided by <strong>rules</strong> — XLA&#x27;s "
                                      "fusion rules\n    — not by a cost model, so decisions "
                                      "carry no gain.")

    def test_the_cost_plan_names_its_cost_model_and_what_a_gain_means(self):
        url = reverse("explorer-plan-panel", args=[self.done.pk, "h100", "cost"])
        text = " ".join(self.get(self.owner, url).content.decode().split())

        self.assertIn("Fusions decided by the <strong>projected model</strong>: each candidate "
                      "kernel is priced by the projected time of its best CodeGen plan. A gain "
                      "is the time a merge saves under that model", text)

    def test_every_kernel_shows_its_projected_time_over_its_speed_of_light(self):
        response = self.get(self.owner)

        self.assertContains(response, "× SOL</th>")
        for kernel in self.xla["kernels"]:
            self.assertContains(response, f'<td class="num kernels__ratio" data-value='
                                          f'"{kernel["proj_over_sol"]}">'
                                          f'{sol_ratio(kernel["proj_over_sol"])}</td>', html=True)
        self.assertNotContains(response, "is-outlier")
        self.assertNotContains(response, "speed of light</strong>")

    def test_outliers_are_summarised_worst_first_linked_and_flagged_in_the_table(self):
        artifact = with_outliers(softmax_artifact(), "h100", "xla", [40.0, 220.0])
        run, response = self.panel(artifact, "o" * 22)
        kernels = artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
        html = response.content.decode()
        text = " ".join(html.split())

        self.assertIn("2 kernels project ≥ 20× their speed of light", text)
        start = html.index('<details class="card outliers"')
        summary = html[start:html.index("</details>", start)]
        links = [reverse("explorer-kernel", args=[run.pk, "h100", "xla", kernels[i]["name"]])
                 for i in (1, 0)]
        self.assertLess(summary.index(links[0]), summary.index(links[1]))
        self.assertIn(kernels[1]["outlier_reason"], summary)
        self.assertIn("220×", summary)
        self.assertNotIn("outliers__more", summary)
        self.assertContains(response, 'class="is-outlier"', count=2)
        self.assertContains(response, f'title="{kernels[1]["outlier_reason"]}"')
        self.assertContains(response, 'aria-label="outlier">⚠</span>', count=2)

    def test_a_long_list_of_outliers_ends_with_how_many_more_there_are(self):
        artifact = with_outliers(softmax_artifact(), "h100", "unfused", [30.0, 50.0, 40.0])
        with mock.patch.object(presenters, "OUTLIERS_LISTED", 2):
            run, response = self.panel(artifact, "o" * 22, "unfused")
        kernels = artifact["devices"]["h100"]["strategies"]["unfused"]["kernels"]
        text = " ".join(response.content.decode().split())

        self.assertIn("3 kernels project ≥ 20× their speed of light", text)
        self.assertIn("and 1 more, marked ⚠ in the table.", text)
        start = text.index('class="card outliers"')
        summary = text[start:text.index("</details>", start)]
        self.assertNotIn(kernels[0]["outlier_reason"], summary)  # the lowest ratio
        self.assertContains(response, 'class="is-outlier"', count=3)

    def test_one_outlier_reads_in_the_singular(self):
        artifact = with_outliers(softmax_artifact(), "h100", "xla", [25.0])
        _, response = self.panel(artifact, "o" * 22)

        self.assertIn("1 kernel projects ≥ 20× its speed of light",
                      " ".join(response.content.decode().split()))

    def test_a_plan_stored_before_cost_models_shows_no_ratios_outliers_or_decider(self):
        _, response = self.panel(before_cost_models(softmax_artifact()), "o" * 22, "cost")

        self.assertContains(response, "Plan — cost (1 kernels)")
        for absent in ("× SOL", "kernels__ratio", "outliers", "Fusions decided by"):
            self.assertNotContains(response, absent)

    def test_the_decisions_endpoint_lists_every_decision_in_order(self):
        response = self.get(self.owner, self.decisions_url)

        self.assertEqual(response.status_code, 200)
        rows = response.json()["decisions"]
        self.assertEqual([(row[0], row[2]) for row in rows],
                         [(d["action"], d["reason"]) for d in self.xla["decisions"]])

    def test_each_decision_gives_the_kernels_of_its_nodes_on_the_page_and_as_json(self):
        kernel_of = {node: kernel["name"] for kernel in self.xla["kernels"]
                     for node in kernel["nodes"]}
        fused = next(d for d in self.xla["decisions"] if d["action"] == "fuse"
                     and d["subject"].split()[0] in kernel_of)
        kernel = kernel_of[fused["subject"].split()[0]]

        rows = self.get(self.owner, self.decisions_url).json()["decisions"]
        self.assertIn(kernel, rows[self.xla["decisions"].index(fused)][4])
        self.assertContains(self.get(self.owner), f"<td><code>{kernel}</code></td>", html=True)

    def test_a_second_request_is_served_the_same_panel(self):
        first = self.get(self.owner).content
        self.assertEqual(self.get(self.teammate).content, first)

    def test_a_teammate_sees_a_team_runs_panel(self):
        self.assertEqual(self.get(self.teammate).status_code, 200)
        self.assertEqual(self.get(self.teammate, self.decisions_url).status_code, 200)

    def test_a_stranger_gets_a_404(self):
        self.assertEqual(self.get(self.stranger).status_code, 404)
        self.assertEqual(self.get(self.stranger, self.decisions_url).status_code, 404)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        self.assertEqual(self.client.get(self.url).status_code, 302)

    def test_an_unknown_strategy_or_device_is_a_404(self):
        for device, strategy in (("h100", "fastest"), ("v100", "xla")):
            url = reverse("explorer-plan-panel", args=[self.done.pk, device, strategy])
            self.assertEqual(self.get(self.owner, url).status_code, 404)

    def test_a_run_still_compiling_has_no_panels(self):
        queued = self.make_run("q" * 22)
        url = reverse("explorer-plan-panel", args=[queued.pk, "h100", "xla"])

        self.assertEqual(self.get(self.owner, url).status_code, 404)
