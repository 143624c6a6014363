"""The kernel page at /r/<id>/<device>/<strategy>/<kernel> (explorer-kernel)."""
import json

from django.urls import reverse

from compiler.pipeline import compile_graph
from explorer.models import KernelSource, Run
from tests.explorer.access import DATA, AccessTestCase

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
        self.assertContains(response, "Used 32 registers")

    def test_it_lists_the_candidate_plans_with_the_emitted_one_marked(self):
        response = self.get(self.owner)
        kernel = self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        candidates = KernelSource.objects.get(run=self.done, device="h100", strategy="cost",
                                              kernel=kernel["name"]).candidate_plans

        self.assertTrue(candidates)
        self.assertContains(response, f"Candidate CodeGen plans ({len(candidates)})")
        self.assertContains(response, 'class="is-chosen"', count=1)

    def test_it_embeds_pipe_occupancy_and_roofline_charts(self):
        figures = self.embedded(self.get(self.owner), "figures")

        self.assertEqual(set(figures), {"pipes", "roofline", "occupancy/registers",
                                        "occupancy/block_size", "occupancy/shared"})
        self.assertEqual(figures["roofline"]["layout"]["xaxis"]["type"], "log")

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
