"""The run page at /r/<id> (explorer-run): progress while compiling, then the results."""
import gzip
import re

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from explorer.models import Measurement, Run
from explorer.presenters import comparison_rows
from tests.explorer.access import AccessTestCase, softmax_artifact
from tests.explorer.heavy import make_heavy_runs
from tests.explorer.outliers import before_cost_models
from tests.explorer.svg_bars import bars, chart


# A form's CSRF token as Django's {% csrf_token %} writes it.
CSRF_INPUT = re.compile(r'<input type="hidden" name="csrfmiddlewaretoken" value="([^"]+)">')


class RunViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("explorer-run", args=[cls.done.pk])

    def get(self, user, url=None):
        self.client.force_login(user)
        return self.client.get(url or self.url)

    def test_it_shows_the_owner_the_strategy_comparison_for_every_device(self):
        response = self.get(self.owner)

        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "explorer/run.html")
        self.assertContains(response, "Strategy comparison — NVIDIA A100")
        self.assertContains(response, "Strategy comparison — NVIDIA H100")
        for strategy in ("unfused", "xla", "stitch", "cost"):
            self.assertContains(response, f'<th scope="row">{strategy}</th>', html=True)

    def test_speedups_are_the_unfused_total_over_the_strategys(self):
        response = self.get(self.owner)
        rows = comparison_rows(self.done.artifact["devices"]["h100"])
        cost = next(row for row in rows if row["strategy"] == "cost")

        self.assertContains(response, f"{cost['speedup_vs_unfused']:.2f}×")

    def test_the_comparison_says_which_cost_model_or_which_rules_decided_each_plan(self):
        response = self.get(self.owner)

        self.assertContains(response, "decided by</th>")
        model = ('<td class="comparison__decider" title="Each candidate kernel is priced by the '
                 'projected time of its best CodeGen plan">projected model</td>')
        self.assertContains(response, model, count=2, html=True)  # one per device
        for rules in ("one kernel per op", "XLA&#x27;s fusion rules",
                      "AStitch&#x27;s stitching rules"):
            title = rules[0].upper() + rules[1:]
            cell = f'<td class="comparison__decider muted" title="{title}">rules</td>'
            self.assertContains(response, cell, count=2, html=True)

    def test_a_run_stored_before_cost_models_were_recorded_has_no_decided_by_column(self):
        old = self.make_done_run("o" * 22, artifact=before_cost_models(softmax_artifact()))
        response = self.get(self.owner, reverse("explorer-run", args=[old.pk]))

        self.assertContains(response, "Strategy comparison — NVIDIA H100")
        self.assertNotContains(response, "decided by")
        self.assertNotContains(response, "comparison__decider")

    def test_without_a_measurement_nothing_is_measured_and_one_can_be_asked_for(self):
        response = self.get(self.owner)

        self.assertContains(response, "GPU measurement:")
        self.assertContains(response, "not measured")
        self.assertContains(response, reverse("explorer-run-measure", args=[self.done.pk]))
        self.assertContains(response, "not measured (see GPU measurement")
        self.assertNotContains(response, "Measured on")

    def fastest(self, device: str) -> str:
        """The plan whose tab opens first: the lowest projected total, ties to the earlier
        strategy in exploration order."""
        plans = self.done.artifact["devices"][device]["strategies"]
        return min(plans, key=lambda name: plans[name]["total"]["proj_us"])

    def test_every_kernel_links_to_its_page(self):
        response = self.get(self.owner)
        fastest = self.fastest("a100")
        kernels = self.done.artifact["devices"]["a100"]["strategies"][fastest]["kernels"]

        for kernel in kernels:
            url = reverse("explorer-kernel", args=[self.done.pk, "a100", fastest, kernel["name"]])
            self.assertContains(response, f'href="{url}"')

    def test_it_embeds_the_bar_chart_and_the_fusion_view_of_the_fastest_plan(self):
        response = self.get(self.owner)
        html = response.content.decode()

        for device in ("a100", "h100"):       # each strategy's SOL and projected totals
            strategies = self.done.artifact["devices"][device]["strategies"]
            drawn = {(b["category"], b["series"]): b["value"]
                     for b in bars(chart(html, f"{device}/comparison"))}
            expected = {(name, "projected"): plan["total"]["proj_us"]
                        for name, plan in strategies.items()} | \
                {(name, "SOL"): plan["total"]["sol_us"] for name, plan in strategies.items()}
            self.assertEqual(drawn, expected)
        self.assertContains(response, 'id="fusion-graph"')
        self.assertContains(response, reverse("api-run-graph", args=[self.done.pk]))

    def test_the_other_plans_load_when_their_tab_is_opened(self):
        response = self.get(self.owner)

        for device in ("a100", "h100"):
            fastest = self.fastest(device)
            for strategy in {"unfused", "xla", "stitch", "cost"} - {fastest}:
                url = reverse("explorer-plan-panel", args=[self.done.pk, device, strategy])
                self.assertContains(response, f'data-panel-url="{url}"')

    def test_the_page_is_gzipped_for_a_browser_that_accepts_it(self):
        self.client.force_login(self.owner)
        plain = self.client.get(self.url)
        packed = self.client.get(self.url, headers={"accept-encoding": "gzip, br"})

        self.assertEqual(packed["Content-Encoding"], "gzip")
        self.assertNotIn("Content-Encoding", plain)
        html = gzip.decompress(packed.content)
        self.assertIn(b'id="fusion-graph"', html)
        self.assertLess(len(packed.content), len(html) / 3)

    def test_the_gzipped_page_is_the_plain_page(self):
        public = self.make_done_run("u" * 22, Run.PUBLIC)   # no CSRF token: the same bytes
        url = reverse("explorer-run", args=[public.pk])
        plain = self.client.get(url)
        packed = self.client.get(url, headers={"accept-encoding": "gzip"})

        self.assertEqual(gzip.decompress(packed.content), plain.content)
        self.assertContains(plain, "Strategy comparison — NVIDIA H100")

    def test_the_run_and_kernel_pages_load_no_chart_library(self):
        """plotly.js is loaded by plots.js when a chart is opened, never by the page itself:
        the page names it only as where its charts would load it from."""
        response = self.get(self.owner)
        self.assertNotRegex(response.content.decode(), r"<script[^>]*plotly")
        self.assertContains(response, 'data-plotly-js="')

        plan = self.done.artifact["devices"]["h100"]["strategies"]["cost"]
        kernel = next(k["name"] for k in plan["kernels"] if k.get("function"))
        page = self.client.get(reverse("explorer-kernel", args=[self.done.pk, "h100", "cost",
                                                                kernel]))
        self.assertEqual(page.status_code, 200)
        self.assertNotContains(page, "plotly")
        self.assertNotContains(page, "cdn.")
        self.assertContains(page, 'data-chart="roofline"><svg')

    def test_it_shows_the_first_plans_decision_log_with_reasons(self):
        response = self.get(self.owner)
        plan = self.done.artifact["devices"]["h100"]["strategies"][self.fastest("h100")]
        decision = plan["decisions"][0]

        self.assertContains(response, "data-decision-action")
        self.assertContains(response, escape(decision["reason"]))

    def test_it_links_the_exports_and_the_compare_pickers(self):
        response = self.get(self.owner)

        self.assertContains(response, reverse("api-run-export-json", args=[self.done.pk]))
        self.assertContains(response, reverse("api-run-export-csv", args=[self.done.pk]))
        self.assertContains(response, f'value="{self.done.pk}:h100:cost"')
        self.assertContains(response, 'id="compare-strategies"')

    def test_the_other_run_picker_lists_the_same_graph_first(self):
        other = self.make_done_run("o" * 22, Run.PRIVATE)
        response = self.get(self.owner)

        groups = response.context["other_runs"]
        self.assertEqual([(label, runs) for label, runs in groups], [("same graph", [other])])

    def test_a_teammate_sees_a_team_run(self):
        self.assertEqual(self.get(self.teammate).status_code, 200)

    def test_a_stranger_gets_a_404_for_a_team_run(self):
        self.assertEqual(self.get(self.stranger).status_code, 404)

    def test_a_teammate_gets_a_404_for_a_private_run(self):
        private = self.make_run("p" * 22, Run.PRIVATE)

        response = self.get(self.teammate, reverse("explorer-run", args=[private.pk]))
        self.assertEqual(response.status_code, 404)

    def test_anyone_sees_a_public_run_even_without_logging_in(self):
        public = self.make_run("u" * 22, Run.PUBLIC)
        url = reverse("explorer-run", args=[public.pk])

        self.assertEqual(self.client.get(url).status_code, 200)
        self.assertEqual(self.get(self.stranger, url).status_code, 200)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.client.get(self.url)

        self.assertRedirects(response, f"{reverse('login')}?next={self.url}",
                             fetch_redirect_response=False)

    def test_a_queued_run_shows_a_progress_bar_that_polls_the_status(self):
        queued = self.make_run("q" * 22, status=Run.RUNNING, stage="codegen",
                               progress_done=2, progress_total=5)
        response = self.get(self.owner, reverse("explorer-run", args=[queued.pk]))

        self.assertContains(response, '<progress id="progress-bar" max="5" value="2"></progress>',
                            html=True)
        status_url = reverse("explorer-run-status", args=[queued.pk])
        self.assertContains(response, f'data-status-url="{status_url}"')
        self.assertNotContains(response, "Strategy comparison")

    def test_a_failed_run_shows_its_error(self):
        failed = self.make_run("f" * 22, status=Run.FAILED, error="nvcc ran out of time",
                               error_stage="build")
        response = self.get(self.owner, reverse("explorer-run", args=[failed.pk]))

        self.assertContains(response, "build: nvcc ran out of time")

    def test_it_refuses_a_post(self):
        self.client.force_login(self.owner)

        self.assertEqual(self.client.post(self.url).status_code, 405)


