"""Sign-up (explorer/accounts.py signup): the form's checks, the new user logged in, invite
links (joining a team; required with SIGNUP_INVITE_ONLY) and the per-address throttle."""
import time

from django.contrib.auth.models import User
from django.test import TestCase, override_settings
from django.urls import reverse
from django.utils import timezone

from explorer.models import Invite, Membership, Team

URL = reverse("explorer-signup")
PASSWORD = "plum-kernel-stitch-42"


def form(username="grace", email="grace@example.org", password=PASSWORD, **extra) -> dict:
    return {"username": username, "email": email, "password1": password,
            "password2": password, **extra}


class SignupTests(TestCase):
    def sign_up(self, data: dict, address: str = "203.0.113.9", **query):
        url = f"{URL}?invite={query['invite']}" if "invite" in query else URL
        return self.client.post(url, data, REMOTE_ADDR=address)

    def logged_in_as(self) -> str | None:
        user_id = self.client.session.get("_auth_user_id")
        return User.objects.get(pk=user_id).username if user_id else None

    def test_the_page_shows_the_form_in_the_sites_style(self):
        response = self.client.get(URL)

        self.assertTemplateUsed(response, "explorer/base.html")
        self.assertContains(response, 'id="signup-form"')
        for field in ("username", "email", "password1", "password2"):
            self.assertContains(response, f'name="{field}"')

    def test_a_new_user_is_made_and_logged_in(self):
        response = self.sign_up(form())

        self.assertRedirects(response, reverse("explorer-index"),
                             fetch_redirect_response=False)
        user = User.objects.get(username="grace")
        self.assertEqual(user.email, "grace@example.org")
        self.assertTrue(user.check_password(PASSWORD))
        self.assertEqual(self.logged_in_as(), "grace")

    def test_it_goes_on_to_a_safe_next_page_only(self):
        safe = self.sign_up(form(next="/runs"))
        self.assertEqual(safe["Location"], "/runs")
        self.client.logout()
        unsafe = self.sign_up(form("mallory", "m@example.org", next="https://evil.example/"))
        self.assertEqual(unsafe["Location"], reverse("explorer-index"))

    def test_the_password_validators_apply(self):
        cases = {"short": "This password is too short",
                 "password123": "This password is too common",
                 "3141592653589": "This password is entirely numeric",
                 "grace-example": "too similar to the"}
        for password, message in cases.items():
            with self.subTest(password=password):
                response = self.sign_up(form(password=password))
                self.assertContains(response, message, status_code=400)
        self.assertFalse(User.objects.exists())
        self.assertIsNone(self.logged_in_as())

    def test_the_two_passwords_must_match(self):
        response = self.sign_up({**form(), "password2": PASSWORD + "!"})

        self.assertContains(response, "didn’t match", status_code=400)
        self.assertFalse(User.objects.exists())

    def test_a_taken_username_whatever_its_case_or_email_is_refused(self):
        User.objects.create_user("Grace", "grace@example.org")

        taken_name = self.sign_up(form("grace", "other@example.org"))
        taken_email = self.sign_up(form("hopper", "GRACE@example.org"))

        self.assertContains(taken_name, "A user with that username already exists",
                            status_code=400)
        self.assertContains(taken_email, "An account with this e-mail address exists already",
                            status_code=400)
        self.assertEqual(User.objects.count(), 1)

    def test_every_field_is_required_and_the_email_must_be_one(self):
        empty = self.sign_up({})
        bad_email = self.sign_up(form(email="not-an-address"))

        self.assertEqual(len(empty.context["form"].errors), 4)
        self.assertContains(bad_email, "Enter a valid email address", status_code=400)

    def test_a_team_invite_link_makes_the_new_user_a_member(self):
        owner = User.objects.create_user("ada")
        team = Team.objects.create(name="kernels")
        invite = Invite.make(owner, team, max_uses=3)

        page = self.client.get(URL, {"invite": invite.token})
        self.assertContains(page, "Signing up makes you a member")
        response = self.sign_up(form(invite=invite.token))

        self.assertRedirects(response, reverse("explorer-team", args=[team.pk]),
                             fetch_redirect_response=False)
        grace = User.objects.get(username="grace")
        self.assertTrue(Membership.objects.filter(team=team, user=grace,
                                                  role=Membership.MEMBER).exists())
        invite.refresh_from_db()
        self.assertEqual(invite.uses, 1)

    def test_an_invalid_invite_is_said_to_be_so_and_sign_up_still_works(self):
        response = self.client.get(URL, {"invite": "forged:token"})
        self.assertContains(response, "This invite link is not valid")

        self.sign_up(form(invite="forged:token"))
        self.assertEqual(self.logged_in_as(), "grace")

    def test_a_logged_in_user_is_told_what_signing_up_does(self):
        self.client.force_login(User.objects.create_user("ada"))

        self.assertContains(self.client.get(URL), "signing up logs you in as the new account")


