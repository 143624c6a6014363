"""Throttling by client address: log-in locks (django-axes) and the sign-up and password-reset
limits (counters in the shared cache).

The client's address (`client_address`) is REMOTE_ADDR, or, behind TRUSTED_PROXIES proxies,
the address the outermost proxy received the request from: each proxy appends the address it
received the request from to X-Forwarded-For (nginx: `$proxy_add_x_forwarded_for`), so that is
the header's TRUSTED_PROXIES-th entry from the right. Entries further left were sent by the
client and are ignored, and so is the whole header when no proxy is trusted.

Log-in, through axes (`LoginLocks`, its database handler with a limit per kind of lock): within
LOGIN_LOCKOUT_S seconds (default 900) of the last failure,
- a username tried from one address fails LOGIN_FAILURES_ALLOWED times (default 5): that
  pair is locked; the right password is refused too, so guessing gains nothing, while the
  same user from their own address can still log in (a stranger cannot lock a user out);
- one address fails LOGIN_FAILURES_PER_ADDRESS times (default 30) whatever the usernames:
  that address is locked (spraying many usernames).
Tries while locked are refused without checking the password and not counted, so they do not
extend the lock; a successful log-in clears the pair's failures. The log-in forms
(`ThrottledLoginForm`, and the admin site's `ThrottledAdminLoginForm`) say how long a lock
lasts, with status 429. Staff lift a lock in the admin (Axes › Access attempts: delete the
rows) or with `manage.py axes_reset_ip ADDRESS`, `axes_reset_username NAME` (lower-cased),
`axes_reset_ip_username ADDRESS NAME`, or `manage.py unlock_address ADDRESS`, which lifts the
sign-up and password-reset limits too.

Sign-up and password reset (`SIGNUPS`, `PASSWORD_RESETS`): each form sent counts, valid or
not, in a window that starts with an address's first try; past the limit the form is refused
until the window ends.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from dataclasses import dataclass
from datetime import timedelta

from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off, get_lockout_parameters
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import caches
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.utils import timezone

logger = logging.getLogger(__name__)

TOO_MANY_LOGINS = "Too many failed log-ins from your address"


def client_address(request) -> str | None:
    """The client's address (the module docstring says how it is found); None when the
    server gave none."""
    peer = request.META.get("REMOTE_ADDR") or None
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    proxies = settings.TRUSTED_PROXIES
    if not proxies or not forwarded.strip():
        return peer
    hops = [hop.strip() for hop in forwarded.split(",")]
    # Fewer entries than proxies: the request came in past the outer ones, and the leftmost
    # entry is what the first proxy it met saw.
    seen = hops[-proxies] if len(hops) >= proxies else hops[0]
    try:
        return str(ipaddress.ip_address(seen))
    except ValueError:      # a proxy writing something else: no address to tell clients apart
        return peer


def wait_message(what: str, seconds: int, otherwise: str = "") -> str:
    """"<what>. Try again in N minutes<otherwise>.", N rounded up."""
    minutes = math.ceil(seconds / 60)
    return f"{what}. Try again in {minutes} minute{'s' if minutes != 1 else ''}{otherwise}."


# --- Log-in: django-axes ----------------------------------------------------------------------

def attempted_username(request, credentials: dict | None) -> str | None:
    """The username a log-in tried, lower-cased, so that changing its case counts against the
    same lock (AXES_USERNAME_CALLABLE)."""
    username = (credentials or {}).get("username") or request.POST.get("username")
    return str(username)[:150].lower() if username else None


def failures_per_address(request, credentials) -> int:
    """AXES_FAILURE_LIMIT: axes' own count, the most failures of any of the two kinds of lock,
    is the address's, so axes' own check is the address lock; `LoginLocks` adds the pair's."""
    return settings.LOGIN_FAILURES_PER_ADDRESS


def lockout_period(request) -> timedelta:
    """AXES_COOLOFF_TIME, read when used (tests change the setting)."""
    return timedelta(seconds=settings.LOGIN_LOCKOUT_S)


class LoginLocks(AxesDatabaseHandler):
    """Axes' database handler (AccessAttempt rows: a username, an address and a browser with
    their failures and the time of the last), with each kind of lock under its own limit:
    LOGIN_FAILURES_ALLOWED for a username from an address, LOGIN_FAILURES_PER_ADDRESS for an
    address (AXES_LOCKOUT_PARAMETERS names the two)."""

    @staticmethod
    def limit(parameters) -> int:
        return (settings.LOGIN_FAILURES_PER_ADDRESS if parameters == "ip_address"
                else settings.LOGIN_FAILURES_ALLOWED)

    def lock_seconds(self, request, credentials: dict | None = None) -> int:
        """Seconds until the request's username may try again from its address; 0 when it may
        now. A lock ends a lockout period after the newest failure without which the
        failures still counting would be under the limit."""
        period = get_cool_off(request)
        locks = zip(get_lockout_parameters(request, credentials),
                    self.get_user_attempts(request, credentials))
        ends = []
        for parameters, attempts in locks:
            counted = 0
            for failures, last in attempts.order_by("-attempt_time").values_list(
                    "failures_since_start", "attempt_time"):
                counted += failures
                if counted >= self.limit(parameters):
                    ends.append(last + period)
                    break
        if not ends:
            return 0
        return max(1, math.ceil((max(ends) - timezone.now()).total_seconds()))

    def is_locked(self, request, credentials: dict | None = None) -> bool:
        return self.lock_seconds(request, credentials) > 0

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        super().user_login_failed(sender, credentials, request, **kwargs)
        # Axes has locked the address if this failure reached its limit; the pair's is ours.
        if request is not None and not request.axes_locked_out and self.is_locked(
                request, credentials):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            user_locked_out.send("axes", request=request,
                                 username=attempted_username(request, credentials),
                                 ip_address=request.axes_ip_address)

    def user_logged_in(self, sender, request, user, **kwargs):
        super().user_logged_in(sender, request, user, **kwargs)
        # The pair's failures only: the address's others still count (axes' own reset on
        # success would clear them, letting a sprayer with one account start over).
        AccessAttempt.objects.filter(username=user.get_username().lower(),
                                     ip_address=request.axes_ip_address).delete()


