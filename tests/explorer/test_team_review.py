"""A team's page as a performance review (explorer/teams.py): the runs shared with the team,
who ran what and when, the best plan per graph and device, and the filters by tag, graph and
member."""
import copy
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from explorer.account_models import OWNER
from explorer.models import Membership, Run
from explorer.teams import best_per_graph
from tests.explorer.access import AccessTestCase, softmax_artifact


def artifact_with(device: str, strategy: str, proj_us: float) -> dict:
    """softmax's artifact with one plan's projected total changed."""
    artifact = copy.deepcopy(softmax_artifact())
    artifact["devices"][device]["strategies"][strategy]["total"]["proj_us"] = proj_us
    return artifact


class TeamReviewTests(AccessTestCase):
    """Three runs of softmax shared with the team (the teammate's reaches the best H100 plan),
    one of another graph, and runs the review must leave out."""

    @staticmethod
    def totals(device: str) -> dict[str, float]:
        """softmax's projected totals on `device`, by strategy, as the artifact has them."""
        strategies = softmax_artifact()["devices"][device]["strategies"]
        return {name: plan["total"]["proj_us"] for name, plan in strategies.items()}

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        Membership.objects.filter(team=cls.team, user=cls.owner).update(role=OWNER)
        now = timezone.now()
        cls.first = cls.make_done_run("a" * 22, Run.TEAM)
        cls.best = cls.make_done_run("b" * 22, Run.TEAM,
                                     artifact=artifact_with("h100", "cost", 0.125))
        cls.public = cls.make_done_run("c" * 22, Run.PUBLIC)
        cls.other_graph = cls.make_done_run("g" * 22, Run.TEAM)
        cls.queued = cls.make_run("q" * 22, Run.TEAM)
        Run.objects.filter(pk=cls.public.pk).update(team=cls.team)
        Run.objects.filter(pk=cls.best.pk).update(owner=cls.teammate, tags=["nightly"],
                                                  name="tuned softmax")
        Run.objects.filter(pk=cls.other_graph.pk).update(graph_sha256="f" * 64,
                                                         name="layer norm", tags=["nightly"])
        for minutes, run in enumerate((cls.first, cls.best, cls.public, cls.other_graph,
                                       cls.queued)):
            Run.objects.filter(pk=run.pk).update(created=now + timedelta(minutes=minutes))
        # Not the team's: a private run naming the team, and a run of no team.
        cls.private = cls.make_done_run("p" * 22, Run.PRIVATE)
        Run.objects.filter(pk=cls.private.pk).update(team=cls.team, name="secret softmax")
        cls.elsewhere = cls.make_done_run("e" * 22, Run.PUBLIC)
        Run.objects.filter(pk=cls.elsewhere.pk).update(name="somebody else's")

    def review(self, user=None, **query):
        self.client.force_login(user or self.teammate)
        response = self.client.get(reverse("explorer-team", args=[self.team.pk]), query)
        self.assertEqual(response.status_code, 200)
        return response

    def test_it_lists_the_runs_shared_with_the_team_newest_first_with_who_and_when(self):
        response = self.review()

        listed = [row["run"].pk for row in response.context["rows"]]
        self.assertEqual(listed, [self.queued.pk, self.other_graph.pk, self.public.pk,
                                  self.best.pk, self.first.pk])
        self.assertNotContains(response, "secret softmax")
        self.assertNotContains(response, "somebody else")
        table = response.content.decode().split('id="team-runs"')[1]
        self.assertIn("tuned softmax", table)
        self.assertIn("<td>teammate</td>", table)
        self.assertIn(reverse("explorer-run", args=[self.best.pk]), table)

    def test_each_run_shows_its_best_plan_per_device(self):
        rows = {row["run"].pk: row["best"] for row in self.review().context["rows"]}

        a100_best = min(self.totals("a100"), key=self.totals("a100").get)
        self.assertEqual(rows[self.best.pk], [
            {"device": "a100", "strategy": a100_best, "proj_us": self.totals("a100")[a100_best]},
            {"device": "h100", "strategy": "cost", "proj_us": 0.125}])
        self.assertEqual(rows[self.queued.pk], [])

    def test_the_best_plan_per_graph_and_device_names_the_run_and_who_reached_it_first(self):
        best = self.review().context["best_plans"]

        softmax = [(row["device"], row["strategy"], row["proj_us"], row["run"].pk, row["runs"])
                   for row in best if row["graph"] == self.first.graph_sha256]
        # a100: the three finished runs tie; the earliest gets it. Four runs of the graph,
        # the queued one included.
        a100 = self.totals("a100")
        a100_best = min(a100, key=a100.get)
        self.assertEqual(softmax, [("a100", a100_best, a100[a100_best], self.first.pk, 4),
                                   ("h100", "cost", 0.125, self.best.pk, 4)])
        layer_norm = [row["label"] for row in best if row["graph"] == "f" * 64]
        self.assertEqual(layer_norm, ["layer norm", "layer norm"])

    def test_it_filters_by_tag(self):
        response = self.review(tag="nightly")

        self.assertEqual({row["run"].pk for row in response.context["rows"]},
                         {self.best.pk, self.other_graph.pk})
        self.assertEqual({row["run"].pk for row in response.context["best_plans"]},
                         {self.best.pk, self.other_graph.pk})
        self.assertEqual(response.context["choices"]["tag"], ["nightly"])

    def test_it_filters_by_graph(self):
        response = self.review(graph=self.first.graph_sha256)

        self.assertEqual({row["run"].pk for row in response.context["rows"]},
                         {self.first.pk, self.best.pk, self.public.pk, self.queued.pk})
        self.assertEqual({row["graph"] for row in response.context["best_plans"]},
                         {self.first.graph_sha256})
        labels = dict(response.context["choices"]["graph"])
        self.assertEqual(labels["f" * 64], "layer norm")
        self.assertContains(response, f'<option value="{self.first.graph_sha256}" selected')

    def test_it_filters_by_member_and_filters_combine(self):
        mine = self.review(member="owner")
        nightly_of_the_owner = self.review(member="owner", tag="nightly")

        self.assertNotIn(self.best.pk, {row["run"].pk for row in mine.context["rows"]})
        self.assertEqual([row["run"].pk for row in nightly_of_the_owner.context["rows"]],
                         [self.other_graph.pk])
        self.assertEqual(mine.context["choices"]["member"], ["owner", "teammate"])

    def test_a_filter_matching_nothing_says_so(self):
        response = self.review(tag="nope")

        self.assertEqual(list(response.context["rows"]), [])
        self.assertContains(response, "No run matches.")

    def test_the_best_totals_come_from_the_cache_once_read(self):
        self.review()
        with CaptureQueriesContext(connection) as queries:
            self.review()

        self.assertFalse([query for query in queries.captured_queries
                          if '"explorer_runartifact"' in query["sql"]])

    def test_a_team_with_no_shared_run_says_how_to_share_one(self):
        Run.objects.filter(team=self.team).update(team=None)
        response = self.review()

        self.assertContains(response, "No run is\n      shared with the team yet")


class BestPerGraphTests(AccessTestCase):
    def test_a_plan_without_a_projection_loses_to_any_with_one(self):
        now = timezone.now()
        runs = [Run(id="x" * 22, graph_sha256="s", created=now),
                Run(id="y" * 22, graph_sha256="s", created=now + timedelta(seconds=1))]
        best = {"x" * 22: [{"device": "h100", "strategy": "cost", "proj_us": None}],
                "y" * 22: [{"device": "h100", "strategy": "xla", "proj_us": 9.0}]}

        rows = best_per_graph(runs, best, {"s": "softmax"})

        self.assertEqual([(row["strategy"], row["proj_us"], row["run"].pk) for row in rows],
                         [("xla", 9.0, "y" * 22)])
