"""The kernel page at /r/<id>/<device>/<strategy>/<kernel> (explorer-kernel)."""
import json
import re

from django.urls import reverse

from compiler.stages.pipeline import compile_graph
from explorer.models import KernelSource, Run
from explorer.presenters import sol_ratio
from tests.explorer.access import DATA, AccessTestCase, softmax_artifact
from tests.explorer.outliers import before_cost_models, with_outliers

KERNEL = ("h100", "cost", "stitch-regional.0")   # softmax.hlo's one stitched kernel


class KernelViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("explorer-kernel", args=[cls.done.pk, *KERNEL])
        cls.source = KernelSource.objects.get(run=cls.done, device="h100", strategy="cost",
                                              kernel="stitch-regional.0")

    def get(self, user, url=None):
        self.client.force_login(user)
        return self.client.get(url or self.url)

    def embedded(self, response, script_id) -> dict:
        html = response.content.decode()
        start = html.index(f'<script id="{script_id}" type="application/json">')
        return json.loads(html[html.index(">", start) + 1:html.index("</script>", start)])

    def test_it_shows_the_owner_the_cuda_source_line_by_line(self):
        response = self.get(self.owner)

        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "explorer/kernel.html")
        self.assertContains(response, self.source.function)
        lines = self.source.source.splitlines()
        self.assertContains(response, f'id="L{len(lines)}"')

    def test_lines_name_their_graph_nodes_and_nodes_their_lines(self):
        response = self.get(self.owner)
        line, nodes = next(iter(self.source.line_nodes.items()))

        self.assertRegex(response.content.decode(),
                         rf'id="L{line}" data-line="{line}"\s+data-nodes="{" ".join(nodes)}"')
        node_lines = self.embedded(response, "node-lines")
        self.assertIn(int(line), node_lines[nodes[0]])
        for node in {node for nodes in self.source.line_nodes.values() for node in nodes}:
            self.assertContains(response, f'data-node="{node}"')

    def test_it_shows_the_ptx_and_ptxas_resources(self):
        response = self.get(self.owner)

        self.assertContains(response, ".target sm_90")
        self.assertContains(response, "<th>registers</th>", html=True)
        # ptxas' own log, beside the count read from it (whatever plan the kernel has now)
        registers = self.source.resources["registers"]
        self.assertGreater(registers, 0)
        self.assertContains(response, f"Used {registers} registers")

    def test_it_lists_the_candidate_plans_with_the_emitted_one_marked(self):
        response = self.get(self.owner)
        kernel = self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        candidates = KernelSource.objects.get(run=self.done, device="h100", strategy="cost",
                                              kernel=kernel["name"]).candidate_plans

        self.assertTrue(candidates)
        self.assertContains(response, f"Candidate CodeGen plans ({len(candidates)})")
        self.assertContains(response, 'class="is-chosen"', count=1)

    def text(self, response) -> str:
        return " ".join(response.content.decode().split())

    def test_it_shows_the_ratio_to_the_speed_of_light_and_the_schedule(self):
        kernel = self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        text = self.text(self.get(self.owner))

        ratio = sol_ratio(kernel["proj_over_sol"])
        self.assertIn(f'<span class="stat__label">projected / SOL</span>{ratio}', text)
        self.assertIn(f"Projected under the <strong>{kernel['schedule']}</strong> schedule "
                      f"(the emitted CodeGen plan's): {ratio} its speed of light", text)
        self.assertNotIn("Outlier", text)

    def test_an_outlier_says_why_over_its_projected_breakdown(self):
        artifact = with_outliers(softmax_artifact(), "h100", "cost", [220.0])
        kernel = artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        run = self.make_done_run("o" * 22, artifact=artifact)
        text = self.text(self.get(self.owner, reverse("explorer-kernel", args=[run.pk, *KERNEL])))

        self.assertIn('<div class="stat stat--outlier"', text)
        self.assertIn('220× <a href="#projected" class="outlier-mark" >⚠ outlier</a>', text)
        section = text[text.index('<section id="projected">'):]
        self.assertIn(f"<strong>⚠ Outlier:</strong> {kernel['outlier_reason']}",
                      section[:section.index('<dl class="breakdown">')])

    def test_a_kernel_stored_before_the_ratio_was_recorded_shows_none(self):
        run = self.make_done_run("o" * 22, artifact=before_cost_models(softmax_artifact()))
        response = self.get(self.owner, reverse("explorer-kernel", args=[run.pk, *KERNEL]))

        self.assertContains(response, "Projected breakdown")
        self.assertNotContains(response, "projected / SOL")
        self.assertNotContains(response, "its speed of light")

    def test_it_embeds_pipe_occupancy_and_roofline_charts(self):
        html = self.get(self.owner).content.decode()

        self.assertEqual(set(re.findall(r'data-chart="([^"]+)"><svg', html)),
                         {"pipes", "roofline", "occupancy/registers", "occupancy/block_size",
                          "occupancy/shared"})

    def test_it_says_the_kernel_was_not_measured_and_why(self):
        # why: no GPU worker online, or (no Redis in these tests) their state is unknown
        self.assertContains(self.get(self.owner), "Not measured — ")

    def test_a_teammate_sees_a_team_runs_kernel(self):
        self.assertEqual(self.get(self.teammate).status_code, 200)

    def test_a_stranger_gets_a_404(self):
        self.assertEqual(self.get(self.stranger).status_code, 404)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.client.get(self.url)

        self.assertRedirects(response, f"{reverse('login')}?next={self.url}",
                             fetch_redirect_response=False)

    def test_an_unknown_kernel_is_a_404(self):
        url = reverse("explorer-kernel", args=[self.done.pk, "h100", "cost", "loop.99"])

        self.assertEqual(self.get(self.owner, url).status_code, 404)

    def test_a_library_call_has_no_source_and_says_so(self):
        hlo = DATA / "hlo" / "attention_block.hlo"
        artifact = compile_graph(hlo.read_bytes(), hlo.name, ["h100"], ["cost"])
        artifact.pop("sources")
        run = self.make_run("a" * 22, status=Run.DONE, artifact=artifact)
        url = reverse("explorer-kernel", args=[run.pk, "h100", "cost", "library.0"])
        response = self.get(self.owner, url)

        self.assertContains(response, "A library call")
        self.assertContains(response, "No candidate plans")
