"""The run page's "Set baseline" (explorer.views.run_baseline): a member of the run's team makes
a finished team run the baseline of a tag for its graph, which the gate and the team page read
(explorer.models.TagBaseline); anyone else is refused, and a bad tag changes nothing."""
from django.urls import reverse

from explorer.models import Run, TagBaseline
from tests.explorer.access import AccessTestCase


class RunBaselineViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.shared = cls.make_done_run("b" * 22, Run.TEAM)
        cls.url = reverse("explorer-run-baseline", args=[cls.shared.pk])

    def post(self, user, tag="main"):
        self.client.force_login(user)
        return self.client.post(self.url, {"tag": tag}, follow=True)

    def test_a_teammate_makes_the_run_the_baseline_and_the_page_says_so(self):
        page = self.post(self.teammate, "main")
        baseline = TagBaseline.objects.get(team=self.team, tag="main")
        self.assertEqual((baseline.run_id, baseline.graph_name, baseline.set_by),
                         (self.shared.pk, self.shared.title, self.teammate))
        self.assertContains(page, "is now the baseline of main")
        self.assertContains(page, "The baseline of <strong>main</strong>")

    def test_a_stranger_who_sees_a_public_run_may_not_make_it_a_teams_baseline(self):
        public = self.make_done_run("p" * 22, Run.PUBLIC)
        self.client.force_login(self.stranger)
        response = self.client.post(reverse("explorer-run-baseline", args=[public.pk]),
                                    {"tag": "main"})
        self.assertEqual(response.status_code, 403)
        self.assertFalse(TagBaseline.objects.exists())

    def test_an_empty_or_too_long_tag_is_refused_saying_why(self):
        for tag in ("", "x" * 51):
            page = self.post(self.owner, tag)
            self.assertContains(page, "A baseline&#x27;s tag is 1 to 50 characters")
        self.assertFalse(TagBaseline.objects.exists())

    def test_the_form_is_offered_to_the_team_only(self):
        self.client.force_login(self.teammate)
        self.assertContains(self.client.get(reverse("explorer-run", args=[self.shared.pk])),
                            "Set baseline")
        public = self.make_done_run("p" * 22, Run.PUBLIC)
        self.client.force_login(self.stranger)
        self.assertNotContains(self.client.get(reverse("explorer-run", args=[public.pk])),
                               "Set baseline")
