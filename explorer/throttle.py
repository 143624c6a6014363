"""Log-in throttling: password guessing is locked out, a user's own log-in is not.

Every failed log-in is recorded (`LoginFailure`, from Django's `user_login_failed` signal).
Within a window of LOGIN_LOCKOUT_S seconds (default 900):
- a username tried from one address fails LOGIN_FAILURES_ALLOWED times (default 5): that
  pair is locked until the oldest of those failures leaves the window; the right password
  is refused too, so guessing gains nothing, while the same user from their own machine
  can still log in (a stranger cannot lock a user out from elsewhere);
- one address fails LOGIN_FAILURES_PER_ADDRESS times (default 30) whatever the usernames:
  that address is locked the same way (spraying many usernames).
A successful log-in clears the pair's failures. The log-in forms (`ThrottledLoginForm`, and
the admin site's `ThrottledAdminLoginForm`) say how long the lock lasts; the check costs two
indexed queries.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.dispatch import receiver
from django.utils import timezone

from explorer.models import LoginFailure


def client_address(request) -> str | None:
    """The caller's address: REMOTE_ADDR (behind a proxy, the proxy sets it through the WSGI
    server's forwarded-for handling; a raw X-Forwarded-For header is not trusted)."""
    return (request.META.get("REMOTE_ADDR") or None) if request is not None else None


def lock_seconds(username: str, ip: str | None) -> int:
    """Seconds until `username` may try again from `ip`; 0 when it may now."""
    window = timedelta(seconds=settings.LOGIN_LOCKOUT_S)
    since = timezone.now() - window
    recent = LoginFailure.objects.filter(at__gte=since)
    pair = list(recent.filter(username=username.lower(), ip=ip)
                .order_by("-at").values_list("at", flat=True)[:settings.LOGIN_FAILURES_ALLOWED])
    waits = []
    if len(pair) >= settings.LOGIN_FAILURES_ALLOWED:
        waits.append(pair[-1] + window)
    if ip is not None:
        limit = settings.LOGIN_FAILURES_PER_ADDRESS
        spread = list(recent.filter(ip=ip).order_by("-at").values_list("at", flat=True)[:limit])
        if len(spread) >= limit:
            waits.append(spread[-1] + window)
    if not waits:
        return 0
    return max(1, math.ceil((max(waits) - timezone.now()).total_seconds()))


@receiver(user_login_failed)
def _record_failure(sender, credentials, request=None, **kwargs):
    username = str(credentials.get("username") or "")[:150].lower()
    LoginFailure.objects.create(username=username, ip=client_address(request))
    # Old failures are never read again.
    LoginFailure.objects.filter(
        at__lt=timezone.now() - timedelta(seconds=settings.LOGIN_LOCKOUT_S)).delete()


@receiver(user_logged_in)
def _clear_failures(sender, request, user, **kwargs):
    LoginFailure.objects.filter(username=user.get_username().lower(),
                                ip=client_address(request)).delete()


class ThrottledLoginForm(AuthenticationForm):
    """Django's log-in form, refusing before it checks the password while locked out."""

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        wait = lock_seconds(username, client_address(self.request))
        if wait:
            minutes = math.ceil(wait / 60)
            raise forms.ValidationError(
                f"Too many failed log-ins for this account from your address. Try again in "
                f"{minutes} minute{'s' if minutes != 1 else ''}.", code="throttled")
        return super().clean()


class ThrottledAdminLoginForm(ThrottledLoginForm, AdminAuthenticationForm):
    """The admin site's log-in form, under the same locks (explorer/admin.py)."""
