"""Who may open what: an access check on every route of the URL conf, generated from it.

The matrix. `url_routes()` walks Django's URL resolver (includes and all) and lists every
route. Each one must have an entry in ROUTES below: the requests worth making to it (a method,
what a POST sends) and, for each, its access RULE. A test case is generated for every cell

    route × method × who asks × the visibility of the run it is about

where "who asks" is the owner, a teammate (same team), a stranger (logged in, in no team),
a staff user and an anonymous visitor, and for the API also each logged-in user's API key
(`Authorization: Bearer`) and the owner's read-only key (refused, 403, on every method but
GET). A run-scoped route is asked about a finished run (a failed one, for retry) of each
visibility: private, team and public. Each case asserts the rule's outcome:

- allowed: the route's success code (200, or what Access.ok says: a redirect after a POST,
  201/202/204 in the API);
- not allowed to see the run: 404, for pages and the API alike;
- allowed to see the run but not its owner, on an owner's action: 403;
- nobody logged in, where a login is needed: a redirect to the log-in page (pages), 401 (API).

Besides the status, every case checks that the body names no run (name or file name) the
asker may not see; a route that lists runs must name every run the asker may see; a denied
request about a run reads exactly like the same request about a run that does not exist
(same status, body and redirect), so a run's existence does not leak; and a request that may
change something changed nothing in the database when it was denied (and something when it
was allowed, which proves that check can fail).

A route in the URL conf without an entry in ROUTES fails `test_every_route_has_a_declared_rule`
and an entry for a route that is gone fails `test_every_declared_route_exists`, so a new route
cannot skip the matrix. So does a method a view accepts but ROUTES does not declare
(`test_..._refuses_undeclared_methods`, for the project's own views).

Each cell is a test method of AccessMatrixTests (named like
test_explorer_run_get_as_stranger_on_a_private_run), added when this module is imported, rather
than a pytest parameter: a TestCase method runs in its own rolled-back transaction (an allowed
delete or retry does not touch the next case) while setUpTestData makes the users and runs once.

Declaring a new route: add `"<its URL name>": (Access(<rule>, ...), ...)` to ROUTES, one Access
per method worth checking (see Rule for the rules and Access for the options). Path parameters
get their values from ARGUMENTS by name; a route with a new parameter name needs one there.

Left out on purpose: Django's admin (its own staff-only access, tests/explorer/test_admin.py)
and static-file routes (WhiteNoise serves those from middleware; none are in the URL conf with
DEBUG off). Django's auth views are in the matrix, GET only (and the log-out and password-reset
POSTs): their forms are Django's, the log-in POST is tested in test_login_throttle.py.
`accounts/login/` and `accounts/password_reset/` appear twice in the URL conf (the project's
throttled views, then django.contrib.auth.urls' own); a route shadowed by an earlier one with
the same path is never reached and is not listed.

Team routes have rules of their own (TEAM, TEAM_OWNER, INVITEE): in the matrix the owner is the
team's owner and the teammate a member who is not (a third member, not an asker, is an owner
too, so the owner may leave); the stranger holds an invitation by name to the team, and
`invite/<key>` is a link to it. The teams' flows are tested in test_teams_view.py.

Permalink ids are tested in test_models.py. Team spoofing (sharing a run with a team one is
not in: the upload form, the API's submission, a run's settings) and revoking another user's
API key are tested by hand-written cases at the end of AccessMatrixTests.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from django.contrib.auth.models import User
from django.test import SimpleTestCase
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from explorer.account_models import OWNER
from explorer.models import (ApiToken, Invite, KernelSource, Measurement, Membership, Run,
                             SavedPlan, TagBaseline, Team, TuneJob)
from tests.explorer.access import SOFTMAX, AccessTestCase
from tests.explorer.measurements import GPU, measurement_result

# --- The routes of the URL conf -----------------------------------------------------------------

# Whole includes left out, by their app name (see the module docstring).
EXCLUDED_APPS = {"admin"}
EXCLUDED_VIEWS = {"django.views.static.serve", "django.contrib.staticfiles.views.serve"}


@dataclass(frozen=True)
class Route:
    name: str       # the URL name, or the path where a route has none
    path: str       # the whole route, e.g. "api/v1/runs/<str:run_id>"
    view: str       # module.function of the view

    @property
    def parameters(self) -> list[str]:
        return re.findall(r"<(?:\w+:)?(\w+)>", self.path)

    @property
    def own(self) -> bool:
        """A view of this project (not one of Django's)."""
        return self.view.startswith("explorer.")

    def __str__(self) -> str:
        return f"{self.name} ({self.path or '/'}, {self.view})"


def url_routes() -> list[Route]:
    """Every route a request can reach, in resolution order."""
    routes, paths = [], set()

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            path = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if pattern.app_name not in EXCLUDED_APPS:
                    walk(pattern.url_patterns, path)
                continue
            assert isinstance(pattern, URLPattern)
            callback = pattern.callback
            view = f"{callback.__module__}.{getattr(callback, '__name__', type(callback))}"
            if view in EXCLUDED_VIEWS or path in paths:
                continue
            paths.add(path)
            routes.append(Route(pattern.name or path, path, view))

    walk(get_resolver().url_patterns, "")
    return routes


# --- Who asks, and what they may see --------------------------------------------------------------

@dataclass(frozen=True)
class Asker:
    name: str               # the case's name
    user: str | None        # the AccessMatrixTests attribute of the user; None: anonymous
    token: bool = False         # authenticated by the user's API key rather than a session
    read_only: bool = False     # the key's scope is READ: GET requests only

    @property
    def anonymous(self) -> bool:
        return self.user is None


PAGE_ASKERS = (Asker("owner", "owner"), Asker("teammate", "teammate"),
               Asker("stranger", "stranger"), Asker("staff", "staff"),
               Asker("anonymous", None))
API_ASKERS = PAGE_ASKERS + tuple(Asker(f"{user}_token", user, token=True)
                                 for user in ("owner", "teammate", "stranger", "staff")) \
    + (Asker("owner_read_only_token", "owner", token=True, read_only=True),)

VISIBILITIES = (Run.PRIVATE, Run.TEAM, Run.PUBLIC)
# Who may see a run of each visibility, written out rather than asked of Run.can_view, which
# is under test here too. (None: the anonymous visitor.)
VIEWERS = {
    Run.PRIVATE: {"owner", "staff"},
    Run.TEAM: {"owner", "teammate", "staff"},
    Run.PUBLIC: {"owner", "teammate", "stranger", "staff", None},
}
# Who is in the team, who owns it, and who holds its invitation by name (written out too).
TEAM_MEMBERS = {"owner", "teammate"}
TEAM_OWNERS = {"owner"}
INVITEES = {"stranger"}


# --- Rules ----------------------------------------------------------------------------------------

OK, LOG_IN = "allowed", "sent to log in"
UNAUTHORISED, FORBIDDEN, NOT_FOUND = 401, 403, 404


class Rule(Enum):
    """Who may use a route; `outcome` says what one asker gets. (Staff may see every run but
    are not its owner. Each rule's text must differ: Enum makes equal values one member.)"""
    PUBLIC = "anyone, logged in or not"
    LOGIN = "anyone logged in; anonymous visitors are sent to log in"
    RUN = "whoever may see the run; 404 for the others (anonymous: sent to log in)"
    RUN_LOGIN = "whoever is logged in and may see the run; 404 for the others (anonymous: " \
                "sent to log in)"
    RUN_OWNER = "the run's owner; 403 for others who may see it, 404 for the rest (anonymous: " \
                "sent to log in)"
    API_LOGIN = "anyone authenticated (a session or an API key); 401 for no credentials"
    API_RUN = "anyone authenticated who may see the run; 404 for the others, 401 for no " \
              "credentials"
    API_RUN_ANONYMOUS = "whoever may see the run, credentials or not; 404 for the others"
    API_RUN_OWNER = "the run's owner, authenticated; 403 for others who may see it, 404 for " \
                    "the rest, 401 for no credentials"
    RUN_EDITOR = "the run's owner, staff, and the team of a team run (who may add plans to " \
                 "it); 403 for others who may see it, 404 for the rest (anonymous: sent to " \
                 "log in)"
    API_RUN_EDITOR = "as RUN_EDITOR, authenticated; 401 for no credentials"
    TEAM = "the team's members; 404 for the others, staff included (anonymous: sent to log in)"
    RUN_TEAM = "the members of the run's team; 403 for others who may see the run (a run of " \
               "no team included), 404 for the rest (anonymous: sent to log in)"
    API_TEAM = "the team's members, authenticated; 404 for the others, staff included, 401 " \
               "for no credentials"
    API_RUN_TEAM = "the members of the run's team, authenticated; 403 for others who may see " \
                   "the run (a run of no team included), 404 for the rest, 401 for no " \
                   "credentials"
    TEAM_OWNER = "the team's owners; 403 for its other members, 404 for the rest (anonymous: " \
                 "sent to log in)"
    INVITEE = "the user the invitation names; 404 for the others (anonymous: sent to log in)"

    @property
    def run_scoped(self) -> bool:
        return "RUN" in self.name

    @property
    def api(self) -> bool:
        return self.name.startswith("API")

    def outcome(self, asker: Asker, visibility: str | None):
        if self is Rule.PUBLIC:
            return OK
        sees = not self.run_scoped or asker.user in VIEWERS[visibility]
        if asker.anonymous:
            if self in (Rule.RUN, Rule.API_RUN_ANONYMOUS) and sees:
                return OK
            if self is Rule.API_RUN_ANONYMOUS:
                return NOT_FOUND
            return UNAUTHORISED if self.api else LOG_IN
        if self in (Rule.TEAM, Rule.API_TEAM):
            return OK if asker.user in TEAM_MEMBERS else NOT_FOUND
        if self is Rule.TEAM_OWNER:
            return OK if asker.user in TEAM_OWNERS \
                else FORBIDDEN if asker.user in TEAM_MEMBERS else NOT_FOUND
        if self is Rule.INVITEE:
            return OK if asker.user in INVITEES else NOT_FOUND
        if not sees:
            return NOT_FOUND
        if self in (Rule.RUN_OWNER, Rule.API_RUN_OWNER) and asker.user != "owner":
            return FORBIDDEN
        if self in (Rule.RUN_TEAM, Rule.API_RUN_TEAM) and not (visibility == Run.TEAM
                                              and asker.user in TEAM_MEMBERS):
            return FORBIDDEN
        if self in (Rule.RUN_EDITOR, Rule.API_RUN_EDITOR) and not (
                asker.user in ("owner", "staff")
                or (visibility == Run.TEAM and asker.user in TEAM_MEMBERS)):
            return FORBIDDEN
        return OK


@dataclass(frozen=True)
class Access:
    """One request worth making to a route, and the rule that decides who gets what."""
    rule: Rule
    method: str = "GET"
    ok: int = 200                   # the status of an allowed request
    # What a POST sends: a function of the test case and the run (None for routes about no
    # run), and whether it goes as JSON rather than a form.
    body: Callable | None = None
    json: bool = False
    # The query string, for routes that name their runs there: a function of the test case
    # and the run.
    query: Callable | None = None
    # Which of each visibility's runs a run-scoped request is about: "done" or "failed".
    state: str = "done"
    # The request may change the database: a denied one must change nothing.
    mutates: bool = False
    # The response lists runs: it must name every run the asker may see.
    lists_runs: bool = False


def upload_form(case, run) -> dict:
    return {"sample": "hlo/softmax.hlo", "devices": ["h100"], "strategies": ["unfused"],
            "visibility": Run.PRIVATE, "name": "uploaded by the access matrix"}


def password_reset_form(case, run) -> dict:
    return {"email": "owner@example.org"}


def api_submission(case, run) -> dict:
    return {"filename": "matrix.hlo", "text": SOFTMAX.read_text(), "devices": ["h100"],
            "strategies": ["unfused"]}


def run_settings_form(case, run) -> dict:
    return {"name": "renamed by the access matrix", "tags": "", "visibility": run.visibility,
            "team": run.team_id or ""}


def signup_form(case, run) -> dict:
    return {"username": "newcomer", "email": "newcomer@example.org",
            "password1": "matrix-plum-kernel-42", "password2": "matrix-plum-kernel-42"}


def no_edits(case, run) -> dict:
    return {"edits": []}


def a_kernel_of_no_edits(case, run) -> dict:
    return {"edits": [], "kernel": case.kernel}


def saved_plan(case, run) -> dict:
    return {"name": "matrix", "device": "h100", "strategy": "cost", "edits": []}


def api_what_if(case, run) -> dict:
    return {"device": "h100", "strategy": "cost", "edits": []}


def team_baseline(case, run) -> dict:
    return {"tag": "matrix", "run": case.runs["done"][Run.TEAM].pk}


def compare_query(case, run) -> str:
    return f"a={run.pk}:h100:unfused&b={run.pk}:h100:cost"


def compare_cuda_query(case, run) -> str:
    return (f"a={run.pk}:h100:unfused&ka={case.unfused_kernel}"
            f"&b={run.pk}:h100:cost&kb={case.kernel}")


ROUTES: dict[str, tuple[Access, ...]] = {
    # Pages
    "explorer-index": (Access(Rule.PUBLIC),
                       Access(Rule.LOGIN, "POST", 302, body=upload_form, mutates=True)),
    "explorer-run": (Access(Rule.RUN),),
    "explorer-history": (Access(Rule.LOGIN, lists_runs=True),),
    "explorer-compare": (Access(Rule.RUN, query=compare_query),),
    "explorer-compare-cuda": (Access(Rule.RUN, query=compare_cuda_query),),
    "explorer-run-settings": (Access(Rule.RUN_OWNER, "POST", 302, body=run_settings_form,
                                     mutates=True),),
    "explorer-run-retry": (Access(Rule.RUN_OWNER, "POST", 302, state="failed", mutates=True),),
    "explorer-run-baseline": (Access(Rule.RUN_TEAM, "POST", 302, mutates=True,
                                     body=lambda case, run: {"tag": "matrix"}),),
    "explorer-run-delete": (Access(Rule.RUN_OWNER),
                            Access(Rule.RUN_OWNER, "POST", 302, mutates=True)),
    "explorer-run-source": (Access(Rule.RUN),),
    "explorer-run-status": (Access(Rule.RUN),),
    "explorer-run-preview": (Access(Rule.RUN),),
    "explorer-run-measure": (Access(Rule.RUN_LOGIN, "POST", 302, mutates=True),),
    "explorer-plan-panel": (Access(Rule.RUN),),
    "explorer-plan-decisions": (Access(Rule.RUN),),
    "explorer-plan-plot": (Access(Rule.RUN),),
    "explorer-tuning-plot": (Access(Rule.RUN),),
    "explorer-kernel": (Access(Rule.RUN),),
    # What-if: anyone who sees the run may edit (nothing is stored); saving onto it is for
    # its owner, staff and team, anyone else logged in saves onto a run of their own.
    "explorer-plan-file": (Access(Rule.RUN),),
    "explorer-whatif": (Access(Rule.RUN, "POST", body=no_edits, json=True),),
    "explorer-whatif-cuda": (Access(Rule.RUN, "POST", body=a_kernel_of_no_edits, json=True),),
    "explorer-save-plan": (Access(Rule.RUN_LOGIN, "POST", 201, body=saved_plan, json=True,
                                  mutates=True),),
    "explorer-delete-plan": (Access(Rule.RUN_EDITOR, "POST", mutates=True),),
    "explorer-tune": (Access(Rule.RUN_EDITOR, "POST", 302, mutates=True,
                             body=lambda case, run: {"device": "h100", "budget_s": "5"}),),
    # The user's own keys: each user sees and revokes only theirs (RevokingTokensTests).
    "explorer-api-tokens": (Access(Rule.LOGIN),
                            Access(Rule.LOGIN, "POST", 302, body=lambda case, run: {"name": "ci"},
                                   mutates=True)),
    "explorer-cost-models": (Access(Rule.LOGIN),),
    # Teams (see the module docstring for who is who)
    "explorer-teams": (Access(Rule.LOGIN),
                       Access(Rule.LOGIN, "POST", 302, body=lambda case, run: {"name": "new"},
                              mutates=True)),
    "explorer-team": (Access(Rule.TEAM),),
    "explorer-team-invite": (Access(Rule.TEAM_OWNER, "POST", 302, mutates=True,
                                    body=lambda case, run: {"kind": "link", "uses": "5",
                                                            "days": "7"}),),
    "explorer-team-invite-revoke": (Access(Rule.TEAM_OWNER, "POST", 302, mutates=True),),
    "explorer-team-member": (Access(Rule.TEAM_OWNER, "POST", 302, mutates=True,
                                    body=lambda case, run: {"role": "owner"}),),
    "explorer-team-leave": (Access(Rule.TEAM, "POST", 302, mutates=True),),
    "explorer-invitation": (Access(Rule.INVITEE, "POST", 302, mutates=True,
                                   body=lambda case, run: {"answer": "accept"}),),
    # An invite link: anyone may read it; joining needs a login (members already in the team
    # join nothing, so an allowed POST need not change anything).
    "explorer-invite": (Access(Rule.PUBLIC), Access(Rule.LOGIN, "POST", 302)),
    "explorer-signup": (Access(Rule.PUBLIC),
                        Access(Rule.PUBLIC, "POST", 302, body=signup_form, mutates=True)),
    # The API
    "api-openapi": (Access(Rule.PUBLIC),),
    "explorer-api-root": (Access(Rule.PUBLIC, ok=302),),
    "explorer-api-docs": (Access(Rule.PUBLIC),),
    "explorer-gallery": (Access(Rule.PUBLIC),),
    "api-runs": (Access(Rule.API_LOGIN, lists_runs=True),
                 Access(Rule.API_LOGIN, "POST", 201, body=api_submission, json=True,
                        mutates=True)),
    "api-cost-models": (Access(Rule.API_LOGIN),),
    "api-run": (Access(Rule.API_RUN),
                Access(Rule.API_RUN_OWNER, "DELETE", 204, mutates=True)),
    "api-run-status": (Access(Rule.API_RUN),),
    "api-run-retry": (Access(Rule.API_RUN_OWNER, "POST", 202, state="failed", mutates=True),),
    "api-run-results": (Access(Rule.API_RUN),),
    "api-run-kernel": (Access(Rule.API_RUN),),
    "api-run-graph": (Access(Rule.API_RUN_ANONYMOUS),),
    "api-run-measurements": (Access(Rule.API_RUN),
                             Access(Rule.API_RUN, "POST", 202, mutates=True)),
    "api-run-measurement": (Access(Rule.API_RUN),),
    "api-run-export-json": (Access(Rule.API_RUN_ANONYMOUS),),
    "api-run-export-csv": (Access(Rule.API_RUN_ANONYMOUS),),
    "api-run-whatif": (Access(Rule.API_RUN_ANONYMOUS, "POST", body=api_what_if, json=True),),
    "api-run-plans": (Access(Rule.API_RUN_ANONYMOUS),
                      Access(Rule.API_RUN, "POST", 201, body=saved_plan, json=True,
                             mutates=True)),
    "api-run-plan": (Access(Rule.API_RUN_EDITOR, "DELETE", 204, mutates=True),),
    "api-run-plan-file": (Access(Rule.API_RUN_ANONYMOUS),),
    # Timelines and their downloads: as the results, open to whoever may see the run.
    "api-run-timeline": (Access(Rule.API_RUN_ANONYMOUS),),
    "api-run-plan-trace": (Access(Rule.API_RUN_ANONYMOUS),),
    "api-run-plan-model-explorer": (Access(Rule.API_RUN_ANONYMOUS),),
    # A team's baselines: its members read and set them; a run's, the members of its team.
    "api-team-baselines": (Access(Rule.API_TEAM),
                           Access(Rule.API_TEAM, "POST", body=team_baseline, json=True,
                                  mutates=True)),
    "api-run-baseline": (Access(Rule.API_RUN_TEAM, query=lambda case, run: "tag=main"),),
    "api-run-tune": (Access(Rule.API_RUN),
                     Access(Rule.API_RUN_EDITOR, "POST", 202, json=True, mutates=True,
                            body=lambda case, run: {"device": "h100", "budget_s": 5})),
    # Django's auth views (see the module docstring)
    "login": (Access(Rule.PUBLIC),),
    "logout": (Access(Rule.PUBLIC, "POST", 302),),
    "password_change": (Access(Rule.LOGIN),),
    "password_change_done": (Access(Rule.LOGIN),),
    "password_reset": (Access(Rule.PUBLIC),
                       Access(Rule.PUBLIC, "POST", 302, body=password_reset_form)),
    "password_reset_done": (Access(Rule.PUBLIC),),
    "password_reset_confirm": (Access(Rule.PUBLIC),),
    "password_reset_complete": (Access(Rule.PUBLIC),),
}

# The value of each path parameter: a constant, or a function of the test case and the run.
ARGUMENTS: dict[str, object] = {
    "run_id": lambda case, run: run.pk,
    "device": "h100",
    "strategy": "cost",
    "kernel": lambda case, run: case.kernel,
    "chart": "roofline",
    "team": lambda case, run: str(case.team.pk),
    "measurement_id": lambda case, run: case.measurements[run.visibility],
    "uidb64": "MQ",
    "token": "not-a-reset-token",
    "team_id": lambda case, run: case.team.pk,
    "user_id": lambda case, run: case.teammate.pk,
    "invite_id": lambda case, run: case.invitation.pk,
    "plan_id": lambda case, run: case.saved_plans[run.visibility],
    "key": lambda case, run: case.invite_link.token,
}

# A run id no run has: a denied request must read exactly like a request about it.
MISSING_RUN = "m" * 22
# An id no database holds: past 2**63 - 1, the largest 64-bit integer.
HUGE_ID = 99999999999999999999
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CSRF_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


class RouteTableTests(SimpleTestCase):
    def test_every_route_has_a_declared_rule(self):
        missing = [str(route) for route in url_routes() if route.name not in ROUTES]
        self.assertEqual(missing, [], "these routes have no access rule: declare each one's in "
                                      "ROUTES in tests/explorer/test_access_matrix.py (its "
                                      "docstring says how)")

    def test_every_declared_route_exists(self):
        names = {route.name for route in url_routes()}
        gone = sorted(set(ROUTES) - names)
        self.assertEqual(gone, [], "ROUTES declares rules for routes the URL conf no longer has: "
                                   "remove them")

    def test_every_path_parameter_has_an_argument(self):
        unknown = [f"{parameter} of {route}" for route in url_routes()
                   for parameter in route.parameters if parameter not in ARGUMENTS]
        self.assertEqual(unknown, [], "give these path parameters a value in ARGUMENTS")

    def test_every_run_rule_is_on_a_route_that_names_a_run(self):
        for route in url_routes():
            for access in ROUTES.get(route.name, ()):
                if access.rule.run_scoped:
                    with self.subTest(route=route.name, method=access.method):
                        self.assertTrue("run_id" in route.parameters or access.query)

    def test_the_walk_finds_routes_inside_includes(self):
        paths = {route.path for route in url_routes()}

        self.assertIn("api/v1/runs/<str:run_id>", paths)
        self.assertIn("accounts/logout/", paths)
        self.assertFalse(any(path.startswith("admin/") for path in paths))


# --- The matrix -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    route: Route
    access: Access
    asker: Asker
    visibility: str | None

    @property
    def test_name(self) -> str:
        about = f"_on_a_{self.visibility}_run" if self.visibility else ""
        name = f"test_{self.route.name}_{self.access.method}_as_{self.asker.name}{about}"
        return re.sub(r"\W", "_", name).lower()

    @property
    def expected(self):
        if self.asker.read_only and self.access.method != "GET":
            return FORBIDDEN    # whatever the rule: the key may not change anything
        return self.access.rule.outcome(self.asker, self.visibility)


def cells() -> list[Cell]:
    found = []
    for route in url_routes():
        for access in ROUTES.get(route.name, ()):
            askers = API_ASKERS if access.rule.api else PAGE_ASKERS
            visibilities = VISIBILITIES if access.rule.run_scoped else (None,)
            found += [Cell(route, access, asker, visibility)
                      for asker in askers for visibility in visibilities]
    return found


class AccessMatrixTests(AccessTestCase):
    """The generated cases (one test method per cell, added below the class)."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.staff = User.objects.create_user("staff", is_staff=True)   # no password to hash
        cls.keys = {user: ApiToken.create_for(getattr(cls, user), "matrix")[1]
                    for user in ("owner", "teammate", "stranger", "staff")}
        cls.read_only_key = ApiToken.create_for(cls.owner, "dashboard", ApiToken.READ)[1]
        Membership.objects.filter(team=cls.team, user=cls.owner).update(role=OWNER)
        Membership.objects.create(team=cls.team, user=User.objects.create_user("co-owner"),
                                  role=OWNER)
        cls.invite_link = Invite.make(cls.owner, cls.team, max_uses=5)
        cls.invitation = Invite.invite_user(cls.team, cls.owner, cls.stranger)
        letters = {Run.PRIVATE: "p", Run.TEAM: "t", Run.PUBLIC: "u"}
        cls.runs = {"done": {}, "failed": {}}
        cls.measurements = {}
        cls.saved_plans = {}
        for visibility, letter in letters.items():
            done = cls.make_done_run("d" + letter * 21, visibility)
            failed = cls.make_run("f" + letter * 21, visibility, Run.FAILED,
                                  error="ptxas died", error_stage="build")
            for state, run in (("done", done), ("failed", failed)):
                # Names and file names no page shows but to those who may see the run.
                Run.objects.filter(pk=run.pk).update(
                    name=f"{state}-{visibility}-run-q7x", filename=f"{state}_{visibility}_q7x.hlo")
                cls.runs[state][visibility] = Run.objects.get(pk=run.pk)
            TuneJob.objects.create(run=done, device="h100", status=TuneJob.DONE, result={})
            cls.saved_plans[visibility] = SavedPlan.objects.create(
                run=done, device="h100", name="kept", plan={}, status=SavedPlan.DONE).pk
            cls.measurements[visibility] = Measurement.objects.create(
                run=done, status=Measurement.DONE, gpu=GPU,
                result=measurement_result(done.artifact)).pk
        TagBaseline.objects.create(team=cls.team, tag="main", run=cls.runs["done"][Run.TEAM],
                                   graph_name=cls.runs["done"][Run.TEAM].title)
        sources = KernelSource.objects.filter(run=cls.runs["done"][Run.PRIVATE], device="h100") \
            .exclude(source="")
        cls.kernel = sources.filter(strategy="cost").first().kernel
        cls.unfused_kernel = sources.filter(strategy="unfused").first().kernel

    # --- Asking ---------------------------------------------------------------------------------

    def url(self, cell: Cell, run: Run | None) -> str:
        arguments = {}
        for parameter in cell.route.parameters:
            value = ARGUMENTS[parameter]
            arguments[parameter] = value(self, run) if callable(value) else value
        url = reverse(cell.route.name, kwargs=arguments) if cell.route.name != cell.route.path \
            else "/" + cell.route.path
        return f"{url}?{cell.access.query(self, run)}" if cell.access.query else url

    def ask(self, cell: Cell, url: str, run: Run | None):
        self.client.logout()
        headers = {}
        if cell.asker.token:
            key = self.read_only_key if cell.asker.read_only else self.keys[cell.asker.user]
            headers["Authorization"] = f"Bearer {key}"
        elif not cell.asker.anonymous:
            self.client.force_login(getattr(self, cell.asker.user))
        access, data = cell.access, {}
        if access.body:
            body = access.body(self, run)
            data = {"data": json.dumps(body), "content_type": "application/json"} \
                if access.json else {"data": body}
        return getattr(self.client, access.method.lower())(url, headers=headers, **data)

    # --- Checking -------------------------------------------------------------------------------

    def check(self, cell: Cell) -> None:
        access = cell.access
        run = self.runs[access.state][cell.visibility] if cell.visibility else None
        url = self.url(cell, run)
        before = database_state() if access.mutates else None
        response = self.ask(cell, url, run)
        after = database_state() if access.mutates else None
        expected = cell.expected

        self.assert_outcome(response, expected, access.ok)
        self.assert_names_only_visible_runs(response, cell, listed=access.lists_runs
                                            and expected == OK)
        if access.mutates:
            if expected == OK:
                self.assertNotEqual(before, after, "an allowed request changed nothing")
            else:
                self.assertEqual(before, after, "a denied request changed the database")
        if run is not None and expected in (LOG_IN, UNAUTHORISED, NOT_FOUND):
            self.assert_reads_like_a_missing_run(response, cell, url, run)

    def assert_outcome(self, response, expected, ok: int) -> None:
        if expected == OK:
            self.assertEqual(response.status_code, ok, response.content[:500])
        elif expected == LOG_IN:
            self.assertEqual(response.status_code, 302)
            self.assertTrue(response["Location"].startswith(f"{reverse('login')}?next="),
                            response["Location"])
        else:
            self.assertEqual(response.status_code, expected, response.content[:500])

    def assert_names_only_visible_runs(self, response, cell: Cell, listed: bool) -> None:
        body = response.content.decode("utf-8", errors="replace")
        for state, runs in self.runs.items():
            for visibility, run in runs.items():
                visible = cell.asker.user in VIEWERS[visibility]
                for label in (run.name, run.filename):
                    if not visible:
                        self.assertNotIn(label, body, f"the response names a {visibility} run")
                    elif listed:
                        self.assertIn(label, body, f"the list leaves out a {visibility} run")

    def assert_reads_like_a_missing_run(self, response, cell: Cell, url: str, run: Run) -> None:
        missing = self.ask(cell, url.replace(run.pk, MISSING_RUN), run)

        self.assertEqual(response.status_code, missing.status_code)
        self.assertEqual(normalised(response, run.pk), normalised(missing, MISSING_RUN))

    # --- Undeclared methods ---------------------------------------------------------------------

    def check_undeclared_methods(self, route: Route) -> None:
        """A method the route's entry does not declare is refused, asked by the owner about
        their own run."""
        accesses = ROUTES[route.name]
        declared = {access.method for access in accesses}
        for method in sorted(set(METHODS) - declared):
            for state in sorted({access.state for access in accesses}):
                with self.subTest(method=method, state=state):
                    access = Access(accesses[0].rule, method, query=accesses[0].query,
                                    state=state)
                    cell = Cell(route, access, PAGE_ASKERS[0], Run.PRIVATE)
                    run = self.runs[state][Run.PRIVATE]
                    response = self.ask(cell, self.url(cell, run), run)
                    self.assertEqual(response.status_code, 405,
                                     f"{route} answers {method}: declare it in ROUTES")

    # --- Ids past 64 bits --------------------------------------------------------------------

    def test_an_id_past_64_bits_in_any_address_answers_404(self):
        """SQLite binds no integer past 64 bits (OverflowError): a route must refuse such an
        id before a query sees it, for every method it declares, asked by the team's and the
        run's owner."""
        checked = 0
        for route in url_routes():
            ids = re.findall(r"<(?:int|id):(\w+)>", route.path)
            for access in ROUTES.get(route.name, ()) if ids else ():
                run = self.runs[access.state][Run.PRIVATE]
                for huge in ids:
                    with self.subTest(route=route.name, method=access.method, id=huge):
                        url = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda match: str(
                            HUGE_ID if match[1] == huge else self.argument(match[1], run)),
                            route.path)
                        cell = Cell(route, access, PAGE_ASKERS[0], Run.PRIVATE)
                        self.assertEqual(self.ask(cell, url, run).status_code, 404, url)
                        checked += 1
        self.assertGreater(checked, 5)

    def argument(self, parameter: str, run: Run):
        value = ARGUMENTS[parameter]
        return value(self, run) if callable(value) else value

    # --- Beyond the matrix: teams one is not in, other users' keys -----------------------------
    # (In this class rather than their own so the users and runs are made once.)

    def runs_now(self) -> list:
        return sorted(Run.objects.values_list("pk", "visibility", "team"))

    def test_the_upload_form_refuses_a_team_the_uploader_is_not_in(self):
        self.client.force_login(self.stranger)
        before = self.runs_now()

        response = self.client.post(reverse("explorer-index"), {
            **upload_form(self, None), "visibility": Run.TEAM, "team": self.team.pk})

        self.assertContains(response, "Choose one of your teams", status_code=400)
        self.assertEqual(self.runs_now(), before)

    def test_the_api_refuses_a_team_named_or_numbered_that_the_caller_is_not_in(self):
        before = self.runs_now()
        for team in (self.team.name, self.team.pk, str(self.team.pk)):
            with self.subTest(team=team):
                response = self.client.post(
                    reverse("api-runs"), {**api_submission(self, None), "team": team,
                                          "visibility": Run.TEAM},
                    content_type="application/json",
                    headers={"Authorization": f"Bearer {self.keys['stranger']}"})

                self.assertEqual(response.status_code, 400)
                self.assertIn("not a member", response.json()["error"])
        self.assertEqual(self.runs_now(), before)

    def test_the_api_refuses_it_in_a_multipart_upload_too(self):
        before = self.runs_now()
        with SOFTMAX.open("rb") as upload:
            response = self.client.post(
                reverse("api-runs"), {"file": upload, "visibility": Run.TEAM,
                                      "team": self.team.name},
                headers={"Authorization": f"Bearer {self.keys['stranger']}"})

        self.assertEqual(response.status_code, 400)
        self.assertEqual(self.runs_now(), before)

    def test_an_owner_cannot_share_their_run_with_a_team_they_are_not_in(self):
        strangers = self.make_run("s" * 22)
        Run.objects.filter(pk=strangers.pk).update(owner=self.stranger)
        others = Team.objects.create(name="others")
        owners = self.runs["done"][Run.TEAM]
        for user, run, foreign in ((self.stranger, strangers, self.team),
                                   (self.owner, owners, others)):
            with self.subTest(user=user.username):
                before = (run.team_id, run.name)
                self.client.force_login(user)
                response = self.client.post(
                    reverse("explorer-run-settings", args=[run.pk]),
                    {"name": "shared", "tags": "", "visibility": Run.TEAM, "team": foreign.pk})

                self.assertEqual(response.status_code, 400)
                run.refresh_from_db()
                self.assertEqual((run.team_id, run.name), before)

    def test_a_user_cannot_revoke_another_users_key(self):
        token = ApiToken.objects.get(user=self.owner, name="matrix")
        self.client.force_login(self.stranger)

        response = self.client.post(reverse("explorer-api-tokens"), {"revoke": token.pk})

        self.assertRedirects(response, reverse("explorer-api-tokens"))
        self.assertTrue(ApiToken.objects.filter(pk=token.pk).exists())


