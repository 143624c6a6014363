"""Lifting locks from the command line: `manage.py unlock_address ADDRESS` (log-in locks and the
sign-up and password-reset limits of an address), and axes' own `axes_reset_ip` and
`axes_reset_username` for log-in locks (README, "A public deployment")."""
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

ADDRESS = "203.0.113.7"


@pytest.fixture
def ada(db):
    return User.objects.create_user("ada", "ada@example.org", "the-right-password")


def log_in(password: str, address: str = ADDRESS) -> bool:
    client = Client(REMOTE_ADDR=address)
    client.post("/accounts/login/", {"username": "ada", "password": password})
    return "_auth_user_id" in client.session


def lock_ada(settings) -> None:
    for _ in range(settings.LOGIN_FAILURES_ALLOWED):
        log_in("guess")
    assert not log_in("the-right-password")


def post(path: str, data: dict) -> int:
    return Client(REMOTE_ADDR=ADDRESS).post(path, data).status_code


def test_unlock_address_lifts_its_log_in_lock_and_its_sign_up_and_reset_limits(ada, settings):
    settings.SIGNUP_ATTEMPTS_ALLOWED = settings.PASSWORD_RESETS_ALLOWED = 1
    lock_ada(settings)
    reset = {"email": "ada@example.org"}
    assert [post("/accounts/signup/", {}), post("/accounts/signup/", {})] == [400, 429]
    assert [post("/accounts/password_reset/", reset),
            post("/accounts/password_reset/", reset)] == [302, 429]
    out = StringIO()

    call_command("unlock_address", ADDRESS, stdout=out)

    assert out.getvalue() == (f"{ADDRESS}: 1 log-in attempt record removed; sign-up and "
                              "password-reset limits lifted.\n")
    assert post("/accounts/signup/", {}) == 400
    assert post("/accounts/password_reset/", reset) == 302
    assert log_in("the-right-password")


def test_unlock_address_refuses_what_is_no_address(db):
    with pytest.raises(CommandError, match="'ada' is not an IP address"):
        call_command("unlock_address", "ada")


@pytest.mark.parametrize("command, argument", [("axes_reset_ip", ADDRESS),
                                               ("axes_reset_username", "ada")])
def test_axes_own_commands_lift_a_log_in_lock(ada, settings, command, argument):
    lock_ada(settings)

    call_command(command, argument, stdout=StringIO())

    assert log_in("the-right-password")
