"""Teams run by their members: the teams page, a team's page (its runs reviewed, its members,
its invites) and the actions on them. The rules (owners, invites) are in
explorer/account_models.py.

Access: a team's page and its actions are for its members only; anyone else, staff included,
gets a 404, never a 403, so a team's id says nothing to a stranger (an anonymous visitor is
sent to log in first). Among members, inviting, revoking invites and changing or removing
members are for owners: another member gets a 403.

The review. A team's runs are the runs shared with it (visibility "team", or "public" with the
team named); a run its owner keeps private is not the team's even if it names the team. The
page lists them newest first (who ran what, when, each device's best plan) and, above, the
best plan of every graph they ran: per graph and device, the lowest projected total of any
run's plans, with the run and person that reached it (the earliest, on a tie). Both follow the
filters (a tag, a graph, a member).

Tracked graphs. A run marked the baseline of a tag (TagBaseline: `main`, what the main
branch's CI uploads) makes its graph tracked: the page shows, per baseline, the latest
finished run of the graph carrying the tag against the baseline, and the trend of the best
projected total over those runs, oldest first (a chart drawn on the server).
"""
from __future__ import annotations

import math

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from explorer.account_forms import LinkInviteForm, RoleForm, TeamForm, UserInviteForm
from explorer.account_models import (OWNER, ROLE_NAMES, Invite, LastOwner, create_team,
                                     remove_member, set_role)
from explorer.charts import Line, Point, line_chart
from explorer.documents import best_totals
from explorer.models import Membership, Run, TagBaseline, Team
from explorer.runs import holding

TEAM_RUNS_PAGE_SIZE = 50


def _membership(request: HttpRequest, team_id: int) -> Membership:
    """The user's membership of the team; 404 when they are not a member."""
    membership = Membership.objects.select_related("team") \
        .filter(team_id=team_id, user=request.user).first()
    if membership is None:
        raise Http404("No such team.")
    return membership


def _ownership(request: HttpRequest, team_id: int, action: str) -> Membership:
    """The user's membership of the team, which must be an owner's: 404 for a stranger, 403
    for a member who is not an owner."""
    membership = _membership(request, team_id)
    if membership.role != OWNER:
        raise PermissionDenied(f"Only the team's owners can {action}.")
    return membership


def _team_url(team_id: int, section: str = "") -> str:
    url = reverse("explorer-team", args=[team_id])
    return f"{url}#{section}" if section else url


# --- The teams page -----------------------------------------------------------------------------

