"""A plan's panel (explorer-plan-panel), which the run page loads when its tab is opened, and its
decisions as JSON (explorer-plan-decisions), which the decision filter searches."""
import json

from django.urls import reverse

from explorer.models import Run
from tests.explorer.access import AccessTestCase


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

    def test_it_gives_the_plans_kernels_dag_and_decisions(self):
        response = self.get(self.owner)

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, f"Plan — xla ({len(self.xla['kernels'])} kernels)")
        for kernel in self.xla["kernels"]:
            url = reverse("explorer-kernel", args=[self.done.pk, "h100", "xla", kernel["name"]])
            self.assertContains(response, f'href="{url}"')
        self.assertContains(response, self.xla["decisions"][0]["reason"])
        html = response.content.decode()
        script = html.index("<script", html.index("data-panel-figures"))
        figures = json.loads(html[html.index(">", script) + 1:html.index("</script>", script)])
        self.assertEqual(set(figures), {"h100/xla/time"})  # the limiter colouring on request
        nodes = [trace for trace in figures["h100/xla/time"]["data"] if trace["mode"] == "markers"]
        self.assertEqual(len(nodes[0]["x"]), len(self.xla["kernels"]))

    def test_the_dag_coloured_by_limiter_comes_on_request_with_a_trace_per_limiter(self):
        url = reverse("explorer-plan-dag", args=[self.done.pk, "h100", "xla", "limiter"])
        figure = self.get(self.owner, url).json()

        traces = {trace["name"]: trace for trace in figure["data"] if trace["mode"] == "markers"}
        limiters = {kernel["limiter"] or "none" for kernel in self.xla["kernels"]}
        self.assertEqual(set(traces), limiters)
        for name, trace in traces.items():
            expected = sorted(k["name"] for k in self.xla["kernels"]
                              if (k["limiter"] or "none") == name)
            self.assertEqual(sorted(data[0] for data in trace["customdata"]), expected)

    def test_an_unknown_colouring_is_a_404_and_a_stranger_gets_no_dag(self):
        for user, colouring in ((self.owner, "rainbow"), (self.stranger, "time")):
            url = reverse("explorer-plan-dag", args=[self.done.pk, "h100", "xla", colouring])
            self.assertEqual(self.get(user, url).status_code, 404)

    def test_the_decisions_endpoint_lists_every_decision_in_order(self):
        response = self.get(self.owner, self.decisions_url)

        self.assertEqual(response.status_code, 200)
        rows = response.json()["decisions"]
        self.assertEqual([(row[0], row[2]) for row in rows],
                         [(d["action"], d["reason"]) for d in self.xla["decisions"]])

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
