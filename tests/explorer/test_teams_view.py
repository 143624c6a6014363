"""Teams without the admin site (explorer/teams.py): making a team, inviting by link and by
name, answering an invitation, leaving, an owner removing a member or changing a role (a team
never left without an owner), and who may see a team's page and do what."""
from django.contrib.auth.models import User
from django.urls import reverse

from explorer.account_models import MEMBER, OWNER
from explorer.models import Invite, Membership, Run, Team
from tests.explorer.access import AccessTestCase
from tests.explorer.test_access_matrix import normalised


class TeamTestCase(AccessTestCase):
    """owner is the team's owner, teammate a member, stranger in no team."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        Membership.objects.filter(team=cls.team, user=cls.owner).update(role=OWNER)

    def role(self, user) -> str | None:
        membership = Membership.objects.filter(team=self.team, user=user).first()
        return membership.role if membership else None

    def messages(self, response) -> list[str]:
        return [str(message) for message in response.context["messages"]]


class MakingATeamTests(TeamTestCase):
    url = reverse("explorer-teams")

    def test_any_logged_in_user_makes_a_team_and_becomes_its_owner(self):
        self.client.force_login(self.stranger)
        response = self.client.post(self.url, {"name": "  fusion   folk "}, follow=True)

        team = Team.objects.get(name="fusion folk")
        self.assertRedirects(response, reverse("explorer-team", args=[team.pk]))
        self.assertEqual(list(team.memberships.values_list("user__username", "role")),
                         [("stranger", OWNER)])
        self.assertContains(response, "You are an owner")

    def test_a_name_taken_whatever_its_case_is_refused(self):
        self.client.force_login(self.stranger)
        response = self.client.post(self.url, {"name": "KERNELS"})

        self.assertContains(response, "A team named KERNELS exists already", status_code=400)
        self.assertEqual(Team.objects.count(), 1)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.client.post(self.url, {"name": "ghosts"})

        self.assertRedirects(response, f"{reverse('login')}?next={self.url}",
                             fetch_redirect_response=False)
        self.assertFalse(Team.objects.filter(name="ghosts").exists())

    def test_the_teams_page_lists_my_teams_with_my_role_and_their_shared_runs(self):
        self.make_run("t" * 22, Run.TEAM)
        self.client.force_login(self.teammate)
        response = self.client.get(self.url)

        row = response.context["rows"][0]
        self.assertEqual((row["membership"].team, row["role"], row["runs"]),
                         (self.team, "member", 1))
        self.assertEqual(row["membership"].members, 2)
        self.assertContains(response, reverse("explorer-team", args=[self.team.pk]))

    def test_the_nav_links_to_teams_for_logged_in_users_only(self):
        self.assertNotContains(self.client.get(reverse("explorer-index")), f'href="{self.url}"')
        self.client.force_login(self.stranger)
        self.assertContains(self.client.get(reverse("explorer-index")), f'href="{self.url}"')


class InviteByLinkTests(TeamTestCase):
    def invite_url(self):
        return reverse("explorer-team-invite", args=[self.team.pk])

    def test_an_owner_makes_a_link_shown_on_the_team_page(self):
        self.client.force_login(self.owner)
        response = self.client.post(self.invite_url(), {"kind": "link", "uses": "5",
                                                        "days": "30"}, follow=True)

        invite = Invite.objects.get(team=self.team)
        self.assertEqual((invite.max_uses, invite.uses, invite.created_by, invite.invitee),
                         (5, 0, self.owner, None))
        link = response.context["links"][0]["url"]
        self.assertEqual(link, "http://testserver" + reverse("explorer-invite",
                                                             args=[invite.token]))
        self.assertContains(response, link)

    def test_a_member_who_is_not_an_owner_may_not_invite_and_a_stranger_gets_404(self):
        for user, status in ((self.teammate, 403), (self.stranger, 404)):
            with self.subTest(user=user.username):
                self.client.force_login(user)
                response = self.client.post(self.invite_url(), {"kind": "link", "uses": "1",
                                                                "days": "7"})
                self.assertEqual(response.status_code, status)
        self.assertFalse(Invite.objects.exists())

    def test_a_link_for_more_people_than_offered_is_refused(self):
        self.client.force_login(self.owner)
        response = self.client.post(self.invite_url(), {"kind": "link", "uses": "1000",
                                                        "days": "7"})

        self.assertContains(response, "Select a valid choice", status_code=400)
        self.assertFalse(Invite.objects.exists())

    def test_a_user_joins_through_the_link_and_it_counts_one_use(self):
        invite = Invite.make(self.owner, self.team, max_uses=2)
        self.client.force_login(self.stranger)
        url = reverse("explorer-invite", args=[invite.token])

        page = self.client.get(url)
        self.assertContains(page, "Join kernels")
        response = self.client.post(url, follow=True)

        self.assertRedirects(response, reverse("explorer-team", args=[self.team.pk]))
        self.assertEqual(self.role(self.stranger), MEMBER)
        invite.refresh_from_db()
        self.assertEqual((invite.uses, list(invite.used_by.all())), (1, [self.stranger]))
        self.assertIn("You joined the team kernels.", self.messages(response))

    def test_a_member_opening_the_link_uses_nothing(self):
        invite = Invite.make(self.owner, self.team)
        self.client.force_login(self.teammate)
        url = reverse("explorer-invite", args=[invite.token])

        self.assertContains(self.client.get(url), "You are a member of kernels already")
        self.client.post(url)

        invite.refresh_from_db()
        self.assertEqual(invite.uses, 0)

    def test_a_used_up_link_admits_nobody_else(self):
        invite = Invite.make(self.owner, self.team, max_uses=1)
        self.assertTrue(invite.redeem(self.stranger))
        late = User.objects.create_user("late")
        self.client.force_login(late)
        url = reverse("explorer-invite", args=[invite.token])

        self.assertContains(self.client.get(url), "used as many times", status_code=410)
        self.assertContains(self.client.post(url), "used as many times", status_code=410)
        self.assertIsNone(self.role(late))

    def test_a_revoked_link_stops_working(self):
        invite = Invite.make(self.owner, self.team)
        token = invite.token
        self.client.force_login(self.owner)
        self.client.post(reverse("explorer-team-invite-revoke", args=[self.team.pk, invite.pk]))

        self.assertFalse(Invite.objects.exists())
        self.client.force_login(self.stranger)
        self.assertEqual(self.client.get(reverse("explorer-invite", args=[token])).status_code,
                         404)

    def test_an_owner_cannot_revoke_another_teams_invite(self):
        other = Team.objects.create(name="others")
        invite = Invite.make(self.stranger, other)
        self.client.force_login(self.owner)
        response = self.client.post(reverse("explorer-team-invite-revoke",
                                            args=[self.team.pk, invite.pk]))

        self.assertEqual(response.status_code, 404)
        self.assertTrue(Invite.objects.filter(pk=invite.pk).exists())


class InviteByNameTests(TeamTestCase):
    def invite(self, username: str, user=None):
        self.client.force_login(user or self.owner)
        return self.client.post(reverse("explorer-team-invite", args=[self.team.pk]),
                                {"kind": "user", "username": username})

    def test_the_invitee_sees_the_invitation_on_their_teams_page_and_accepts_it(self):
        self.invite("STRANGER")
        invite = Invite.objects.get(invitee=self.stranger)
        self.assertEqual(self.role(self.stranger), None)   # not added without their consent

        self.client.force_login(self.stranger)
        teams = self.client.get(reverse("explorer-teams"))
        self.assertEqual(list(teams.context["invitations"]), [invite])
        response = self.client.post(reverse("explorer-invitation", args=[invite.pk]),
                                    {"answer": "accept"}, follow=True)

        self.assertRedirects(response, reverse("explorer-team", args=[self.team.pk]))
        self.assertEqual(self.role(self.stranger), MEMBER)
        self.assertNotIn(invite, Invite.open())

    def test_declining_removes_the_invitation(self):
        self.invite("stranger")
        invite = Invite.objects.get(invitee=self.stranger)
        self.client.force_login(self.stranger)
        self.client.post(reverse("explorer-invitation", args=[invite.pk]), {"answer": "decline"})

        self.assertFalse(Invite.objects.exists())
        self.assertIsNone(self.role(self.stranger))

    def test_nobody_else_can_answer_it(self):
        self.invite("stranger")
        invite = Invite.objects.get(invitee=self.stranger)
        for user in (self.teammate, self.owner):
            with self.subTest(user=user.username):
                self.client.force_login(user)
                response = self.client.post(reverse("explorer-invitation", args=[invite.pk]),
                                            {"answer": "accept"})
                self.assertEqual(response.status_code, 404)
        self.assertIsNone(self.role(self.stranger))
        # And an invitation by name is no link.
        self.assertIsNone(Invite.from_token(invite.token))

    def test_inviting_twice_keeps_one_invitation(self):
        self.invite("stranger")
        self.invite("stranger")

        self.assertEqual(Invite.objects.filter(invitee=self.stranger).count(), 1)

    def test_an_unknown_user_or_a_member_is_refused_with_a_reason(self):
        self.assertContains(self.invite("nobody"), "There is no user named nobody",
                            status_code=400)
        self.assertContains(self.invite("teammate"), "teammate is a member already",
                            status_code=400)
        self.assertFalse(Invite.objects.exists())

    def test_the_owner_sees_who_has_not_answered_and_may_withdraw_it(self):
        self.invite("stranger")
        page = self.client.get(reverse("explorer-team", args=[self.team.pk]))
        invite = page.context["invitations"][0]
        self.assertEqual(invite.invitee, self.stranger)

        self.client.post(reverse("explorer-team-invite-revoke", args=[self.team.pk, invite.pk]))
        self.assertFalse(Invite.objects.exists())


class MembersTests(TeamTestCase):
    def member_url(self, user):
        return reverse("explorer-team-member", args=[self.team.pk, user.pk])

    def leave(self, user):
        self.client.force_login(user)
        return self.client.post(reverse("explorer-team-leave", args=[self.team.pk]), follow=True)

    def test_a_member_leaves(self):
        response = self.leave(self.teammate)

        self.assertRedirects(response, reverse("explorer-teams"))
        self.assertIsNone(self.role(self.teammate))

    def test_the_last_owner_cannot_leave(self):
        response = self.leave(self.owner)

        self.assertEqual(self.role(self.owner), OWNER)
        self.assertIn("kernels needs an owner: make another member an owner first.",
                      self.messages(response))

    def test_an_owner_leaves_once_another_member_is_an_owner(self):
        self.client.force_login(self.owner)
        self.client.post(self.member_url(self.teammate), {"role": "owner"})
        self.assertEqual(self.role(self.teammate), OWNER)

        self.leave(self.owner)
        self.assertIsNone(self.role(self.owner))

    def test_an_owner_removes_a_member_whose_runs_stay_theirs(self):
        run = self.make_run("t" * 22, Run.TEAM)
        Run.objects.filter(pk=run.pk).update(owner=self.teammate)
        self.client.force_login(self.owner)
        self.client.post(self.member_url(self.teammate), {"action": "remove"})

        self.assertIsNone(self.role(self.teammate))
        self.assertEqual(Run.objects.get(pk=run.pk).owner, self.teammate)

    def test_the_last_owner_can_neither_step_down_nor_remove_themselves(self):
        self.client.force_login(self.owner)
        for data in ({"role": "member"}, {"action": "remove"}):
            with self.subTest(data=data):
                response = self.client.post(self.member_url(self.owner), data, follow=True)
                self.assertIn("kernels needs an owner: make another member an owner first.",
                              self.messages(response))
                self.assertEqual(self.role(self.owner), OWNER)

    def test_a_member_cannot_change_roles_or_remove_anyone(self):
        self.client.force_login(self.teammate)
        for data in ({"role": "owner"}, {"action": "remove"}):
            with self.subTest(data=data):
                response = self.client.post(self.member_url(self.owner), data)
                self.assertEqual(response.status_code, 403)
        self.assertEqual((self.role(self.owner), self.role(self.teammate)), (OWNER, MEMBER))

    def test_an_unknown_role_or_a_non_member_is_refused(self):
        self.client.force_login(self.owner)

        self.assertEqual(self.client.post(self.member_url(self.teammate),
                                          {"role": "admiral"}).status_code, 400)
        self.assertEqual(self.client.post(self.member_url(self.stranger),
                                          {"action": "remove"}).status_code, 404)
        self.assertEqual(self.role(self.teammate), MEMBER)

    def test_the_page_lists_members_with_their_roles_and_owners_get_the_controls(self):
        self.client.force_login(self.owner)
        owners_view = self.client.get(reverse("explorer-team", args=[self.team.pk]))
        self.client.force_login(self.teammate)
        members_view = self.client.get(reverse("explorer-team", args=[self.team.pk]))

        rows = [(row["membership"].user.username, row["role"])
                for row in owners_view.context["members"]]
        self.assertEqual(rows, [("owner", "owner"), ("teammate", "member")])
        self.assertContains(owners_view, self.member_url(self.teammate))
        self.assertContains(owners_view, 'id="invites"')
        self.assertNotContains(members_view, self.member_url(self.teammate))
        self.assertNotContains(members_view, 'id="invites"')


class TeamPageAccessTests(TeamTestCase):
    def test_only_members_see_the_page_others_get_404_like_a_missing_team(self):
        staff = User.objects.create_user("staff", is_staff=True)
        url = reverse("explorer-team", args=[self.team.pk])
        missing = reverse("explorer-team", args=[self.team.pk + 100])
        for user in (self.stranger, staff):
            with self.subTest(user=user.username):
                self.client.force_login(user)
                response = self.client.get(url)
                self.assertEqual(response.status_code, 404)
                self.assertEqual(normalised(response, url),
                                 normalised(self.client.get(missing), missing))
                self.assertNotContains(response, "kernels", status_code=404)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        url = reverse("explorer-team", args=[self.team.pk])
        self.assertRedirects(self.client.get(url), f"{reverse('login')}?next={url}",
                             fetch_redirect_response=False)

    def test_an_id_past_64_bits_is_no_team_and_answers_the_sites_404(self):
        self.client.force_login(self.owner)
        huge = "99999999999999999999"
        for method, url in (("get", f"/teams/{huge}"), ("post", f"/teams/{huge}/leave"),
                            ("post", f"/teams/{self.team.pk}/members/{huge}"),
                            ("post", f"/teams/invitations/{huge}")):
            with self.subTest(url=url):
                response = getattr(self.client, method)(url)
                self.assertEqual(response.status_code, 404)
                self.assertTemplateUsed(response, "404.html")
        self.assertEqual(self.role(self.owner), OWNER)
