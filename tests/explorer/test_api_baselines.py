"""Tags as baselines through the JSON API (explorer/api.py: setBaseline, listBaselines,
getRunBaseline): members only, a run shared with the team only, one baseline per tag and
graph; each answer checked against the OpenAPI document."""
import json

from django.urls import reverse

from explorer import presenters
from explorer.models import ApiToken, Run, TagBaseline
from tests.explorer.access import AccessTestCase
from tests.explorer.test_api_schema import DOCUMENT, problems


class BaselineApiTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.first = cls.make_done_run("a" * 22, Run.TEAM)
        cls.second = cls.make_done_run("b" * 22, Run.TEAM, owner=cls.teammate)
        cls.private = cls.make_done_run("p" * 22, Run.PRIVATE)
        cls.keys = {user.username: ApiToken.create_for(user, "ci", scope=ApiToken.SUBMIT)[1]
                    for user in (cls.owner, cls.teammate, cls.stranger)}

    def call(self, method, name, args, user, body=None, query=""):
        return getattr(self.client, method)(
            reverse(name, args=args) + query, json.dumps(body) if body is not None else None,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {self.keys[user.username]}")

    def documented(self, response, path, method):
        schema = DOCUMENT["paths"][path][method]["responses"][str(response.status_code)][
            "content"]["application/json"]["schema"]
        self.assertEqual(problems(response.json(), schema), [])
        return response.json()

    def mark(self, run, user=None, tag="main", team=None):
        return self.call("post", "api-team-baselines", [team or self.team.name],
                         user or self.owner, {"tag": tag, "run": run.pk})

    def test_a_member_marks_a_team_run_as_the_baseline_of_a_tag(self):
        response = self.mark(self.first)

        self.assertEqual(response.status_code, 200, response.content)
        body = self.documented(response, "/teams/{team}/baselines", "post")
        self.assertEqual((body["tag"], body["graph"], body["run"], body["set_by"]),
                         ("main", "softmax", self.first.pk, "owner"))
        self.assertEqual(body["best"], presenters.best_totals(self.first.artifact))
        self.assertTrue(body["url"].endswith(f"/r/{self.first.pk}"))

    def test_marking_another_run_of_the_graph_replaces_the_baseline(self):
        self.mark(self.first)
        self.mark(self.second, user=self.teammate)

        baseline = TagBaseline.objects.get(team=self.team, tag="main")
        self.assertEqual((baseline.run_id, baseline.set_by), (self.second.pk, self.teammate))

    def test_a_run_the_team_does_not_share_is_refused_naming_why(self):
        response = self.mark(self.private)

        self.assertEqual(response.status_code, 400)
        self.assertIn("is not shared with the team kernels", response.json()["error"])
        self.assertFalse(TagBaseline.objects.exists())

    def test_an_unfinished_run_is_refused(self):
        queued = self.make_run("q" * 22, Run.TEAM)
        response = self.mark(queued)

        self.assertEqual(response.status_code, 400)
        self.assertIn("only a finished run can be a baseline", response.json()["error"])

    def test_a_stranger_finds_no_team_and_no_baseline(self):
        self.mark(self.first)
        public = self.make_done_run("u" * 22, Run.PUBLIC)

        for response in (self.mark(public, user=self.stranger),
                         self.call("get", "api-team-baselines", [self.team.pk], self.stranger)):
            self.assertEqual(response.status_code, 404, response.content)
        # A run the stranger may see, but of no team of theirs: refused, saying why.
        refused = self.call("get", "api-run-baseline", [public.pk], self.stranger,
                            query="?tag=main")
        self.assertEqual(refused.status_code, 403, refused.content)
        self.assertIn("not a run of one of your teams", refused.json()["error"])

    def test_the_list_names_each_baseline_by_team_id_or_name(self):
        self.mark(self.first)
        self.mark(self.first, tag="release")

        for team in (self.team.pk, self.team.name):
            response = self.call("get", "api-team-baselines", [team], self.teammate)
            body = self.documented(response, "/teams/{team}/baselines", "get")
            self.assertEqual([(b["graph"], b["tag"]) for b in body["baselines"]],
                             [("softmax", "main"), ("softmax", "release")])

    def test_a_later_run_of_the_graph_finds_its_tags_baseline(self):
        self.mark(self.first)

        response = self.call("get", "api-run-baseline", [self.second.pk], self.teammate,
                             query="?tag=main")

        self.assertEqual(response.status_code, 200, response.content)
        self.assertEqual(self.documented(response, "/runs/{run_id}/baseline", "get")["run"],
                         self.first.pk)

    def test_a_tag_without_a_baseline_says_how_to_set_one(self):
        response = self.call("get", "api-run-baseline", [self.second.pk], self.owner,
                             query="?tag=nightly")

        self.assertEqual(response.status_code, 404)
        self.assertIn("no baseline of the tag 'nightly' for 'softmax'", response.json()["error"])
        self.assertIn("python -m compiler baseline", response.json()["error"])
