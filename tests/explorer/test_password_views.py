"""Django's account views in the app's style (templates/registration/): the log-in page's links,
a password reset by e-mail end to end (through the locmem backend the tests use) and its limit
per address, a password change, and the e-mail settings read from the environment."""
import os
import re
import subprocess
import sys
from pathlib import Path

from django.contrib.auth.models import User
from django.core import mail
from django.test import TestCase, override_settings
from django.urls import reverse

REPO_ROOT = Path(__file__).resolve().parents[2]
NEW_PASSWORD = "quince-warp-shuffle-77"


class LoginPageTests(TestCase):
    def test_it_links_to_sign_up_and_password_reset(self):
        response = self.client.get(reverse("login"), {"next": "/runs"})

        self.assertTemplateUsed(response, "explorer/base.html")
        self.assertContains(response, f'href="{reverse("password_reset")}"')
        self.assertContains(response, f'href="{reverse("explorer-signup")}?next=/runs"')


class PasswordResetTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.user = User.objects.create_user("ada", "ada@example.org", "old-password-kept")

    def test_the_reset_email_carries_a_link_that_sets_a_new_password(self):
        form = self.client.get(reverse("password_reset"))
        self.assertTemplateUsed(form, "explorer/base.html")
        response = self.client.post(reverse("password_reset"), {"email": "ADA@example.org"},
                                    follow=True)

        self.assertContains(response, "Check your e-mail")
        self.assertEqual(len(mail.outbox), 1)
        message = mail.outbox[0]
        self.assertEqual(message.to, ["ada@example.org"])
        self.assertEqual(message.subject, "Reset your Fusion Explorer password")
        self.assertEqual(message.from_email, "Fusion Explorer <noreply@localhost>")
        link = re.search(r"http://testserver(/accounts/reset/\S+/)", message.body).group(1)

        # Django swaps the token for a session key and redirects to the form.
        page = self.client.get(link, follow=True)
        self.assertContains(page, 'id="password-reset-confirm-form"')
        done = self.client.post(page.redirect_chain[-1][0], {"new_password1": NEW_PASSWORD,
                                                             "new_password2": NEW_PASSWORD},
                                follow=True)

        self.assertContains(done, "Your new password is set")
        self.user.refresh_from_db()
        self.assertTrue(self.user.check_password(NEW_PASSWORD))
        # The link works once.
        again = self.client.get(link, follow=True)
        self.assertContains(again, "This reset link does not work")

    def test_an_unknown_address_sends_nothing_but_reads_the_same(self):
        response = self.client.post(reverse("password_reset"), {"email": "who@example.org"},
                                    follow=True)

        self.assertContains(response, "Check your e-mail")
        self.assertEqual(mail.outbox, [])

    def test_the_new_password_must_pass_the_validators(self):
        self.client.post(reverse("password_reset"), {"email": "ada@example.org"})
        link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body)
        page = self.client.get(link.group(1), follow=True)
        response = self.client.post(page.redirect_chain[-1][0], {"new_password1": "123",
                                                                 "new_password2": "123"})

        self.assertContains(response, "This password is too short")
        self.user.refresh_from_db()
        self.assertTrue(self.user.check_password("old-password-kept"))


@override_settings(PASSWORD_RESETS_ALLOWED=2, PASSWORD_RESET_WINDOW_S=3600)
class PasswordResetThrottleTests(TestCase):
    """Each reset form sent may e-mail someone: an address may send so many, then waits."""

    @classmethod
    def setUpTestData(cls):
        User.objects.create_user("ada", "ada@example.org", "old-password-kept")

    def reset(self, address: str, **headers):
        return self.client.post(reverse("password_reset"), {"email": "ada@example.org"},
                                REMOTE_ADDR=address, **headers)

    def test_an_address_past_its_resets_is_told_how_long_to_wait_and_nothing_is_sent(self):
        for _ in range(2):
            self.assertRedirects(self.reset("203.0.113.9"), reverse("password_reset_done"))
        refused = self.reset("203.0.113.9")

        self.assertContains(refused, "Too many password resets asked for from your address. "
                                     "Try again in 60 minutes.", status_code=429)
        self.assertContains(refused, 'value="ada@example.org"', status_code=429)
        self.assertEqual(len(mail.outbox), 2)
        # Another address may still ask.
        self.assertRedirects(self.reset("198.51.100.4"), reverse("password_reset_done"))
        self.assertEqual(len(mail.outbox), 3)

    @override_settings(TRUSTED_PROXIES=1)
    def test_behind_a_trusted_proxy_each_client_has_its_own_count(self):
        proxy = "10.0.0.2"
        for _ in range(2):
            self.reset(proxy, HTTP_X_FORWARDED_FOR="203.0.113.9")

        refused = self.reset(proxy, HTTP_X_FORWARDED_FOR="198.51.100.4, 203.0.113.9")
        other = self.reset(proxy, HTTP_X_FORWARDED_FOR="198.51.100.4")

        self.assertEqual(refused.status_code, 429)
        self.assertRedirects(other, reverse("password_reset_done"))


class PasswordChangeTests(TestCase):
    def test_a_user_changes_their_password_from_the_link_on_their_name(self):
        user = User.objects.create_user("ada", password="old-password-kept")
        self.client.force_login(user)
        header = self.client.get(reverse("explorer-index"))
        self.assertContains(header, f'href="{reverse("password_change")}"')

        wrong = self.client.post(reverse("password_change"), {
            "old_password": "nope", "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD})
        self.assertContains(wrong, "Your old password was entered incorrectly")
        response = self.client.post(reverse("password_change"), {
            "old_password": "old-password-kept", "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD}, follow=True)

        self.assertContains(response, "Your password is changed")
        user.refresh_from_db()
        self.assertTrue(user.check_password(NEW_PASSWORD))


def _email_settings(**env) -> subprocess.CompletedProcess:
    """The e-mail settings as a fresh process loads them with `env` added (and no EMAIL_* or
    DEFAULT_FROM_EMAIL of ours)."""
    clean = {key: value for key, value in os.environ.items()
             if not key.startswith("EMAIL_") and key != "DEFAULT_FROM_EMAIL"}
    return subprocess.run(
        [sys.executable, "-c", "import explorer.settings as s; "
                               "print(s.EMAIL_BACKEND, s.DEFAULT_FROM_EMAIL, s.EMAIL_HOST, "
                               "s.EMAIL_PORT, s.EMAIL_USE_TLS, sep='|')"],
        cwd=REPO_ROOT, env={"SECRET_KEY": "k" * 50, **clean, **env}, capture_output=True,
        text=True, timeout=60)


def test_email_goes_to_the_console_by_default():
    loaded = _email_settings()
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == ("django.core.mail.backends.console.EmailBackend|"
                                     "Fusion Explorer <noreply@localhost>|localhost|25|False")


def test_smtp_is_configured_from_the_environment():
    loaded = _email_settings(EMAIL_BACKEND="smtp", EMAIL_HOST="mail.example.org",
                             EMAIL_PORT="587", EMAIL_USE_TLS="true",
                             DEFAULT_FROM_EMAIL="explorer@example.org")
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == ("django.core.mail.backends.smtp.EmailBackend|"
                                     "explorer@example.org|mail.example.org|587|True")


def test_an_unknown_backend_name_stops_the_settings_loading():
    loaded = _email_settings(EMAIL_BACKEND="pigeon")
    assert loaded.returncode != 0
    assert "EMAIL_BACKEND='pigeon': use console, smtp or a backend's dotted path" in loaded.stderr
