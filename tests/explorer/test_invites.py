"""Invites (explorer/account_models.py Invite): signed tokens tied to their row, expiry and
uses counted by one conditional update; the invite page (explorer/accounts.py invite_page);
the admin's and `manage.py create_invite`'s site invites."""
from datetime import timedelta
from io import StringIO

from django.contrib.auth.models import User
from django.core import signing
from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse
from django.utils.http import urlencode
from django.utils import timezone

from explorer.models import Invite, Membership, Team


class InviteTokenTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.owner = User.objects.create_user("ada")
        cls.team = Team.objects.create(name="kernels")

    def test_a_token_names_its_invite(self):
        invite = Invite.make(self.owner, self.team)

        self.assertEqual(Invite.from_token(invite.token), invite)

    def test_forged_edited_or_foreign_tokens_name_nothing(self):
        invite = Invite.make(self.owner, self.team)
        unsigned = signing.dumps([invite.pk, invite.nonce], salt="another.salt")
        wrong_nonce = signing.dumps([invite.pk, "guess"], salt=Invite.SALT)
        for token in ("", "garbage", invite.token[:-1], unsigned, wrong_nonce,
                      signing.dumps("not a pair", salt=Invite.SALT)):
            with self.subTest(token=token):
                self.assertIsNone(Invite.from_token(token))

    def test_a_deleted_and_remade_invite_does_not_revive_the_old_link(self):
        invite = Invite.make(self.owner, self.team)
        token, pk = invite.token, invite.pk
        invite.delete()
        Invite.objects.create(pk=pk, team=self.team, expires=timezone.now() + timedelta(days=1))

        self.assertIsNone(Invite.from_token(token))

    def test_a_link_admits_as_many_people_as_it_allows_then_nobody(self):
        invite = Invite.make(self.owner, self.team, max_uses=2)
        people = [User.objects.create_user(name) for name in ("b", "c", "d")]

        self.assertEqual([invite.redeem(person) for person in people], [True, True, False])
        self.assertEqual(invite.uses, 2)
        self.assertEqual(set(invite.used_by.all()), set(people[:2]))
        self.assertFalse(Membership.objects.filter(user=people[2]).exists())
        self.assertEqual(invite.problem, "This invite has been used as many times as it allows.")

    def test_a_stale_copy_of_the_invite_cannot_overcount(self):
        invite = Invite.make(self.owner, self.team, max_uses=1)
        stale = Invite.objects.get(pk=invite.pk)
        invite.redeem(User.objects.create_user("b"))

        self.assertFalse(stale.redeem(User.objects.create_user("c")))
        self.assertEqual(Invite.objects.get(pk=invite.pk).uses, 1)

    def test_an_expired_invite_admits_nobody(self):
        invite = Invite.make(self.owner, self.team, days=1)
        Invite.objects.filter(pk=invite.pk).update(expires=timezone.now() - timedelta(seconds=1))
        invite.refresh_from_db()

        self.assertFalse(invite.redeem(User.objects.create_user("b")))
        self.assertEqual(invite.problem, "This invite has expired.")
        self.assertNotIn(invite, Invite.open())


class InvitePageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.owner = User.objects.create_user("ada")
        cls.team = Team.objects.create(name="kernels")
        Membership.objects.create(team=cls.team, user=cls.owner, role=Membership.ADMIN)

    def test_a_visitor_is_offered_sign_up_or_log_in_carrying_the_token(self):
        invite = Invite.make(self.owner, self.team)
        url = reverse("explorer-invite", args=[invite.token])
        response = self.client.get(url)

        self.assertContains(response, "ada\n      invited you to join the team")
        signup = f"{reverse('explorer-signup')}?{urlencode({'invite': invite.token})}"
        login = f"{reverse('login')}?{urlencode({'next': url})}"
        self.assertContains(response, f'href="{signup}"')
        self.assertContains(response, f'href="{login}"')

    def test_a_visitor_posting_is_sent_to_log_in(self):
        invite = Invite.make(self.owner, self.team)
        response = self.client.post(reverse("explorer-invite", args=[invite.token]))

        self.assertEqual(response.status_code, 302)
        self.assertTrue(response["Location"].startswith(reverse("login")))
        self.assertEqual(Invite.objects.get(pk=invite.pk).uses, 0)

    def test_an_unknown_link_is_404_and_an_expired_one_410(self):
        invite = Invite.make(self.owner, self.team)
        Invite.objects.filter(pk=invite.pk).update(expires=timezone.now())

        self.assertContains(self.client.get(reverse("explorer-invite", args=["nope"])),
                            "This invite link is not valid", status_code=404)
        self.assertContains(self.client.get(reverse("explorer-invite", args=[invite.token])),
                            "This invite has expired. Ask ada for a new link.", status_code=410)

    def test_a_site_invite_needs_no_joining(self):
        invite = Invite.make(None)
        visitor = self.client.get(reverse("explorer-invite", args=[invite.token]))
        self.client.force_login(self.owner)
        user = self.client.get(reverse("explorer-invite", args=[invite.token]))

        self.assertContains(visitor, "invited you to\n      Fusion Explorer")
        self.assertContains(user, "You have an account already")


class SiteInviteTests(TestCase):
    def test_the_command_prints_a_working_link(self):
        team = Team.objects.create(name="kernels")
        out, err = StringIO(), StringIO()
        call_command("create_invite", "--team", "kernels", "--uses", "3", "--days", "2",
                     "--base-url", "https://fusion.example/", stdout=out, stderr=err)

        link = out.getvalue().strip()
        self.assertTrue(link.startswith("https://fusion.example/invite/"), link)
        invite = Invite.from_token(link.rsplit("/", 1)[1])
        self.assertEqual((invite.team, invite.max_uses, invite.created_by), (team, 3, None))
        self.assertIn("3 uses", err.getvalue())

    def test_staff_make_a_site_invite_in_the_admin_and_see_its_link(self):
        root = User.objects.create_superuser("root", password="root-password")
        self.client.force_login(root)
        expires = timezone.now() + timedelta(days=3)
        response = self.client.post(reverse("admin:explorer_invite_add"), {
            "team": "", "invitee": "", "max_uses": "4",
            "expires_0": expires.strftime("%Y-%m-%d"), "expires_1": "12:00:00"})

        self.assertEqual(response.status_code, 302, response.content[:2000])
        invite = Invite.objects.get()
        self.assertEqual((invite.team, invite.created_by, invite.max_uses), (None, root, 4))
        page = self.client.get(reverse("admin:explorer_invite_change", args=[invite.pk]))
        self.assertContains(page, reverse("explorer-invite", args=[invite.token]))
