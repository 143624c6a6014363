from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path, register_converter

from explorer import accounts, api_docs, gallery, plan_edits, teams, views
from explorer.converters import RowIdConverter
from explorer.throttle import ThrottledLoginForm

# Ids in addresses are <id:...>: a number past any id answers 404 (explorer/converters.py).
register_converter(RowIdConverter, "id")

urlpatterns = [
    path("", views.index, name="explorer-index"),
    path("r/<str:run_id>", views.run_page, name="explorer-run"),
    path("runs", views.history, name="explorer-history"),
    path("gallery", gallery.gallery, name="explorer-gallery"),
    path("compare", views.compare, name="explorer-compare"),
    path("compare/cuda", views.compare_cuda, name="explorer-compare-cuda"),
    path("r/<str:run_id>/settings", views.run_settings, name="explorer-run-settings"),
    path("r/<str:run_id>/retry", views.run_retry, name="explorer-run-retry"),
    path("r/<str:run_id>/baseline", views.run_baseline, name="explorer-run-baseline"),
    path("r/<str:run_id>/delete", views.run_delete, name="explorer-run-delete"),
    path("r/<str:run_id>/source", views.run_source, name="explorer-run-source"),
    path("r/<str:run_id>/status.json", views.run_status, name="explorer-run-status"),
    path("r/<str:run_id>/preview", views.run_preview, name="explorer-run-preview"),
    path("r/<str:run_id>/measure", views.measure, name="explorer-run-measure"),
    path("r/<str:run_id>/plan/<str:device>/<str:strategy>", views.plan_panel,
         name="explorer-plan-panel"),
    path("r/<str:run_id>/plan/<str:device>/<str:strategy>/decisions.json",
         views.plan_decisions, name="explorer-plan-decisions"),
    path("r/<str:run_id>/plan/<str:device>/<str:strategy>/plot/<str:chart>.json",
         views.plan_plot, name="explorer-plan-plot"),
    path("r/<str:run_id>/tuning/plot.json", views.tuning_plot, name="explorer-tuning-plot"),
    path("r/<str:run_id>/plan/<str:device>/<str:strategy>/plan.json", plan_edits.plan_file_view,
         name="explorer-plan-file"),
    path("r/<str:run_id>/whatif/<str:device>/<str:strategy>", plan_edits.whatif_view,
         name="explorer-whatif"),
    path("r/<str:run_id>/whatif/<str:device>/<str:strategy>/cuda", plan_edits.whatif_cuda,
         name="explorer-whatif-cuda"),
    path("r/<str:run_id>/plans", plan_edits.save_view, name="explorer-save-plan"),
    path("r/<str:run_id>/tune", plan_edits.tune_view, name="explorer-tune"),
    path("r/<str:run_id>/plans/<id:plan_id>", plan_edits.delete_saved,
         name="explorer-delete-plan"),
    path("r/<str:run_id>/<str:device>/<str:strategy>/<str:kernel>", views.kernel_page,
         name="explorer-kernel"),
    path("account/api-tokens", views.api_tokens, name="explorer-api-tokens"),
    path("cost-models", views.cost_models, name="explorer-cost-models"),
    path("teams", teams.teams, name="explorer-teams"),
    path("teams/invitations/<id:invite_id>", teams.invitation, name="explorer-invitation"),
    path("teams/<id:team_id>", teams.team_page, name="explorer-team"),
    path("teams/<id:team_id>/invites", teams.team_invite, name="explorer-team-invite"),
    path("teams/<id:team_id>/invites/<id:invite_id>/revoke", teams.team_invite_revoke,
         name="explorer-team-invite-revoke"),
    path("teams/<id:team_id>/members/<id:user_id>", teams.team_member,
         name="explorer-team-member"),
    path("teams/<id:team_id>/leave", teams.team_leave, name="explorer-team-leave"),
    path("invite/<str:key>", accounts.invite_page, name="explorer-invite"),
    path("api/", api_docs.api_root, name="explorer-api-root"),
    path("api/docs", api_docs.api_docs, name="explorer-api-docs"),
    path("api/v1/", include("explorer.api_urls")),
    # Django's log-in, locked after repeated failures (explorer/throttle.py).
    path("accounts/login/", LoginView.as_view(authentication_form=ThrottledLoginForm),
         name="login"),
    path("accounts/signup/", accounts.signup, name="explorer-signup"),
    # Django's password reset, limited per address (before django.contrib.auth.urls' own).
    path("accounts/password_reset/", accounts.password_reset, name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
]

# The site's own 404 page, which shows no exception of Django's (explorer/views.py), and its 400
# page, which answers pasted text past the form's limit on the upload page.
handler404 = views.not_found
handler400 = views.bad_request
