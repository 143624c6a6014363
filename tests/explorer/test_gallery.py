"""The public gallery and what an anonymous visitor can reach from it: every finished public
run (the samples first), each card a link, private and unfinished runs left out, and the
exports of a public run open without logging in."""
from django.contrib.auth import get_user_model
from django.urls import reverse

from explorer.management.commands.load_samples import SAMPLES_USERNAME
from explorer.models import Run
from tests.explorer.access import AccessTestCase, softmax_artifact


class GalleryTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.public = cls.make_done_run("p" * 22, Run.PUBLIC)
        cls.private = cls.make_done_run("q" * 22, Run.PRIVATE)
        cls.team_run = cls.make_done_run("t" * 22, Run.TEAM)
        cls.queued = cls.make_run("u" * 22, Run.PUBLIC)
        cls.sample = cls.make_done_run("s" * 22, Run.PUBLIC)
        samples = get_user_model().objects.create_user(SAMPLES_USERNAME)
        Run.objects.filter(pk=cls.sample.pk).update(owner=samples, name="Softmax sample")

    def test_anyone_sees_the_finished_public_runs_samples_first_each_a_link(self):
        response = self.client.get(reverse("explorer-gallery"))

        self.assertEqual(response.status_code, 200)
        shown = [card["run"].pk for card in response.context["cards"]]
        self.assertEqual(shown, [self.sample.pk, self.public.pk])
        for pk in shown:
            self.assertContains(response, f'href="{reverse("explorer-run", args=[pk])}"')
        best = response.context["cards"][1]["best"]
        self.assertEqual({entry["device"] for entry in best},
                         set(softmax_artifact()["devices"]))
        self.assertContains(response, "Softmax sample")

    def test_the_gallery_reads_no_artifact_it_has_read_before(self):
        self.client.get(reverse("explorer-gallery"))
        with self.assertNumQueries(2):      # the count and the page of runs
            self.client.get(reverse("explorer-gallery"))

    def test_an_anonymous_visitor_exports_a_public_run_but_not_a_private_one(self):
        for name in ("api-run-export-json", "api-run-export-csv"):
            self.assertEqual(self.client.get(reverse(name, args=[self.public.pk])).status_code,
                             200, name)
            self.assertEqual(self.client.get(reverse(name, args=[self.private.pk])).status_code,
                             404, name)

    def test_the_landing_page_links_a_compiled_sample_for_a_visitor(self):
        Run.objects.filter(pk=self.sample.pk).update(filename="softmax.hlo")
        response = self.client.get(reverse("explorer-index"))

        self.assertContains(response, f'href="{reverse("explorer-run", args=[self.sample.pk])}"')
        self.assertContains(response, f'href="{reverse("explorer-gallery")}"')
