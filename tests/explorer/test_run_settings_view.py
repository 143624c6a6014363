"""Renaming, tagging and sharing a run: POST /r/<id>/settings (explorer-run-settings)."""
from django.test import Client
from django.urls import reverse

from explorer.models import MAX_TAG_LENGTH, MAX_TAGS, Membership, Run, Team
from tests.explorer.access import AccessTestCase


class RunSettingsViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.shared = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("explorer-run-settings", args=[cls.shared.pk])

    def post(self, user, **data):
        self.client.force_login(user)
        fields = {"name": "renamed", "tags": "nightly, baseline, nightly",
                  "visibility": "public", "team": ""}
        return self.client.post(self.url, {**fields, **data})

    def test_the_owner_renames_tags_and_publishes_the_run(self):
        response = self.post(self.owner)

        self.assertRedirects(response, reverse("explorer-run", args=[self.shared.pk]))
        self.shared.refresh_from_db()
        self.assertEqual(self.shared.name, "renamed")
        self.assertEqual(self.shared.tags, ["nightly", "baseline"])
        self.assertEqual(self.shared.visibility, Run.PUBLIC)

    def test_the_owner_shares_it_with_a_team(self):
        self.post(self.owner, visibility="team", team=self.team.pk)

        self.shared.refresh_from_db()
        self.assertEqual((self.shared.visibility, self.shared.team), (Run.TEAM, self.team))

    def test_sharing_with_a_team_needs_the_team(self):
        response = self.post(self.owner, visibility="team")

        self.assertContains(response, "needs the team", status_code=400)
        self.shared.refresh_from_db()
        self.assertEqual(self.shared.name, "softmax")

    def test_twenty_tags_of_fifty_characters_are_kept_as_the_api_keeps_them(self):
        tags = [f"{number:02d}" + "t" * (MAX_TAG_LENGTH - 2) for number in range(MAX_TAGS)]
        self.assertRedirects(self.post(self.owner, tags=", ".join(tags)),
                             reverse("explorer-run", args=[self.shared.pk]))

        self.shared.refresh_from_db()
        self.assertEqual(self.shared.tags, tags)

    def test_more_than_twenty_tags_are_refused_saying_how_many(self):
        response = self.post(self.owner, tags=", ".join(f"tag{number}" for number in range(120)))

        self.assertContains(response, "At most 20 tags: these are 120.", status_code=400)
        self.shared.refresh_from_db()
        self.assertEqual((self.shared.tags, self.shared.name), ([], "softmax"))

    def test_a_tag_past_fifty_characters_is_refused_naming_it(self):
        response = self.post(self.owner, tags="nightly, " + "x" * 400)

        self.assertContains(response, "A tag holds at most 50 characters: &#x27;xxxxx",
                            status_code=400)
        self.assertContains(response, "has 400.", status_code=400)
        self.shared.refresh_from_db()
        self.assertEqual(self.shared.tags, [])

    def test_a_name_too_long_is_refused_next_to_the_name(self):
        response = self.post(self.owner, name="n" * 201)

        self.assertEqual(response.context["settings_form"].errors, {"name": [
            "Ensure this value has at most 200 characters (it has 201)."]})
        self.assertContains(response, "at most 200 characters (it has 201)", status_code=400)
        self.shared.refresh_from_db()
        self.assertEqual(self.shared.name, "softmax")

    def test_a_team_of_others_is_not_one_of_yours(self):
        others = Team.objects.create(name="others")
        response = self.post(self.owner, visibility="team", team=others.pk)

        self.assertContains(response, "Choose one of your teams", status_code=400)

    def test_sharing_with_a_team_whose_quota_is_full_is_refused_by_the_team(self):
        private = self.make_done_run("p" * 22, Run.PRIVATE)
        others = Team.objects.create(name="others")
        Membership.objects.create(team=others, user=self.owner)
        self.client.force_login(self.owner)
        url = reverse("explorer-run-settings", args=[private.pk])
        fields = {"name": "", "tags": "", "visibility": "team"}
        with self.settings(TEAM_STORAGE_QUOTA_BYTES=100):
            refused = self.client.post(url, {**fields, "team": others.pk})
            # The team "kernels" holds the same file already (the run shared with it).
            kept = self.client.post(url, {**fields, "team": self.team.pk})

        self.assertContains(refused, "storage quota: the runs shared with the team others take "
                                     "0 bytes of its 100 bytes", status_code=400)
        self.assertEqual(kept.status_code, 302)
        private.refresh_from_db()
        self.assertEqual(private.team, self.team)

    def test_the_run_page_shows_the_owner_the_settings_form_with_its_values(self):
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-run", args=[self.shared.pk]))

        self.assertContains(response, f'action="{self.url}"')
        self.assertContains(response, 'value="softmax"')

    def test_a_teammate_sees_no_form_and_is_refused(self):
        self.client.force_login(self.teammate)
        page = self.client.get(reverse("explorer-run", args=[self.shared.pk]))
        self.assertNotContains(page, f'action="{self.url}"')

        self.assertEqual(self.post(self.teammate).status_code, 403)
        self.shared.refresh_from_db()
        self.assertEqual(self.shared.visibility, Run.TEAM)

    def test_a_stranger_gets_a_404(self):
        self.assertEqual(self.post(self.stranger).status_code, 404)

    def test_it_needs_the_csrf_token(self):
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.owner)

        self.assertEqual(client.post(self.url, {"visibility": "public"}).status_code, 403)

    def test_it_refuses_a_get(self):
        self.client.force_login(self.owner)

        self.assertEqual(self.client.get(self.url).status_code, 405)
