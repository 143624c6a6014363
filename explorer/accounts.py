"""Sign-up and invite links (the views; the rules are in explorer/account_models.py).

Log-in (locked after failures, explorer/throttle.py), log-out and password change and reset are
Django's own views, routed under accounts/ by django.contrib.auth.urls and drawn by our templates
in templates/registration/; a reset link goes out through EMAIL_BACKEND (the console by default).
The reset form may be sent PASSWORD_RESETS_ALLOWED times per address within
PASSWORD_RESET_WINDOW_S (`password_reset`).

Sign-up makes an account and logs it in. With SIGNUP_INVITE_ONLY it needs an invite link that
can still be used (a team's, or one staff made); without, a link is optional and a team's link
makes the new user a member. The form may be sent SIGNUP_ATTEMPTS_ALLOWED times per address
within SIGNUP_WINDOW_S (explorer/throttle.py SIGNUPS), valid or not, which slows both account
farming and probing for taken usernames and addresses.
"""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.views import PasswordResetView, redirect_to_login
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_http_methods

from explorer.account_forms import SignupForm
from explorer.account_models import Invite
from explorer.models import Membership
from explorer.throttle import PASSWORD_RESETS, SIGNUPS, client_address

INVALID_INVITE = "This invite link is not valid: check that it was copied whole, or ask for a " \
                 "new one."


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    """The sign-up form (?invite=<token> carries an invite link's token through it)."""
    data = request.POST if request.method == "POST" else request.GET
    token = data.get("invite") or request.GET.get("invite", "")
    invite = Invite.from_token(token) if token else None
    problem = (INVALID_INVITE if token and invite is None
               else invite.problem if invite is not None else "")
    context = {"invite": invite if not problem else None, "token": token if not problem else "",
               "invite_problem": problem, "next": data.get("next", "")}
    if settings.SIGNUP_INVITE_ONLY and context["invite"] is None:
        return render(request, "registration/signup.html", context, status=403)
    if request.method == "GET":
        return render(request, "registration/signup.html", {**context, "form": SignupForm()})

    refused = SIGNUPS.refused(client_address(request))
    if refused:
        context["throttled"], status = refused
        form = SignupForm(initial={"username": data.get("username", ""),
                                   "email": data.get("email", "")})
        return render(request, "registration/signup.html", {**context, "form": form},
                      status=status)
    form = SignupForm(data)
    if not form.is_valid():
        return render(request, "registration/signup.html", {**context, "form": form},
                      status=400)
    invite = context["invite"]
    with transaction.atomic():
        user = form.save()
        joined = invite is not None and invite.redeem(user)
        if invite is not None and not joined and settings.SIGNUP_INVITE_ONLY:
            # Used up by someone else while this form was being filled in: no account.
            transaction.set_rollback(True)
    if invite is not None and not joined:
        problem = "This invite was used up or expired while you signed up."
        if settings.SIGNUP_INVITE_ONLY:
            return render(request, "registration/signup.html",
                          {**context, "invite": None, "invite_problem": problem}, status=403)
        messages.warning(request, f"{problem} Your account is made; ask for a new invite.")
    # Logged in by the backend that reads users (the other, axes', only checks locks).
    login(request, user, backend="explorer.lookups.ModelBackend")
    messages.success(request, f"Welcome, {user.get_username()}: you are logged in.")
    if joined and invite.team_id:
        messages.success(request, f"You joined the team {invite.team.name}.")
        return redirect("explorer-team", team_id=invite.team_id)
    wanted = data.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()},
                                                  require_https=request.is_secure()):
        return redirect(wanted)
    return redirect(resolve_url(settings.LOGIN_REDIRECT_URL))


django_password_reset = PasswordResetView.as_view()


@require_http_methods(["GET", "POST"])
def password_reset(request: HttpRequest) -> HttpResponse:
    """Django's password-reset form, refused (429) past the address's limit, or (503) while the
    limit cannot count (throttle.AddressLimit.refused): each form sent may e-mail someone."""
    if request.method == "POST":
        refused = PASSWORD_RESETS.refused(client_address(request))
        if refused:
            message, status = refused
            form = PasswordResetForm(initial={"email": request.POST.get("email", "")})
            return render(request, "registration/password_reset_form.html",
                          {"form": form, "throttled": message}, status=status)
    return django_password_reset(request)


@require_http_methods(["GET", "POST"])
def invite_page(request: HttpRequest, key: str) -> HttpResponse:
    """An invite link: to a visitor, sign up (or log in) to join; to a user, a button that
    joins the team (the POST). A link that is used up or expired says so (410)."""
    invite = Invite.from_token(key)
    if invite is None:
        raise Http404(INVALID_INVITE)
    user = request.user
    member = (user.is_authenticated and invite.team_id is not None
              and Membership.objects.filter(team_id=invite.team_id, user=user).exists())
    if request.method == "POST":
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        if invite.team_id is None:
            return redirect("explorer-index")
        if member:
            messages.info(request, f"You are a member of {invite.team.name} already.")
            return redirect("explorer-team", team_id=invite.team_id)
        if invite.redeem(user):
            messages.success(request, f"You joined the team {invite.team.name}.")
            return redirect("explorer-team", team_id=invite.team_id)
        invite.refresh_from_db()
    context = {"invite": invite, "member": member, "problem": invite.problem, "key": key,
               "signup_url": f"{reverse('explorer-signup')}?{urlencode({'invite': key})}",
               "login_url": f"{reverse('login')}?{urlencode({'next': request.path})}"}
    status = 200 if member or not invite.problem else 410
    return render(request, "explorer/invite.html", context, status=status)
