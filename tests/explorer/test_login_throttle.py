"""Log-in locks (explorer/throttle.py on django-axes): guessing a password is locked out, the
user is not; an address trying many usernames is locked; clients behind trusted proxies are told
apart by X-Forwarded-For, and the header is ignored where no proxy is trusted for it."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db.models import Sum
from django.test import Client, RequestFactory
from django.utils import timezone

from explorer.throttle import client_address

LOGIN = "/accounts/login/"
PROXY = "10.0.0.2"


@pytest.fixture
def ada(db):
    return User.objects.create_user("ada", password="the-right-password")


def attempt(password: str, address: str = "203.0.113.7", username: str = "ada",
            **headers):
    client = Client(REMOTE_ADDR=address, **headers)
    response = client.post(LOGIN, {"username": username, "password": password})
    return response, client


def through_proxy(password: str, forwarded_for: str, username: str = "ada"):
    """A log-in through the proxy at PROXY, which sent X-Forwarded-For: `forwarded_for`."""
    return attempt(password, PROXY, username, HTTP_X_FORWARDED_FOR=forwarded_for)


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


def failures_counted() -> int:
    return AccessAttempt.objects.aggregate(total=Sum("failures_since_start"))["total"] or 0


def test_after_five_failures_even_the_right_password_is_refused_from_that_address(ada, settings):
    for _ in range(settings.LOGIN_FAILURES_ALLOWED - 1):
        response, _ = attempt("guess")
        assert response.status_code == 200
        assert b"Please enter a correct username and password" in response.content
    fifth, _ = attempt("guess")
    assert fifth.status_code == 429 and b"Too many failed log-ins" in fifth.content

    response, client = attempt("the-right-password")

    assert not logged_in(client)
    assert response.status_code == 429
    assert (b"Too many failed log-ins from your address. Try again in 15 minutes, or reset "
            b"your password." in response.content)
    # Tries while locked are not even checked, so they cannot extend the lock.
    assert failures_counted() == settings.LOGIN_FAILURES_ALLOWED
    # The user, from their own machine, is not locked out by a stranger's guesses.
    _, elsewhere = attempt("the-right-password", address="198.51.100.1")
    assert logged_in(elsewhere)


def test_the_lock_ends_a_lockout_period_after_the_last_failure(ada, settings):
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        attempt("guess")
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - timedelta(seconds=settings.LOGIN_LOCKOUT_S - 120))
    response, _ = attempt("the-right-password")
    assert b"Try again in 2 minutes" in response.content

    AccessAttempt.objects.update(
        attempt_time=timezone.now() - timedelta(seconds=settings.LOGIN_LOCKOUT_S))
    _, client = attempt("the-right-password")
    assert logged_in(client)


def test_a_success_clears_the_pairs_failures_and_no_others(ada, settings):
    for username in ("ada", "ada", "ADA", "bob", "bob"):
        attempt("guess", username=username)
    _, client = attempt("the-right-password")

    assert logged_in(client)
    assert not AccessAttempt.objects.filter(username="ada").exists()
    # Another username's failures from the address still count towards the address's lock.
    assert failures_counted() == 2


def test_changing_the_usernames_case_counts_against_the_same_lock(ada, settings):
    for index in range(settings.LOGIN_FAILURES_ALLOWED):
        attempt("guess", username="ada" if index % 2 else "AdA")
    _, client = attempt("the-right-password")
    assert not logged_in(client)


def test_one_address_trying_many_usernames_is_locked_too(ada, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 8
    for index in range(8):
        attempt("guess", username=f"user{index}")
    response, client = attempt("the-right-password")
    assert not logged_in(client) and b"Too many" in response.content
    _, elsewhere = attempt("the-right-password", address="198.51.100.1")
    assert logged_in(elsewhere)


def test_the_admin_log_in_is_locked_the_same_way(db, settings):
    User.objects.create_superuser("root", password="the-root-password")
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        client.post("/admin/login/", {"username": "root", "password": "guess"})
    response = client.post("/admin/login/", {"username": "root",
                                             "password": "the-root-password"})
    assert response.status_code == 429
    assert b"Too many failed log-ins" in response.content
    assert not logged_in(client)


def test_behind_a_trusted_proxy_two_clients_are_throttled_apart(ada, settings):
    settings.TRUSTED_PROXIES = 1
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        through_proxy("guess", "203.0.113.7")
    guesser, _ = through_proxy("the-right-password", "203.0.113.7")
    assert guesser.status_code == 429

    _, user = through_proxy("the-right-password", "198.51.100.1")

    assert logged_in(user)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.7"}


def test_with_no_proxy_trusted_a_forwarded_for_header_is_ignored(ada, settings):
    """A client inventing a new X-Forwarded-For for each guess is still one address."""
    for index in range(settings.LOGIN_FAILURES_ALLOWED):
        through_proxy("guess", f"198.51.100.{index}")
    _, client = through_proxy("the-right-password", "198.51.100.200")
    assert not logged_in(client)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {PROXY}


def test_hops_beyond_the_trusted_proxies_are_the_clients_and_ignored(ada, settings):
    """The proxy appends the address it saw to whatever the client sent: the client's own
    entries, left of it, change nothing."""
    settings.TRUSTED_PROXIES = 1
    for index in range(settings.LOGIN_FAILURES_ALLOWED):
        through_proxy("guess", f"198.51.100.{index}, 203.0.113.7")
    _, client = through_proxy("the-right-password", "198.51.100.1, 203.0.113.7")
    assert not logged_in(client)


@pytest.mark.parametrize("trusted, forwarded_for, seen", [
    (0, "", "10.0.0.2"),
    (0, "203.0.113.7", "10.0.0.2"),
    (1, "", "10.0.0.2"),                              # straight to the server: no header
    (1, "203.0.113.7", "203.0.113.7"),
    (1, "1.2.3.4, 203.0.113.7", "203.0.113.7"),       # the client sent 1.2.3.4 itself
    (2, "1.2.3.4, 203.0.113.7, 10.0.0.1", "203.0.113.7"),
    (2, "203.0.113.7", "203.0.113.7"),                # came in past the outer proxy
    (1, "2001:DB8::1", "2001:db8::1"),
    (1, "not-an-address", "10.0.0.2"),               # a proxy writing nonsense: its own
])
def test_the_client_address_is_the_entry_the_outermost_trusted_proxy_wrote(
        settings, trusted, forwarded_for, seen):
    settings.TRUSTED_PROXIES = trusted
    headers = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for else {}
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", **headers)
    assert client_address(request) == seen