class RunPageWorkTests(AccessTestCase):
    """What a finished run's page reads does not depend on the other runs its owner has:
    neither how many nor how big they are."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.PUBLIC)
        cls.url = reverse("explorer-run", args=[cls.done.pk])

    def queries(self) -> list[str]:
        """The SQL of a view of the page, after a first view filled the caches."""
        self.assertEqual(self.client.get(self.url).status_code, 200)
        with CaptureQueriesContext(connection) as queries:
            self.assertEqual(self.client.get(self.url).status_code, 200)
        return [query["sql"] for query in queries]

    def test_the_owners_page_makes_as_many_queries_whatever_else_the_owner_has(self):
        self.client.force_login(self.owner)
        alone = self.queries()
        make_heavy_runs(self.owner, 3)

        self.assertEqual(len(self.queries()), len(alone))

    def test_an_anonymous_visitors_page_makes_as_many_queries_whatever_else_the_owner_has(self):
        alone = self.queries()
        make_heavy_runs(self.owner, 3)

        self.assertEqual(len(self.queries()), len(alone))

    def test_a_cached_page_reads_no_artifact_or_graph(self):
        make_heavy_runs(self.owner, 2)
        self.client.force_login(self.owner)

        for sql in self.queries():
            self.assertNotIn('"explorer_runartifact"', sql)
            self.assertNotIn("graphblob", sql)

    def test_the_other_graphs_picker_shows_a_run_finished_after_the_page_was_kept(self):
        first, = make_heavy_runs(self.owner, 1)
        self.client.force_login(self.owner)
        self.queries()
        second, = make_heavy_runs(self.owner, 1, prefix="later")

        response = self.client.get(self.url)
        others = dict(response.context["other_runs"])["other graphs"]
        self.assertEqual([run.pk for run in others], [second.pk, first.pk])

    def test_the_pickers_show_a_rename_made_in_the_settings_form_at_once(self):
        first, = make_heavy_runs(self.owner, 1)
        self.client.force_login(self.owner)
        self.queries()
        renamed = self.client.post(reverse("explorer-run-settings", args=[first.pk]),
                                   {"name": "renamed <i>", "tags": "", "visibility": "private"})
        self.assertEqual(renamed.status_code, 302)

        self.assertContains(self.client.get(self.url), "renamed &lt;i&gt;")

    def test_the_owners_page_is_kept_with_each_requests_own_csrf_token(self):
        settings_url = reverse("explorer-run-settings", args=[self.done.pk])
        browsers = [Client(enforce_csrf_checks=True) for _ in range(2)]
        pages = []
        for browser in browsers:
            browser.force_login(self.owner)
            pages.append(browser.get(self.url))
        # The second browser's page was not rendered for it, yet holds its own token.
        self.assertIsNotNone(pages[0].context)
        self.assertIsNone(pages[1].context)
        tokens = [CSRF_INPUT.findall(page.content.decode()) for page in pages]
        for found in tokens:
            self.assertGreaterEqual(len(found), 2)      # log-out and settings forms at least
            self.assertEqual(len(set(found)), 1)
        self.assertNotEqual(tokens[0][0], tokens[1][0])
        self.assertEqual(CSRF_INPUT.sub("", pages[0].content.decode()),
                         CSRF_INPUT.sub("", pages[1].content.decode()))

        form = {"name": "kept", "tags": "", "visibility": "public"}
        refused = browsers[1].post(settings_url, {**form, "csrfmiddlewaretoken": tokens[0][0]})
        self.assertEqual(refused.status_code, 403)
        saved = browsers[1].post(settings_url, {**form, "csrfmiddlewaretoken": tokens[1][0]})
        self.assertEqual(saved.status_code, 302)
        self.assertContains(browsers[0].get(self.url), "<h1>kept</h1>", html=True)

    def test_a_logged_in_visitor_sees_a_measurement_asked_for_at_once(self):
        self.client.force_login(self.owner)
        self.assertContains(self.client.get(self.url), 'data-state="none"')
        Measurement.objects.create(run=self.done, requested_by=self.owner)

        self.assertContains(self.client.get(self.url), 'data-state="queued"')

    def test_an_anonymous_visitor_gets_the_page_as_rendered_for_the_last_one(self):
        first = self.client.get(self.url)
        with CaptureQueriesContext(connection) as queries:
            again = self.client.get(self.url)

        self.assertEqual(again.content, first.content)
        # The run's row only (visibility, labels, results stamp): nothing else is read.
        self.assertEqual(len(queries), 1)
        self.assertIn('FROM "explorer_run"', queries[0]["sql"])

    def test_an_anonymous_visitor_sees_a_rename_at_once_and_a_private_run_never(self):
        self.client.get(self.url)
        Run.objects.filter(pk=self.done.pk).update(name="renamed <b>")
        self.assertContains(self.client.get(self.url), "renamed &lt;b&gt;")

        Run.objects.filter(pk=self.done.pk).update(visibility=Run.PRIVATE)
        self.assertEqual(self.client.get(self.url).status_code, 302)

    def test_a_logged_in_visitors_page_is_rendered_for_them(self):
        self.client.get(self.url)
        self.client.force_login(self.stranger)
        response = self.client.get(self.url)

        self.assertContains(response, self.stranger.get_username())
        self.assertContains(response, "csrfmiddlewaretoken")


class NotFoundPageTests(AccessTestCase):
    def test_a_missing_page_is_the_site_styled_404_that_says_what_was_not_found(self):
        self.client.force_login(self.owner)
        response = self.client.get("/r/" + "n" * 22)

        self.assertEqual(response.status_code, 404)
        self.assertTemplateUsed(response, "404.html")
        self.assertContains(response, "No such run.", status_code=404)
        self.assertContains(response, 'class="site-header"', status_code=404)
        self.assertContains(response, "/r/" + "n" * 22, status_code=404)
