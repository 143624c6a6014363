"""Django admin for staff: runs (with their kernels), measurements, teams and memberships,
invites, API tokens, and axes' log-in attempts (deleting one lifts its lock)."""
from axes.models import AccessFailureLog, AccessLog
from django.contrib import admin
from django.urls import reverse

from explorer.models import ApiToken, Invite, KernelSource, Measurement, Membership, Run, Team
from explorer.throttle import ThrottledAdminLoginForm

# The admin's log-in is locked after repeated failures like the site's (explorer/throttle.py).
admin.site.login_form = ThrottledAdminLoginForm
# Axes' logs of successful and of every failed log-in are not kept (AXES_DISABLE_ACCESS_LOG;
# AccessAttempt holds the failures that count): no empty pages for them.
admin.site.unregister([AccessLog, AccessFailureLog])


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "member_count"]
    search_fields = ["name"]
    inlines = [MembershipInline]

    @admin.display(description="members")
    def member_count(self, team: Team) -> int:
        return team.memberships.count()


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]


class KernelSourceInline(admin.TabularInline):
    model = KernelSource
    fields = ["device", "strategy", "kernel", "function"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "filename", "owner", "visibility", "team", "status", "stage",
                    "attempts", "created", "finished"]
    list_filter = ["status", "visibility", "team", "compiler_version"]
    search_fields = ["id", "name", "filename", "owner__username"]
    date_hierarchy = "created"
    # The graph is large and written by workers only (the artifact has a table of its own).
    exclude = ["graph"]
    readonly_fields = ["id", "devices", "strategies", "compiler_version", "status", "stage",
                       "progress_done", "progress_total", "error", "error_stage", "created",
                       "started", "finished", "claimed_by", "lease_expires", "attempts"]
    inlines = [KernelSourceInline]


@admin.register(KernelSource)
class KernelSourceAdmin(admin.ModelAdmin):
    list_display = ["run", "device", "strategy", "kernel", "function"]
    list_filter = ["device", "strategy"]
    search_fields = ["run__id", "kernel", "function"]
    raw_id_fields = ["run"]


@admin.register(Measurement)
class MeasurementAdmin(admin.ModelAdmin):
    """Measurement jobs are asked for on run pages or through the API and run by GPU workers;
    here staff follow them (a stuck or failed one shows its claim and error)."""
    list_display = ["pk", "run", "status", "stage", "gpu", "requested_by", "attempts",
                    "created", "finished"]
    list_filter = ["status", "gpu"]
    search_fields = ["run__id", "gpu", "claimed_by"]
    raw_id_fields = ["run", "requested_by"]
    exclude = ["result"]  # large, written by the worker
    readonly_fields = ["gpu", "compiler_version", "status", "stage", "progress_done",
                       "progress_total", "error", "error_stage", "created", "started",
                       "finished", "claimed_by", "lease_expires", "attempts"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are made with `manage.py create_api_token` (the key is shown once); here staff
    see who has which and when it was used, and revoke one by deleting it."""
    list_display = ["user", "name", "created", "last_used"]
    search_fields = ["user__username", "name"]
    readonly_fields = ["user", "name", "created", "last_used"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    """Staff make site invites here (no team: a sign-up link for SIGNUP_INVITE_ONLY) or with
    `manage.py create_invite`, and see or revoke (delete) any team's invites; the link is
    shown once the invite is saved."""
    list_display = ["pk", "team", "invitee", "created_by", "uses", "max_uses", "expires"]
    list_filter = ["team"]
    search_fields = ["team__name", "invitee__username", "created_by__username"]
    raw_id_fields = ["invitee"]
    fields = ["team", "invitee", "max_uses", "expires", "uses", "created_by", "used_by", "link"]
    readonly_fields = ["uses", "created_by", "used_by", "link"]

    @admin.display(description="link (path on this site)")
    def link(self, invite: Invite) -> str:
        if invite.pk is None or not invite.is_link:
            return "–"
        return reverse("explorer-invite", args=[invite.token])

    def save_model(self, request, invite: Invite, form, change: bool) -> None:
        if not change:
            invite.created_by = request.user
        super().save_model(request, invite, form, change)
