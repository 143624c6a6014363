"""A compiling run's first answer: the plans explored so far on its page (/r/<id>, and the part
the page fetches again, /r/<id>/preview, explorer-run-preview), what needs nvcc marked pending,
never taken for the results: not by the API, not once the run failed."""
import re
from functools import cache

from django.urls import reverse

from compiler.stages.pipeline import compile_graph
from explorer.models import Run, RunArtifact
from tests.explorer.access import DEVICES, SOFTMAX, STRATEGIES, AccessTestCase


@cache
def softmax_previews() -> tuple[dict, ...]:
    """Every preview compile_graph hands out for softmax.hlo, in order (one per plan)."""
    previews = []
    compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, DEVICES, STRATEGIES,
                  explored=previews.append)
    return tuple(previews)


# A plan's row in the comparison table, and a figure waiting for the build.
PLAN_ROW = re.compile(r'<tr data-strategy="([\w.-]+)"')
PENDING = '<span class="pending">pending</span>'


class RunPreviewViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.compiling = cls.make_run("c" * 22, Run.TEAM, status=Run.RUNNING, stage="explore",
                                     claim_token="t" * 32)
        # Two of its eight plans explored: the A100's unfused and xla plans.
        Run.store_preview(cls.compiling.pk, "t" * 32, 60, softmax_previews()[1])
        cls.url = reverse("explorer-run", args=[cls.compiling.pk])
        cls.preview_url = reverse("explorer-run-preview", args=[cls.compiling.pk])

    def get(self, user, url):
        self.client.force_login(user)
        return self.client.get(url)

    def test_a_compiling_run_shows_the_plans_explored_so_far_beside_its_progress(self):
        response = self.get(self.owner, self.url)

        self.assertContains(response, 'id="progress"')
        self.assertContains(response, "First answer — not the final")
        self.assertContains(response, "2 of 8 plans")
        self.assertEqual(PLAN_ROW.findall(response.content.decode()), ["unfused", "xla"])
        self.assertContains(response, "Strategy comparison — NVIDIA A100")
        self.assertNotContains(response, "Strategy comparison — NVIDIA H100")

    def test_the_plans_not_explored_yet_have_a_row_that_says_so(self):
        response = self.get(self.owner, self.url)

        for strategy in ("stitch", "cost"):
            self.assertContains(response, f'data-exploring="{strategy}"')
        self.assertContains(response, '<span class="pending">exploring</span>', count=2)

    def test_what_needs_nvcc_is_marked_pending_and_the_prices_as_explored(self):
        response = self.get(self.owner, self.url)
        page = response.content.decode()
        # The first panel is the fastest plan explored so far: its kernels' registers,
        # occupancy and waves wait for ptxas.
        fastest = min(softmax_previews()[1]["devices"]["a100"]["strategies"].values(),
                      key=lambda plan: plan["total"]["proj_us"])
        generated = [k for k in fastest["kernels"] if k["kind"] != "library"]

        self.assertTrue(generated)
        # ...and the note above the preview says what "pending" means.
        self.assertEqual(page.count(PENDING), 3 * len(generated) + 1)
        # The estimate is in the pending figure's title.
        self.assertRegex(page, r"[\d.]+ % with estimated registers; ptxas' registers decide it")
        # The comparison's two projected columns and the kernel table's say they are explored.
        self.assertEqual(page.count('class="explored-mark"'), 3)

    def test_the_preview_links_no_kernel_page_export_or_fusion_view(self):
        response = self.get(self.owner, self.url)
        kernel = softmax_previews()[1]["devices"]["a100"]["strategies"]["xla"]["kernels"][0]

        self.assertNotContains(response, reverse(
            "explorer-kernel", args=[self.compiling.pk, "a100", "xla", kernel["name"]]))
        self.assertNotContains(response, "export.json")
        self.assertNotContains(response, 'id="fusion-graph"')
        self.assertNotContains(response, "Why ")

    def test_the_preview_part_is_what_the_page_fetches_again_as_plans_are_explored(self):
        response = self.get(self.owner, self.preview_url)

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, 'data-plans="2" data-of="8"')
        self.assertEqual(PLAN_ROW.findall(response.content.decode()), ["unfused", "xla"])
        Run.store_preview(self.compiling.pk, "t" * 32, 60, softmax_previews()[-1])
        later = self.client.get(self.preview_url).content.decode()
        self.assertIn('data-plans="8" data-of="8"', later)
        self.assertEqual(PLAN_ROW.findall(later), STRATEGIES * 2)
        self.assertNotIn("data-exploring", later)

    def test_another_plans_panel_and_decisions_load_from_the_preview(self):
        panel = self.get(self.owner, reverse("explorer-plan-panel",
                                             args=[self.compiling.pk, "a100", "unfused"]))
        decisions = self.client.get(reverse("explorer-plan-decisions",
                                            args=[self.compiling.pk, "a100", "xla"]))
        not_yet = self.client.get(reverse("explorer-plan-panel",
                                          args=[self.compiling.pk, "a100", "cost"]))

        self.assertContains(panel, PENDING)
        self.assertContains(panel, "come with the final")
        expected = softmax_previews()[1]["devices"]["a100"]["strategies"]["xla"]["decisions"]
        self.assertEqual(len(decisions.json()["decisions"]), len(expected))
        self.assertEqual(not_yet.status_code, 404)

    def test_a_run_with_nothing_explored_yet_has_an_empty_hidden_preview(self):
        early = self.make_run("e" * 22, status=Run.RUNNING, stage="import")
        response = self.get(self.owner, reverse("explorer-run-preview", args=[early.pk]))

        self.assertContains(response, 'data-plans="0"')
        self.assertContains(response, " hidden>")
        self.assertNotContains(response, "Strategy comparison")

    def test_a_failed_run_shows_no_preview_even_if_one_was_left_behind(self):
        failed = self.make_run("f" * 22, status=Run.FAILED, error="a bug", error_stage="build")
        RunArtifact.put(failed.pk, {**softmax_previews()[-1], "preview": True})
        response = self.get(self.owner, reverse("explorer-run", args=[failed.pk]))

        self.assertContains(response, "build: a bug")
        self.assertNotContains(response, "First answer")
        self.assertNotContains(response, "Strategy comparison")
        self.assertIsNone(Run.objects.get(pk=failed.pk).artifact)

    def test_the_api_never_answers_a_preview_as_results(self):
        self.client.force_login(self.owner)
        for name in ("api-run-results", "api-run-export-json", "api-run-export-csv",
                     "api-run-graph"):
            with self.subTest(name):
                response = self.client.get(reverse(name, args=[self.compiling.pk]))
                self.assertEqual(response.status_code, 409)
        self.assertIsNone(Run.objects.get(pk=self.compiling.pk).artifact)

    def test_a_teammate_sees_the_preview_and_a_stranger_gets_a_404(self):
        self.assertContains(self.get(self.teammate, self.preview_url), 'data-plans="2"')
        self.assertEqual(self.get(self.stranger, self.preview_url).status_code, 404)

    def test_a_done_runs_page_marks_nothing_pending(self):
        done = self.make_done_run()
        response = self.get(self.owner, reverse("explorer-run", args=[done.pk]))

        self.assertNotContains(response, 'class="pending"')
        self.assertNotContains(response, "explored-mark")
        self.assertNotContains(response, 'id="preview"')