@override_settings(SIGNUP_INVITE_ONLY=True)
class InviteOnlySignupTests(TestCase):
    def setUp(self):
        self.staff = User.objects.create_user("root", is_staff=True)

    def test_without_an_invite_sign_up_is_refused(self):
        page = self.client.get(URL)
        post = self.client.post(URL, form())

        self.assertContains(page, "by invitation only", status_code=403)
        self.assertNotContains(page, 'id="signup-form"', status_code=403)
        self.assertContains(post, "by invitation only", status_code=403)
        self.assertFalse(User.objects.filter(username="grace").exists())

    def test_a_site_invite_lets_one_person_sign_up(self):
        invite = Invite.make(self.staff, max_uses=1)

        first = self.client.post(f"{URL}?invite={invite.token}", form())
        self.client.logout()
        second = self.client.post(f"{URL}?invite={invite.token}",
                                  form("hopper", "hopper@example.org"))

        self.assertEqual(first.status_code, 302)
        self.assertTrue(User.objects.filter(username="grace").exists())
        self.assertContains(second, "used as many times as it allows", status_code=403)
        self.assertFalse(User.objects.filter(username="hopper").exists())

    def test_an_expired_or_forged_invite_is_refused(self):
        expired = Invite.make(self.staff)
        Invite.objects.filter(pk=expired.pk).update(expires=timezone.now())
        edited = expired.token.replace(":", "x:", 1)
        for token, message in ((expired.token, "This invite has expired"),
                               (edited, "not valid")):
            with self.subTest(message=message):
                response = self.client.post(f"{URL}?invite={token}", form())
                self.assertContains(response, message, status_code=403)
        self.assertFalse(User.objects.filter(username="grace").exists())

    def test_an_invite_used_up_while_the_form_was_filled_in_makes_no_account(self):
        invite = Invite.make(self.staff, max_uses=1)
        page = self.client.get(URL, {"invite": invite.token})
        self.assertContains(page, 'id="signup-form"')
        Invite.objects.filter(pk=invite.pk).update(uses=1)   # someone else was quicker

        response = self.client.post(URL, form(invite=invite.token))

        self.assertEqual(response.status_code, 403)
        self.assertFalse(User.objects.filter(username="grace").exists())


@override_settings(SIGNUP_ATTEMPTS_ALLOWED=3, SIGNUP_WINDOW_S=600)
class SignupThrottleTests(TestCase):
    def attempt(self, address: str, **headers):
        return self.client.post(URL, form(password="short"), REMOTE_ADDR=address, **headers)

    def test_an_address_is_slowed_down_after_its_allowed_attempts_valid_or_not(self):
        for _ in range(3):
            self.assertEqual(self.attempt("203.0.113.9").status_code, 400)
        response = self.client.post(URL, form(), REMOTE_ADDR="203.0.113.9")

        self.assertContains(response, "Too many sign-ups from your address. Try again in 10 "
                                      "minutes.", status_code=429)
        self.assertContains(response, 'value="grace"', status_code=429)
        self.assertFalse(User.objects.exists())
        # Another address is not slowed down.
        self.assertEqual(self.client.post(URL, form(), REMOTE_ADDR="198.51.100.4").status_code,
                         302)

    @override_settings(TRUSTED_PROXIES=1)
    def test_behind_a_trusted_proxy_each_client_has_its_own_count(self):
        proxy = "10.0.0.2"
        for _ in range(3):
            self.attempt(proxy, HTTP_X_FORWARDED_FOR="203.0.113.9")
        refused = self.attempt(proxy, HTTP_X_FORWARDED_FOR="198.51.100.4, 203.0.113.9")
        other = self.client.post(URL, form(), REMOTE_ADDR=proxy,
                                 HTTP_X_FORWARDED_FOR="198.51.100.4")

        self.assertEqual(refused.status_code, 429)
        self.assertEqual(other.status_code, 302)

    @override_settings(SIGNUP_WINDOW_S=1)
    def test_the_wait_ends_with_the_window_however_often_it_was_refused(self):
        for _ in range(3):
            self.attempt("203.0.113.9")
        for _ in range(3):
            self.assertContains(self.attempt("203.0.113.9"), "Try again in 1 minute.",
                                status_code=429)
        time.sleep(1.1)

        response = self.client.post(URL, form(), REMOTE_ADDR="203.0.113.9")

        self.assertEqual(response.status_code, 302)
