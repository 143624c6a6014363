"""The run history at /runs (explorer-history): filters, search, paging, compare checkboxes."""
import copy
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from explorer import views
from explorer.models import Run
from tests.explorer.access import AccessTestCase, softmax_artifact
from tests.explorer.heavy import make_heavy_runs


class HistoryViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.private = cls.make_done_run("p" * 22, Run.PRIVATE)
        Run.objects.filter(pk=cls.private.pk).update(name="private softmax", tags=["nightly"])
        cls.team_run = cls.make_run("t" * 22, Run.TEAM, name="team layernorm")
        Run.objects.filter(pk=cls.team_run.pk).update(devices=["a100"], strategies=["xla"])
        cls.public = cls.make_run("u" * 22, Run.PUBLIC, status=Run.FAILED, name="public gelu",
                                  tags=["baseline"])
        Run.objects.filter(pk=cls.public.pk).update(filename="gelu.hlo")
        cls.url = reverse("explorer-history")

    def listed(self, user, **query) -> list[str]:
        self.client.force_login(user)
        response = self.client.get(self.url, query)
        self.assertEqual(response.status_code, 200)
        return [row["run"].pk for row in response.context["rows"]]

    def test_the_owner_sees_all_their_runs_newest_first(self):
        self.assertEqual(self.listed(self.owner),
                         [self.public.pk, self.team_run.pk, self.private.pk])

    def test_a_teammate_sees_team_and_public_runs_but_no_private_one(self):
        self.assertEqual(self.listed(self.teammate), [self.public.pk, self.team_run.pk])

    def test_a_stranger_sees_only_public_runs(self):
        self.assertEqual(self.listed(self.stranger), [self.public.pk])

    def test_an_unnamed_run_is_listed_by_its_file_name_as_its_page_calls_it(self):
        unnamed = self.make_run("n" * 22, Run.PRIVATE)
        self.client.force_login(self.owner)
        link = f'<a href="{reverse("explorer-run", args=[unnamed.pk])}">softmax.hlo</a>'

        self.assertContains(self.client.get(self.url), link, html=True)
        self.assertNotContains(self.client.get(self.url), "(unnamed)")
        page = self.client.get(reverse("explorer-run", args=[unnamed.pk]))
        self.assertContains(page, "<h1>softmax.hlo</h1>", html=True)

    def test_it_searches_names_and_file_names(self):
        self.assertEqual(self.listed(self.owner, q="layernorm"), [self.team_run.pk])
        self.assertEqual(self.listed(self.owner, q="GELU.HLO"), [self.public.pk])

    def test_it_filters_by_device_strategy_tag_and_status(self):
        self.assertEqual(self.listed(self.owner, device="h100"),
                         [self.public.pk, self.private.pk])
        self.assertEqual(self.listed(self.owner, strategy="xla", device="a100"),
                         [self.public.pk, self.team_run.pk, self.private.pk])
        self.assertEqual(self.listed(self.owner, strategy="cost"),
                         [self.public.pk, self.private.pk])
        self.assertEqual(self.listed(self.owner, tag="nightly"), [self.private.pk])
        self.assertEqual(self.listed(self.owner, status="failed"), [self.public.pk])

    def test_it_filters_by_whose_runs(self):
        self.assertEqual(self.listed(self.teammate, owner="team"), [self.team_run.pk])
        self.assertEqual(self.listed(self.teammate, owner="me"), [])
        self.assertEqual(self.listed(self.teammate, owner="public"), [self.public.pk])

    def test_a_done_run_shows_its_best_projected_total_per_device(self):
        self.client.force_login(self.owner)
        response = self.client.get(self.url, {"status": "done"})

        best = response.context["rows"][0]["best"]
        self.assertEqual([entry["device"] for entry in best], ["a100", "h100"])
        self.assertContains(response, "private softmax")
        self.assertContains(response, '<a class="tag" href="?tag=nightly">nightly</a>', html=True)

    def test_only_finished_runs_can_be_ticked_for_comparison(self):
        self.client.force_login(self.owner)
        response = self.client.get(self.url)

        compare = reverse("explorer-compare")
        self.assertContains(response, f'action="{compare}"')
        self.assertContains(response, f'name="run" value="{self.private.pk}"')
        html = response.content.decode()
        failed_box = html[html.index(f'value="{self.public.pk}"'):][:200]
        self.assertIn("disabled", failed_box)

    def test_it_pages_through_many_runs(self):
        for index in range(views.HISTORY_PAGE_SIZE):
            self.make_run(f"{index:022d}")
        self.client.force_login(self.owner)

        first = self.client.get(self.url)
        second = self.client.get(self.url, {"page": 2})

        self.assertEqual(len(first.context["rows"]), views.HISTORY_PAGE_SIZE)
        self.assertEqual(len(second.context["rows"]), 3)
        self.assertContains(first, "page=2")

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.client.get(self.url)

        self.assertRedirects(response, f"{reverse('login')}?next={self.url}",
                             fetch_redirect_response=False)


class HistoryWorkTests(AccessTestCase):
    """The list reads a run's artifact once, for its best totals, and never its graph: later
    views read neither, however many runs it shows and however big they are."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.PRIVATE)
        cls.url = reverse("explorer-history")

    def setUp(self):
        self.client.force_login(self.owner)

    def queries(self) -> list[str]:
        """The SQL of a view of the list, after a first view filled the caches."""
        self.assertEqual(self.client.get(self.url).status_code, 200)
        with CaptureQueriesContext(connection) as queries:
            self.assertEqual(self.client.get(self.url).status_code, 200)
        return [query["sql"] for query in queries]

    def test_it_makes_as_many_queries_however_many_and_big_the_runs(self):
        alone = self.queries()
        make_heavy_runs(self.owner, 4)

        self.assertEqual(len(self.queries()), len(alone))

    def test_a_second_view_reads_no_artifact_or_graph(self):
        make_heavy_runs(self.owner, 2)

        for sql in self.queries():
            self.assertNotIn('"explorer_runartifact"', sql)
            self.assertNotIn("graphblob", sql)

    def test_the_best_totals_are_read_from_the_artifacts_in_one_query(self):
        make_heavy_runs(self.owner, 3)
        with CaptureQueriesContext(connection) as queries:
            response = self.client.get(self.url)

        reading = [query["sql"] for query in queries
                   if '"explorer_runartifact"' in query["sql"]]
        self.assertEqual(len(reading), 1)
        self.assertEqual(len([row for row in response.context["rows"] if row["best"]]), 4)

    def test_a_recompiled_run_shows_its_new_best_total(self):
        self.queries()
        artifact = copy.deepcopy(softmax_artifact())
        artifact.pop("sources")
        for plan in artifact["devices"]["h100"]["strategies"].values():
            plan["total"]["proj_us"] = 1000.0
        artifact["devices"]["h100"]["strategies"]["xla"]["total"]["proj_us"] = 2.5
        run = Run.objects.get(pk=self.done.pk)
        run.artifact, run.finished = artifact, (run.finished or run.created) + timedelta(seconds=1)
        run.save()

        rows = self.client.get(self.url).context["rows"]
        self.assertIn({"device": "h100", "strategy": "xla", "proj_us": 2.5}, rows[0]["best"])
