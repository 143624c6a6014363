"""Log-in throttling (explorer/throttle.py): guessing a password is locked out, the user is
not, and a success clears the failures."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from explorer.models import LoginFailure

LOGIN = "/accounts/login/"


@pytest.fixture
def ada(db):
    return User.objects.create_user("ada", password="the-right-password")


def attempt(password: str, address: str = "203.0.113.7", username: str = "ada"):
    client = Client(REMOTE_ADDR=address)
    response = client.post(LOGIN, {"username": username, "password": password})
    return response, client


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_after_five_failures_even_the_right_password_is_refused_from_that_address(ada, settings):
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        response, _ = attempt("guess")
        assert response.status_code == 200 and b"Too many" not in response.content
    response, client = attempt("the-right-password")
    assert not logged_in(client)
    assert b"Too many failed log-ins" in response.content and b"15 minutes" in response.content
    # Attempts while locked are not even checked, so they cannot extend the lock.
    assert LoginFailure.objects.count() == settings.LOGIN_FAILURES_ALLOWED
    # The user, from their own machine, is not locked out by a stranger's guesses.
    _, elsewhere = attempt("the-right-password", address="198.51.100.1")
    assert logged_in(elsewhere)


def test_the_lock_ends_with_the_window_and_a_success_clears_the_failures(ada, settings):
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        attempt("guess")
    LoginFailure.objects.update(at=timezone.now() - timedelta(seconds=settings.LOGIN_LOCKOUT_S))
    _, client = attempt("the-right-password")
    assert logged_in(client)
    assert not LoginFailure.objects.filter(username="ada").exists()


def test_one_address_trying_many_usernames_is_locked_too(ada, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 8
    for index in range(8):
        attempt("guess", username=f"user{index}")
    response, client = attempt("the-right-password")
    assert not logged_in(client) and b"Too many" in response.content


def test_the_admin_log_in_is_locked_the_same_way(db, settings):
    User.objects.create_superuser("root", password="the-root-password")
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        client.post("/admin/login/", {"username": "root", "password": "guess"})
    response = client.post("/admin/login/", {"username": "root",
                                             "password": "the-root-password"})
    assert b"Too many failed log-ins" in response.content
    assert not logged_in(client)