def database_state() -> dict:
    """What a request could change, but the sessions and a token's last use (logging in and
    authenticating are not what a route does)."""
    return {
        "runs": sorted(Run.objects.values_list("pk", "name", "tags", "visibility", "team",
                                               "status", "graph")),
        "measurements": sorted(Measurement.objects.values_list("pk", "run", "status")),
        "saved_plans": sorted(SavedPlan.objects.values_list("pk", "run", "name")),
        "tunings": sorted(TuneJob.objects.values_list("pk", "run", "status")),
        "baselines": sorted(TagBaseline.objects.values_list("team", "tag", "run")),
        "kernels": KernelSource.objects.count(),
        "tokens": sorted(ApiToken.objects.values_list("pk", "user", "name")),
        "teams": sorted(Membership.objects.values_list("team", "user", "role")),
        "invites": sorted(Invite.objects.values_list("pk", "team", "invitee", "uses")),
        "users": sorted(User.objects.values_list("username", flat=True)),
    }


def normalised(response, run_id: str) -> tuple:
    """The body and redirect of a response with the run's id replaced and the CSRF token (new
    in every response) left out."""
    body = CSRF_TOKEN.sub("", response.content.decode("utf-8", errors="replace"))
    return body.replace(run_id, "RUN"), response.get("Location", "").replace(run_id, "RUN")


def _add_cases() -> None:
    for cell in cells():
        assert not hasattr(AccessMatrixTests, cell.test_name), cell.test_name
        setattr(AccessMatrixTests, cell.test_name, lambda self, cell=cell: self.check(cell))
    for route in url_routes():
        if route.own and route.name in ROUTES:
            name = re.sub(r"\W", "_", f"test_{route.name}_refuses_undeclared_methods")
            setattr(AccessMatrixTests, name,
                    lambda self, route=route: self.check_undeclared_methods(route))


_add_cases()