@login_required
@require_http_methods(["GET", "POST"])
def teams(request: HttpRequest) -> HttpResponse:
    """The user's teams and open invitations, and a form that makes a team (its maker becomes
    its owner)."""
    form = TeamForm(request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        team = create_team(form.cleaned_data["name"], request.user)
        messages.success(request, f"Made the team {team.name}: invite people from its page.")
        return redirect("explorer-team", team_id=team.pk)
    memberships = Membership.objects.filter(user=request.user).select_related("team") \
        .annotate(members=Count("team__memberships", distinct=True)).order_by("team__name")
    shared = Run.objects.filter(team__in=[m.team_id for m in memberships],
                                visibility__in=(Run.TEAM, Run.PUBLIC)).order_by()
    run_counts = dict(shared.values_list("team").annotate(Count("pk")))
    rows = [{"membership": m, "role": ROLE_NAMES[m.role], "runs": run_counts.get(m.team_id, 0)}
            for m in memberships]
    invitations = Invite.open().filter(invitee=request.user) \
        .select_related("team", "created_by")
    return render(request, "explorer/teams.html",
                  {"rows": rows, "invitations": invitations, "form": form},
                  status=400 if form.is_bound else 200)


@login_required
@require_POST
def invitation(request: HttpRequest, invite_id: int) -> HttpResponse:
    """The invitee accepts (answer=accept) or declines an invitation by name."""
    invite = Invite.objects.select_related("team") \
        .filter(pk=invite_id, invitee=request.user).first()
    if invite is None:
        raise Http404("No such invitation.")
    if request.POST.get("answer") != "accept":
        invite.delete()
        messages.info(request, f"Declined the invitation to {invite.team.name}.")
        return redirect("explorer-teams")
    if not invite.redeem(request.user):
        messages.error(request, invite.problem or "This invitation can no longer be used.")
        return redirect("explorer-teams")
    messages.success(request, f"You joined the team {invite.team.name}.")
    return redirect("explorer-team", team_id=invite.team_id)


# --- A team's page ------------------------------------------------------------------------------

@login_required
@require_GET
def team_page(request: HttpRequest, team_id: int) -> HttpResponse:
    """The team's runs reviewed, its members and, for owners, its invites."""
    return _render_team(request, _membership(request, team_id))


def _render_team(request: HttpRequest, membership: Membership, link_form=None,
                 user_form=None, status: int = 200) -> HttpResponse:
    team = membership.team
    is_owner = membership.role == OWNER
    members = [{"membership": m, "role": ROLE_NAMES[m.role]} for m in
               team.memberships.select_related("user").order_by("role", "user__username")]
    context = {"team": team, "membership": membership, "role": ROLE_NAMES[membership.role],
               "is_owner": is_owner, "members": members, "roles": list(ROLE_NAMES.items()),
               "tracked": tracked_graphs(team), **team_review(team, request.GET)}
    if is_owner:
        pending = Invite.open().filter(team=team).select_related("invitee", "created_by")
        context.update({
            "links": [{"invite": invite,
                       "url": request.build_absolute_uri(
                           reverse("explorer-invite", args=[invite.token]))}
                      for invite in pending if invite.is_link],
            "invitations": [invite for invite in pending if not invite.is_link],
            "link_form": link_form or LinkInviteForm(),
            "user_form": user_form or UserInviteForm(team=team),
        })
    return render(request, "explorer/team.html", context, status=status)


def shared_runs(team: Team) -> QuerySet[Run]:
    """The team's runs: those shared with it (see the module docstring)."""
    return Run.shared_with(team)


# The review's filters: the query parameter and what it matches.
REVIEW_FILTERS = ("tag", "graph", "member")


def team_review(team: Team, query) -> dict:
    """The review's context: the filters' choices and values, the best plan per graph and
    device, and a page of the runs (each with its best plan per device)."""
    everything = list(shared_runs(team).order_by("-created").values_list(
        "pk", "graph_sha256", "name", "filename", "tags", "owner__username"))
    graphs, tags, members = {}, set(), set()
    for _, digest, name, filename, run_tags, owner in everything:
        graphs.setdefault(digest, name or filename)   # newest first: the newest run's label
        tags.update(run_tags)
        members.add(owner)
    wanted = {key: query.get(key) for key in REVIEW_FILTERS if query.get(key)}
    chosen = [pk for pk, digest, _, _, run_tags, owner in everything
              if wanted.get("graph", digest) == digest and wanted.get("member", owner) == owner
              and ("tag" not in wanted or wanted["tag"] in run_tags)]
    runs = list(Run.objects.filter(pk__in=chosen).select_related("owner")
                .order_by("-created"))
    best = best_totals(runs)
    page = Paginator(runs, TEAM_RUNS_PAGE_SIZE).get_page(query.get("page"))
    filters = query.copy()
    filters.pop("page", None)
    return {
        "choices": {"tag": sorted(tags), "member": sorted(members),
                    "graph": sorted(graphs.items(), key=lambda item: item[1].lower())},
        "wanted": wanted, "filters": filters.urlencode(),
        "best_plans": best_per_graph(runs, best, graphs),
        "page": page, "rows": [{"run": run, "best": best.get(run.pk, [])} for run in page],
        "run_count": len(everything),
    }


def best_per_graph(runs: list[Run], best: dict[str, list[dict]],
                   labels: dict[str, str]) -> list[dict]:
    """One row per graph and device: the lowest projected total any of `runs` reached there,
    its strategy, run and owner, and how many of the runs are of that graph. Graphs in the
    order of their labels; the earliest run wins a tie."""
    graphs: dict[str, dict] = {}
    for run in sorted(runs, key=lambda run: run.created):
        graph = graphs.setdefault(run.graph_sha256, {"runs": 0, "devices": {}})
        graph["runs"] += 1
        for entry in best.get(run.pk, []):
            total = entry["proj_us"] if entry["proj_us"] is not None else math.inf
            held = graph["devices"].get(entry["device"])
            if held is None or total < held["total"]:
                graph["devices"][entry["device"]] = {**entry, "total": total, "run": run}
    rows = []
    for digest, graph in sorted(graphs.items(), key=lambda item: labels[item[0]].lower()):
        for device, entry in sorted(graph["devices"].items()):
            rows.append({"graph": digest, "label": labels[digest], "runs": graph["runs"],
                         "device": device, "strategy": entry["strategy"],
                         "proj_us": entry["proj_us"], "run": entry["run"]})
    return rows


TREND_COLOUR, BASELINE_COLOUR, LATEST_COLOUR = "#4c72b0", "#687087", "#d62728"


def tracked_graphs(team: Team) -> list[dict]:
    """Per baseline of the team: the graph, the tag, the device (the baseline's first), the
    baseline and the latest run of the tag with their best projected totals, the change, and
    the trend chart."""
    tracked = []
    for baseline in team.baselines.select_related("run"):
        runs = tagged_runs(team, baseline)
        best = best_totals(runs)
        device = next((entry["device"] for entry in best.get(baseline.run_id, [])), None)

        def total(run: Run) -> float | None:
            return next((entry["proj_us"] for entry in best.get(run.pk, [])
                         if entry["device"] == device), None)

        latest = runs[-1]
        before, after = total(baseline.run), total(latest)
        tracked.append({
            "baseline": baseline, "device": device, "runs": len(runs), "latest": latest,
            "baseline_us": before, "latest_us": after,
            "change": after / before - 1 if before and after is not None else None,
            "chart": trend_chart(baseline, runs, [total(run) for run in runs]),
        })
    return tracked


def tagged_runs(team: Team, baseline: TagBaseline) -> list[Run]:
    """The team's finished runs of the baseline's graph (by title) that carry its tag, and
    the baseline itself, oldest first."""
    titled = Run.shared_with(team).filter(status=Run.DONE).filter(
        Q(name=baseline.graph_name) | Q(name="", filename=baseline.graph_name))
    runs = {run.pk: run for run in holding(titled, {"tags": baseline.tag})}
    runs.setdefault(baseline.run_id, baseline.run)
    return sorted(runs.values(), key=lambda run: run.created)


def trend_chart(baseline: TagBaseline, runs: list[Run], totals: list[float | None]):
    """The best projected total of each run, in order, with the baseline and the latest run
    marked."""
    numbers = list(range(1, len(runs) + 1))
    points = [Point(f"baseline ({baseline.run.title})", numbers[runs.index(baseline.run)],
                    totals[runs.index(baseline.run)], BASELINE_COLOUR),
              Point("latest", numbers[-1], totals[-1], LATEST_COLOUR)]
    return line_chart(f"{baseline.graph_name} · {baseline.tag}: best projected total",
                      [Line("best projected total", numbers, totals, TREND_COLOUR)],
                      [point for point in points if point.y is not None],
                      f"runs tagged {baseline.tag}, oldest first", "µs")


# --- Owners' and members' actions ---------------------------------------------------------------

@login_required
@require_POST
def team_invite(request: HttpRequest, team_id: int) -> HttpResponse:
    """An owner invites: a link (kind=link, for `uses` people, valid `days`) or a user by
    name (kind=user), who accepts on their teams page."""
    membership = _ownership(request, team_id, "invite people")
    team = membership.team
    if request.POST.get("kind") == "user":
        user_form = UserInviteForm(request.POST, team=team)
        if not user_form.is_valid():
            return _render_team(request, membership, user_form=user_form, status=400)
        invitee = user_form.cleaned_data["username"]
        Invite.invite_user(team, request.user, invitee)
        messages.success(request, f"Invited {invitee.get_username()}: they accept on their "
                                  "Teams page.")
        return redirect(_team_url(team.pk, "invites"))
    link_form = LinkInviteForm(request.POST)
    if not link_form.is_valid():
        return _render_team(request, membership, link_form=link_form, status=400)
    Invite.make(request.user, team, max_uses=link_form.cleaned_data["uses"],
                days=link_form.cleaned_data["days"])
    messages.success(request, "Made an invite link: copy it from the list below.")
    return redirect(_team_url(team.pk, "invites"))


@login_required
@require_POST
def team_invite_revoke(request: HttpRequest, team_id: int, invite_id: int) -> HttpResponse:
    """An owner revokes one of the team's invites (a link stops working at once)."""
    team = _ownership(request, team_id, "revoke invites").team
    invite = Invite.objects.filter(team=team, pk=invite_id).first()
    if invite is None:
        raise Http404("No such invite.")
    invite.delete()
    messages.success(request, "Revoked the invite.")
    return redirect(_team_url(team.pk, "invites"))


@login_required
@require_POST
def team_member(request: HttpRequest, team_id: int, user_id: int) -> HttpResponse:
    """An owner changes a member's role (role=owner|member) or removes them (action=remove);
    the team keeps at least one owner."""
    team = _ownership(request, team_id, "change members").team
    target = team.memberships.select_related("user").filter(user_id=user_id).first()
    if target is None:
        raise Http404("No such member.")
    name = target.user.get_username()
    try:
        if request.POST.get("action") == "remove":
            remove_member(team, target.user)
            messages.success(request, f"Removed {name} from {team.name}.")
            if target.user == request.user:
                return redirect("explorer-teams")
        else:
            form = RoleForm(request.POST)
            if not form.is_valid():
                return HttpResponseBadRequest("role must be owner or member")
            role = form.cleaned_data["role"]
            set_role(team, target.user, role)
            messages.success(request, f"{name} is now {ROLE_NAMES[role]} of {team.name}.")
    except LastOwner as error:
        messages.error(request, str(error))
    return redirect(_team_url(team.pk, "members"))


@login_required
@require_POST
def team_leave(request: HttpRequest, team_id: int) -> HttpResponse:
    """A member leaves the team; its last owner cannot (make another member an owner
    first)."""
    team = _membership(request, team_id).team
    try:
        remove_member(team, request.user)
    except LastOwner as error:
        messages.error(request, str(error))
        return redirect(_team_url(team.pk, "members"))
    messages.success(request, f"You left {team.name}.")
    return redirect("explorer-teams")