def login_wait_seconds(request, username: str) -> int:
    """Seconds until `username` may try again from the request's address; 0 when it may."""
    AxesProxyHandler.update_request(request)
    handler = AxesProxyHandler.get_implementation()
    return handler.lock_seconds(request, {"username": username})


def lockout_response(request, original_response=None, credentials=None) -> HttpResponseBase:
    """AXES_LOCKOUT_CALLABLE: the log-in page as the form drew it, saying how long the lock
    lasts (ThrottledLoginForm), with status 429."""
    if isinstance(original_response, HttpResponseBase):
        original_response.status_code = 429
        return original_response
    username = attempted_username(request, credentials) or ""
    return HttpResponse(wait_message(TOO_MANY_LOGINS, login_wait_seconds(request, username)),
                        status=429, content_type="text/plain")


class ThrottledLoginForm(AuthenticationForm):
    """Django's log-in form, saying how long a lock lasts when axes refused the log-in (its
    backend, first in AUTHENTICATION_BACKENDS, refuses before the password is checked)."""

    def clean(self):
        try:
            return super().clean()
        except forms.ValidationError:
            if not getattr(self.request, "axes_locked_out", False):
                raise
            wait = login_wait_seconds(self.request, self.cleaned_data.get("username") or "")
            raise forms.ValidationError(
                wait_message(TOO_MANY_LOGINS, wait, ", or reset your password"),
                code="throttled") from None


class ThrottledAdminLoginForm(ThrottledLoginForm, AdminAuthenticationForm):
    """The admin site's log-in form, with the same message (explorer/admin.py)."""


# --- Sign-up and password reset: counters in the shared cache ---------------------------------

@dataclass(frozen=True)
class AddressLimit:
    """At most `allowed` tries per address within `window_s` seconds, `allowed` and `window_s`
    being the names of settings (read when used). Counted in the shared cache (Redis), so every
    web process and machine counts alike."""
    name: str
    allowed: str
    window_s: str
    message: str
    unavailable: str        # what is refused while the tries cannot be counted

    def key(self, address: str | None) -> str:
        return f"throttle:{self.name}:{address}"

    def try_once(self, address: str | None) -> int:
        """Counts a try from `address`: 0 when it may go ahead, else the seconds until the
        address's window ends. The window starts with its first try; a count and the window's
        end are kept under two keys that expire with it."""
        cache = caches["shared"]
        key, window, now = self.key(address), getattr(settings, self.window_s), time.time()
        if cache.add(key, 1, timeout=window):
            cache.set(f"{key}:ends", now + window, timeout=window)
            return 0
        try:
            count = cache.incr(key)
        except ValueError:      # the window ended between the two calls
            return self.try_once(address)
        if count <= getattr(settings, self.allowed):
            return 0
        return max(1, math.ceil(cache.get(f"{key}:ends", now + window) - now))

    def refused(self, address: str | None) -> tuple[str, int] | None:
        """Counts a try from `address` (try_once): None when it may go ahead, else what to tell
        the visitor and the status. When the shared cache does not answer (Redis down, or
        silent past settings.CACHE_REDIS_TIMEOUT_S), the try cannot be counted: it is refused
        (503) rather than let through uncounted, and the log says why."""
        try:
            wait = self.try_once(address)
        except Exception as error:      # the cache's client raises its own errors
            logger.warning("the %s limit could not count a try: %s: %s", self.name,
                           type(error).__name__, error)
            return (f"{self.unavailable}: the service that counts them is not answering. "
                    f"Try again in a minute.", 503)
        return (self.refusal(wait), 429) if wait else None

    def lift(self, address: str | None) -> None:
        caches["shared"].delete_many([self.key(address), f"{self.key(address)}:ends"])

    def refusal(self, seconds: int) -> str:
        return wait_message(self.message, seconds)


SIGNUPS = AddressLimit("signup", "SIGNUP_ATTEMPTS_ALLOWED", "SIGNUP_WINDOW_S",
                       "Too many sign-ups from your address", "Sign-ups are paused")
PASSWORD_RESETS = AddressLimit("password-reset", "PASSWORD_RESETS_ALLOWED",
                               "PASSWORD_RESET_WINDOW_S",
                               "Too many password resets asked for from your address",
                               "Password resets are paused")
ADDRESS_LIMITS = (SIGNUPS, PASSWORD_RESETS)
