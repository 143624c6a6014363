"""The JSON API at /api/v1/ (guide in docs/api.md): submit a graph, poll a run's status, fetch
its results, ask for and read its GPU measurements, export it.

Each operation is declared once, on django-ninja (`api` below): its route, its parameters and
body (validated against the models of explorer/api_schema.py before the view runs), its answers
and their descriptions, which make the OpenAPI 3.1 document at /api/v1/openapi.json. The views
build their answers as JSON themselves (the big documents are cached gzipped bytes,
explorer/documents.py), so nothing is serialised twice.

Authentication: a browser's session, or `Authorization: Bearer <key>` with an ApiToken's key
for scripts. Only token-authenticated requests skip the CSRF check; a session-authenticated
POST needs the CSRF token like any form. Nobody authenticated gets a 401 in JSON, never a
redirect to the login page. Every API key (else every logged-in user, else every address) may
send settings.API_RATE_LIMIT requests per API_RATE_WINDOW_S seconds; past that a 429 with
Retry-After.

Access follows the pages: a run is shown to whoever `Run.can_view` admits, and anyone else gets
a 404 that reads exactly like a missing run's. Every error is JSON: {"error": <message>}, the
fields a request got wrong named in it.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
import time
from functools import cache

from django.conf import settings
from django.core.cache import caches
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.paginator import EmptyPage, Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import URLPattern, path, reverse
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Query
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError
from ninja.throttling import BaseThrottle
from pydantic import ValidationError as InvalidFields

from compiler.errors import InputError, LimitError
from compiler.stages.dp import data_parallel
from compiler.limits import Limits
from explorer import api_schema as schemas
from explorer.documents import cached_gzip, digest, gzipped_response, json_bytes, run_key
from explorer.graph_store import StagedFile
from explorer.lookups import by_pk
from explorer.plan_edits import plan_file_of, save_edits, saved_answer, what_if
from explorer.models import (ApiToken, KernelSource, Measurement, Run, TagBaseline,
                             Team)
from explorer.presence import gpu_status
from explorer.presenters import apply_measurement, best_totals, find_kernel
from explorer.runs import (PlanExists, PlanUnavailable, can_save_plans, holding,
                           latest_tuning, plan_choice, plan_graph, request_measurement,
                           request_tuning, retry_run, save_plan, saved_plans, submit,
                           in_runs_team, tuning_measured, viewable_runs)
from explorer.throttle import client_address
from explorer.timelines import export_name, model_explorer_file, timeline_document, trace_file
from explorer.uploads import graph_of

# The columns of export.csv: one row per device × strategy × kernel.
CSV_COLUMNS = ("device", "strategy", "kernel", "kind", "nodes", "dram_bytes", "sol_us",
               "proj_us", "measured_us", "limiter", "occupancy", "waves", "block_size",
               "grid_size", "registers", "shared_bytes", "spill_bytes", "schedule")
# The order an Allow header lists methods in.
METHOD_ORDER = ("GET", "POST", "PUT", "PATCH", "DELETE")


class ApiError(Exception):
    """Ends a request with {"error": message, **extra} and the status code."""

    def __init__(self, code: int, message: str, **extra):
        super().__init__(message)
        self.code, self.message, self.extra = code, message, extra

    def response(self) -> JsonResponse:
        response = JsonResponse({"error": self.message, **self.extra}, status=self.code)
        if self.code == 401:
            response["WWW-Authenticate"] = 'Bearer realm="api"'
        return response


# --- Who asks -----------------------------------------------------------------------------------

# Requests that change nothing: all a read-only key may send, and no CSRF check needed.
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")


class Bearer:
    """An API key in `Authorization: Bearer <key>`: its user, or ApiError 401 (403 for a
    read-only key sending a change). No header: None, for the session to answer."""
    openapi_security_schema = {
        "type": "http", "scheme": "bearer",
        "description": "An API key from the API keys page or `python manage.py "
                       "create_api_token`: scope `read` (GET only) or `submit`, expiring or "
                       "not."}

    def __call__(self, request: HttpRequest):
        header = request.headers.get("Authorization", "")
        if not header:
            return None
        scheme, _, key = header.partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise ApiError(401, "the Authorization header must be 'Bearer <API key>'")
        token = ApiToken.for_key(key.strip())
        if token is None:
            raise ApiError(401, "unknown, revoked or expired API key")
        if token.scope == ApiToken.READ and request.method not in SAFE_METHODS:
            raise ApiError(403, "this API key is read-only (scope 'read'); make a key with "
                                "scope 'submit' on the API keys page to change anything")
        request.user = token.user
        request.api_token_id = token.pk
        return token.user


class Session:
    """The browser's login session (checking the CSRF token of a change); with no session,
    ApiError 401, or the anonymous user where `anonymous` operations let them in (they see
    public runs only, as the run page shows them)."""
    openapi_security_schema = {
        "type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME,
        "description": "The browser's login session (POST needs the CSRF token too)."}

    def __init__(self, anonymous: bool = False):
        self.anonymous = anonymous

    def __call__(self, request: HttpRequest):
        if not request.user.is_authenticated:
            if self.anonymous:
                return request.user
            raise ApiError(401, "authentication required: send 'Authorization: Bearer <API "
                                "key>' (see docs/api.md) or log in")
        if request.method not in SAFE_METHODS:
            rejected = CsrfViewMiddleware(lambda request: None).process_view(
                request, None, (), {})
            if rejected is not None:
                raise ApiError(403, "CSRF check failed: send the CSRF token with a session, or "
                                    "use an API key")
        return request.user


class RateLimit(BaseThrottle):
    """At most settings.API_RATE_LIMIT requests per API_RATE_WINDOW_S seconds (0: no limit)
    from each API key, else each logged-in user, else each address: counted in fixed windows
    in the "api-rate" cache, each web process's memory (an add and an increment, about 5 µs;
    the shared Redis cache would cost 0.45 ms a request in three round trips)."""

    def allow_request(self, request: HttpRequest) -> bool:
        limit, window = settings.API_RATE_LIMIT, settings.API_RATE_WINDOW_S
        if not limit:
            return True
        key = f"{self._asker(request)}:{int(time.time() // window)}"
        counts = caches["api-rate"]
        counts.add(key, 0, window + 1)
        try:
            count = counts.incr(key)
        except ValueError:      # gone between the two (culled): this request starts it again
            counts.set(key, count := 1, window + 1)
        return count <= limit

    def wait(self) -> float:
        """Seconds until the window ends (windows start at multiples of its length)."""
        window = settings.API_RATE_WINDOW_S
        return window - time.time() % window

    @staticmethod
    def _asker(request: HttpRequest) -> str:
        token = getattr(request, "api_token_id", None)
        if token is not None:
            return f"key:{token}"
        if request.user.is_authenticated:
            return f"user:{request.user.pk}"
        return f"address:{client_address(request)}"


# --- The API and its errors ---------------------------------------------------------------------

class FusionApi(NinjaAPI):
    def validation_error_from_error_contexts(self, error_contexts) -> ValidationError:
        """The parameters' validation errors as pydantic gives them (with the input, which
        `describe` quotes), without ninja's location prefix (query, path)."""
        errors = []
        for context in error_contexts:
            # A model's fields are parameters of their own: `page`, not `filters.page`.
            names = getattr(context.model, "__ninja_flatten_map_reverse__", {})
            for error in context.pydantic_validation_error.errors(include_url=False):
                errors.append({**error, "loc": names.get(error["loc"], error["loc"])})
        return ValidationError(errors)


api = FusionApi(
    title="Fusion Explorer API", version="1", openapi_url=None, docs_url=None,
    description="Submit a computation graph, poll its run, fetch the fusion plans, kernels "
                "and timings, export them. See docs/api.md.",
    auth=[Bearer(), Session()], throttle=[RateLimit()])
# Operations anyone may call: with credentials they are checked, without they see public runs.
ANYONE = [Bearer(), Session(anonymous=True)]

# How `describe` words pydantic's error types (the rest keep pydantic's own message, or ours).
PHRASES = {
    "missing": "is required", "string_type": "must be a string",
    "string_unicode": "must be Unicode text: it holds a lone surrogate (\\ud800-\\udfff), "
                      "which no encoding can store",
    "int_parsing": "must be a whole number", "int_type": "must be a whole number",
    "int_from_float": "must be a whole number", "model_type": "must be a JSON object",
    "model_attributes_type": "must be a JSON object", "dict_type": "must be a JSON object",
    "list_type": "must be a list",
}
CHOICE = re.compile(r"'([^']*)'")
# Error types whose message ends with the value refused.
QUOTED = {"literal_error", "enum", "int_parsing", "int_type", "int_from_float", "string_type",
          "greater_than_equal", "less_than_equal", "team_reference"}


def describe(errors: list[dict]) -> str:
    """One sentence per field a request got wrong, naming it (`devices[1]`) and what is wrong
    with it (`must be one of a100, h100, not 'tpu'`); one error per field, the first."""
    sentences, fields = [], set()
    for error in errors:
        location = [part for part in error["loc"] if part not in ("query", "path", "body")]
        field = str(location[0]) if location else "the request body"
        if field in fields:
            continue
        fields.add(field)
        if error["type"] == "nul_character":
            sentences.append(f"a NUL character in {field}")
            continue
        where = field + "".join(f"[{part}]" if isinstance(part, int) else "" for part in
                                location[1:])
        sentences.append(f"{where} {_problem(error)}")
    return "; ".join(sentences)


def _problem(error: dict) -> str:
    kind, context = error["type"], error.get("ctx") or {}
    if kind in ("literal_error", "enum"):   # expected: "'graph' or 'stream'"
        problem = f"must be one of {', '.join(re.findall(CHOICE, context['expected']))}"
    elif kind in ("string_too_long", "too_long"):
        unit = "characters" if kind == "string_too_long" else "items"
        problem = f"must hold at most {context['max_length']} {unit}"
    elif kind in ("string_too_short", "too_short"):
        problem = "must not be empty"
    elif kind == "greater_than_equal":
        problem = f"must be at least {context['ge']}"
    elif kind == "less_than_equal":
        problem = f"must be at most {context['le']}"
    else:
        problem = PHRASES.get(kind, error["msg"])
    if kind in QUOTED:
        value = error.get("input")
        shown = str(value) if kind in ("greater_than_equal", "less_than_equal") else repr(value)
        problem += f", not {shown if len(shown) <= 60 else shown[:57] + '...'}"
    return problem


def _handlers() -> None:
    def invalid(request, error: ValidationError) -> HttpResponse:
        return ApiError(400, describe(error.errors)).response()

    def throttled(request, error: Throttled) -> HttpResponse:
        window, wait = settings.API_RATE_WINDOW_S, math.ceil(error.wait or 1)
        return ApiError(429, f"too many requests: at most {settings.API_RATE_LIMIT} in "
                             f"{window} s per API key (per user or address without one; "
                             f"API_RATE_LIMIT); retry in {wait} s").response()

    def unexpected(request, error: Exception) -> HttpResponse:
        raise error     # explorer/middleware.py logs it and answers a JSON 500

    api.add_exception_handler(ApiError, lambda request, error: error.response())
    api.add_exception_handler(ValidationError, invalid)
    # ninja's own refusal of a body it cannot parse (JSON in name only), worded as ours.
    api.add_exception_handler(HttpError, lambda request, error: ApiError(
        error.status_code, f"{error}: send a JSON object with Content-Type "
                           f"application/json").response())
    api.add_exception_handler(Throttled, throttled)
    api.add_exception_handler(AuthenticationError, lambda request, error: ApiError(
        401, "authentication required").response())
    api.add_exception_handler(Exception, unexpected)


_handlers()


def answers(*entries: tuple, public: bool = False, **more) -> dict:
    """An operation's `response` models and their descriptions (in its `openapi_extra`), from
    (status, model or None, description) triples; every operation may also answer 429, and
    401 unless it is `public` (`more`: other arguments of the operation)."""
    entries = (*entries, TOO_MANY) if public else (*entries, UNAUTHORIZED, TOO_MANY)
    extra = more.pop("openapi_extra", {})
    responses = {status: {"description": description, **extra.get("responses", {}).get(
        status, {})} for status, _, description in entries}
    return {"response": {status: model for status, model, _ in entries},
            "openapi_extra": {**extra, "responses": responses}, **more}


UNAUTHORIZED = (401, schemas.Error, "No session and no valid `Authorization: Bearer <key>`.")
TOO_MANY = (429, schemas.Error, "Past the rate limit: Retry-After says in how many seconds "
                                "to ask again.")
NOT_FOUND = (404, schemas.Error, "No such run, or one the caller may not see (the two read "
                                 "alike).")
NOT_OWNER = (403, schemas.Error, "A run the caller may see but does not own, or a read-only "
                                 "key.")
NOT_DONE = (409, schemas.NotDone, "The run is not done: still queued or running, or failed "
                                  "(then `error` names the stage and the message).")
NO_CSRF = (403, schemas.Error, "A session-authenticated request without the CSRF token, or a "
                               "read-only key.")
# Operations open to anonymous callers say so: no security is one of their options.
OPEN = {"security": [{}]}


def routes() -> list[URLPattern]:
    """The API's routes, one per path (ninja makes one per operation, all alike), named as
    the operations' url_name says; a method the path does not take is a JSON 405 whose Allow
    lists those it does."""
    patterns, seen = [], set()
    for pattern in api.urls[0]:
        route = str(pattern.pattern)
        if route and route not in seen:      # "" is ninja's own root page: not ours
            seen.add(route)
            patterns.append(path(route, _json_405(pattern.callback), name=pattern.name))
    return patterns


def _json_405(view):
    @csrf_exempt   # each operation checks it for session-authenticated requests (Session)
    def endpoint(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code != 405 or "Allow" not in response:
            return response
        allowed = [method.strip() for method in response["Allow"].split(",")]
        answer = ApiError(405, f"method {request.method} not allowed here").response()
        answer["Allow"] = ", ".join(sorted(allowed, key=METHOD_ORDER.index))
        return answer
    return endpoint


def _viewable_run(request: HttpRequest, run_id: str) -> Run:
    """The run, read in plain SQL (explorer/lookups.py); its artifact, owner and team are
    read when used, and most answers need none of them."""
    run = by_pk(Run, run_id)
    if run is None or not run.can_view(request.user):
        raise ApiError(404, "no such run")
    return run


def _links(request: HttpRequest, run: Run) -> dict:
    def url(name: str) -> str:
        return request.build_absolute_uri(reverse(name, args=[run.pk]))

    return {"url": url("explorer-run"), "api_url": url("api-run"),
            "status_url": url("api-run-status"), "results_url": url("api-run-results"),
            "export_json_url": url("api-run-export-json"),
            "export_csv_url": url("api-run-export-csv")}


def _summary(request: HttpRequest, run: Run) -> dict:
    return {"id": run.pk, "name": run.name, "filename": run.filename, "status": run.status,
            "owner": run.owner.get_username(), "team": run.team.name if run.team else None,
            "visibility": run.visibility, "tags": run.tags, "devices": run.devices,
            "strategies": run.strategies, "runtime": run.runtime,
            "created": run.created.isoformat(),
            **_links(request, run)}


def _detail(request: HttpRequest, run: Run) -> dict:
    return {**_summary(request, run), "compiler_version": run.compiler_version,
            "started": run.started.isoformat() if run.started else None,
            "progress": run.status_dict()}


def _done_run(request: HttpRequest, run_id: str) -> Run:
    """The run, once it is done (its artifact is then stored: Run.finish writes both at once);
    ApiError 409 with its status while it is not."""
    run = _viewable_run(request, run_id)
    if run.status == Run.DONE:
        return run
    status = run.status_dict()
    if run.status == Run.FAILED:
        message = f"the run failed at stage {run.error_stage or '(unknown)'}: {run.error}"
    else:
        message = f"the run is {run.status}; poll its status_url until it is done"
    raise ApiError(409, message, status=status,
                   status_url=request.build_absolute_uri(reverse("api-run-status",
                                                                 args=[run.pk])))


# --- Submitting and listing ---------------------------------------------------------------------

@api.get("/runs", url_name="api-runs", operation_id="listRuns",
         summary="The runs the caller can view, newest first.", **answers(
             (200, schemas.RunList, "One page of runs."),
             (400, schemas.Error, "A bad page, per_page or filter."),
             (404, schemas.Error, "No such page.")))
def runs(request: HttpRequest, filters: Query[schemas.RunListQuery]) -> JsonResponse:
    """Filtered by device, tag and text, `per_page` at a time; `next` and `previous` are the
    URLs of the pages around this one."""
    found = viewable_runs(request.user)
    query = filters.q.strip()
    if query:
        found = found.filter(Q(name__icontains=query) | Q(filename__icontains=query))
    wanted = {field: value for field, value in (("devices", filters.device),
                                                ("tags", filters.tag)) if value}
    if wanted:
        found = holding(found, wanted)
    # The page's runs alone are read whole (with their owners and teams): one query for the
    # count, one for the page.
    paginator = Paginator(found.select_related("owner", "team"), filters.per_page)
    try:
        page = paginator.page(filters.page)
    except EmptyPage:
        raise ApiError(404, f"no such page: there are {paginator.num_pages}")

    def page_url(number: int) -> str:
        params = request.GET.copy()
        params["page"] = str(number)
        return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")

    return JsonResponse({
        "count": paginator.count, "page": page.number, "pages": paginator.num_pages,
        "per_page": filters.per_page,
        "next": page_url(page.next_page_number()) if page.has_next() else None,
        "previous": page_url(page.previous_page_number()) if page.has_previous() else None,
        "results": [_summary(request, run) for run in page],
    })


SUBMISSION_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": schemas.JsonSubmission.model_json_schema()},
    "multipart/form-data": {"schema": schemas.MultipartSubmission.model_json_schema()}}}}


@api.post("/runs", url_name="api-runs", operation_id="submitRun",
          summary="Submit a graph; its compile job is queued.", **answers(
              (201, schemas.Submitted, "A new run, queued."),
              (200, schemas.Submitted, "The same graph and options were submitted before: the "
                                       "existing run."),
              (400, schemas.Error, "A graph that does not import (the message names "
                                   "file:line:col) or a bad field (the message names it)."),
              NO_CSRF,
              (413, schemas.Error, "A body or file past the size limits (the message names "
                                   "the limit and its setting)."),
              (415, schemas.Error, "Neither multipart/form-data nor application/json."),
              openapi_extra=SUBMISSION_BODY))
def submit_run(request: HttpRequest) -> JsonResponse:
    """As JSON with the graph as text, or as multipart with the file. Every field is checked
    before anything is stored."""
    if request.content_type == "application/json":
        fields = _json_submission(request)
        data, filename = fields.text.encode(), fields.filename
    elif request.content_type == "multipart/form-data":
        fields, data, filename = _multipart_submission(request)
    else:
        raise ApiError(415, "send the graph as multipart/form-data (a 'file' field) or as "
                            "application/json ({\"filename\": ..., \"text\": ...})")
    team = _team(request, fields.team)
    if fields.visibility == Run.TEAM and team is None:
        raise ApiError(400, "a run shared with a team needs the team")
    name, tags, visibility = fields.name, fields.tags, fields.visibility
    try:
        run, created = submit(request.user, data, filename, devices=fields.devices,
                              strategies=fields.strategies, name=name, tags=tags,
                              visibility=visibility, team=team, runtime=fields.runtime)
    except LimitError as error:      # the file is past a configured limit: too large
        raise ApiError(413, str(error))
    except InputError as error:
        raise ApiError(400, str(error))
    body = {"id": run.pk, "status": run.status, **_links(request, run)}
    plans = getattr(fields, "plans", None) or []
    if plans:
        body["plans"] = [_applied(request, run, plan, index) for index, plan in enumerate(plans)]
    if not created:
        # The existing run keeps its own labels: name those asked for that it does not have
        # (its owner changes them on the run page).
        body["labels_not_applied"] = [
            label for label, differs in (
                ("name", bool(name) and name != run.name),
                ("visibility", visibility != run.visibility),
                ("team", visibility == Run.TEAM and (team.pk if team else None) != run.team_id),
                ("tags", bool(tags) and list(tags) != list(run.tags))) if differs]
    return JsonResponse(body, status=201 if created else 200)


def _applied(request: HttpRequest, run: Run, plan: dict, index: int) -> dict:
    """A plan file submitted with a run, saved as a plan of it (explorer/runs.py save_plan):
    its state, or why it was refused (the run stands either way)."""
    name, device = plan.get("name"), plan.get("device")
    try:
        saved, _ = save_plan(run, request.user, device, name, plan, check_graph=True)
    except InputError as error:
        return {"index": index, "name": name, "error": str(error)}
    return {"index": index, **saved.status_dict()}


def _validated(model, fields: dict):
    try:
        return model.model_validate(fields)
    except InvalidFields as error:
        raise ApiError(400, describe(error.errors(include_url=False))) from None


def _json_submission(request: HttpRequest) -> schemas.JsonSubmission:
    try:
        body = request.body
    except RequestDataTooBig:
        raise ApiError(413, f"a JSON request body may hold at most "
                            f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
                            f"(DATA_UPLOAD_MAX_MEMORY_SIZE); send a bigger graph as "
                            f"multipart/form-data, the 'file' field, up to "
                            f"{Limits.from_env().max_input_bytes:,} bytes "
                            f"(FUSION_EXPLORER_MAX_INPUT_BYTES)") from None
    try:
        fields = json.loads(body)
    except RecursionError:
        raise ApiError(400, "the request body nests arrays or objects too deeply to be read; "
                            "a submission's fields nest two levels at most") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise ApiError(400, f"the request body is not valid JSON: {error}") from None
    if not isinstance(fields, dict):
        raise ApiError(400, "the request body must be a JSON object: {\"filename\": ..., "
                            "\"text\": ...}")
    return _validated(schemas.JsonSubmission, fields)


def _multipart_submission(request: HttpRequest) -> tuple[schemas.Submission, StagedFile, str]:
    """The fields and the graph of a multipart submission: one 'file', or several (an ONNX
    model with its external data files; or one .zip of them: explorer/uploads.py), each
    streamed to disk by the upload handler (explorer/graph_store.py), never held whole."""
    try:
        uploads = request.FILES.getlist("file")
    except RequestDataTooBig:
        raise ApiError(413, f"the form fields beside the file may hold at most "
                            f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes "
                            f"(DATA_UPLOAD_MAX_MEMORY_SIZE)") from None
    except (MultiPartParserError, SuspiciousOperation) as error:
        raise ApiError(400, f"the multipart/form-data body cannot be read ({error}): send it "
                            f"with its boundary in the Content-Type header, as curl -F "
                            f"does") from None
    fields = {key: request.POST[key] for key in ("name", "visibility", "team", "runtime")
              if request.POST.get(key)}
    for key in ("devices", "strategies", "tags"):
        # Repeated fields or one comma-separated field: devices=a100&devices=h100, a100,h100.
        fields[key] = [item.strip() for value in request.POST.getlist(key)
                       for item in value.split(",") if item.strip()]
    if not uploads:
        raise ApiError(400, "give the graph as the multipart field 'file'")
    options = _validated(schemas.Submission, fields)
    try:
        data, filename = graph_of(uploads)
    except LimitError as error:
        raise ApiError(413, str(error))
    except InputError as error:
        raise ApiError(400, str(error))
    return options, data, filename


def _team(request: HttpRequest, value: str | int | None) -> Team | None:
    """The team named (by name or id) in a submission, which the caller must belong to."""
    if value in (None, ""):
        return None
    teams = Team.objects.filter(memberships__user=request.user)
    number = value if isinstance(value, int) \
        else int(value) if value.isdecimal() and len(value) <= 18 else None
    if number is None:
        team = teams.filter(name=value).first()
    else:       # an id no row can have is no team (and never reaches the database)
        team = teams.filter(pk=number).first() if 0 < number < 2 ** 63 else None
    if team is None:
        raise ApiError(400, f"you are not a member of a team {value!r}")
    return team


# --- One run -------------------------------------------------------------------------------------

RUN = "/runs/{str:run_id}"


@api.get(RUN, url_name="api-run", operation_id="getRun",
         summary="A run's metadata and progress.",
         **answers((200, schemas.Run, "The run."), NOT_FOUND))
def run_detail(request: HttpRequest, run_id: str) -> JsonResponse:
    """Its owner, team, visibility, tags, devices, strategies, compiler version, dates and
    links, with its status under `progress`."""
    return JsonResponse(_detail(request, _viewable_run(request, run_id)))


@api.delete(RUN, operation_id="deleteRun",
            summary="Delete a run (its owner only), with its kernels and measurements; its "
                    "permanent link stops working for everyone.",
            **answers((204, None, "Deleted."), NOT_OWNER, NOT_FOUND))
def delete_run(request: HttpRequest, run_id: str) -> HttpResponse:
    """Its graph's file goes too, unless another run shares it."""
    run = _viewable_run(request, run_id)
    _owner_only(request, run, "delete it")
    run.delete_with_graph()
    return HttpResponse(status=204)


@api.post(f"{RUN}/retry", url_name="api-run-retry", operation_id="retryRun",
          summary="Queue a failed run's compile again (its owner only), from the start.",
          **answers((202, schemas.Retried, "Queued again: the run's new status, with its "
                                           "links."),
                    NOT_OWNER, NOT_FOUND,
                    (409, schemas.Error, "The run is not failed (queued, running or done).")))
def run_retry(request: HttpRequest, run_id: str) -> JsonResponse:
    """Its owner queues a failed run's compile again (202 with the new status); 409 when the
    run is not failed."""
    run = _viewable_run(request, run_id)
    _owner_only(request, run, "retry it")
    if not retry_run(run):
        raise ApiError(409, f"only a failed run can be retried; this one is {run.status}")
    run.refresh_from_db()
    return JsonResponse({"id": run.pk, **run.status_dict(), **_links(request, run)},
                        status=202)


def _owner_only(request: HttpRequest, run: Run, action: str) -> None:
    if request.user.pk != run.owner_id:
        raise ApiError(403, f"only the run's owner can {action}")


@api.get(f"{RUN}/status", url_name="api-run-status", operation_id="getRunStatus",
         summary="A run's status and progress; poll it until status is done or failed.",
         **answers((200, schemas.Status, "The status."), NOT_FOUND))
def run_status(request: HttpRequest, run_id: str) -> JsonResponse:
    """`stage` is the stage running now, `stages` every stage with its state and seconds."""
    return JsonResponse(_viewable_run(request, run_id).status_dict())


@api.get(f"{RUN}/results", url_name="api-run-results", operation_id="getRunResults",
         summary="A done run's artifact: per device, the output of `python -m compiler codegen "
                 "--json`.",
         **answers((200, schemas.Results, "The artifact."), NOT_FOUND, NOT_DONE))
def run_results(request: HttpRequest, run_id: str) -> HttpResponse:
    """The artifact: per device, what `python -m compiler codegen --json` prints, with the
    newest finished measurement's timings in the measured fields. Serialised and gzipped once
    per run and measurement (explorer/documents.py), not for every request."""
    run = _done_run(request, run_id)
    # A finished measurement does not change: its id and the links' origin name the document.
    measured = run.shown_measurement_id()
    key = run_key(run, "results", measured or 0, request.scheme, request.get_host())

    def build() -> bytes:
        measurement = run.measurements.get(pk=measured) if measured else None
        shown = _measurement(request, measurement) if measurement else None
        return json_bytes(results_document(run, measurement, shown))

    return gzipped_response(request, cached_gzip(key, build), "application/json")


def results_document(run: Run, measurement: Measurement | None, shown: dict | None) -> dict:
    """What /results answers: the run's artifact with `measurement`'s timings in it, and
    `shown`, the measurement as the API describes it."""
    return {"id": run.pk, **_with_timings(run.artifact, measurement), "measurement": shown}


def _measured_artifact(run: Run) -> tuple[dict, Measurement | None]:
    measurement = run.shown_measurement()
    return _with_timings(run.artifact, measurement), measurement


def _with_timings(artifact: dict, measurement: Measurement | None) -> dict:
    if measurement is None:
        return artifact
    return {**artifact, "devices": apply_measurement(artifact["devices"], measurement.result)}


def _measurement(request: HttpRequest, measurement: Measurement, full: bool = False) -> dict:
    url = reverse("api-run-measurement", args=[measurement.run_id, measurement.pk])
    body = {"id": measurement.pk, "url": request.build_absolute_uri(url),
            "gpu": measurement.gpu or None, "compiler_version": measurement.compiler_version
            or None, "created": measurement.created.isoformat(), **measurement.status_dict()}
    if full:
        body["result"] = measurement.result
    return body


@api.get(f"{RUN}/measurements", url_name="api-run-measurements",
         operation_id="listRunMeasurements",
         summary="The run's GPU measurements, newest first, and whether a GPU worker is "
                 "online.",
         **answers((200, schemas.MeasurementList, "The measurements."), NOT_FOUND, NOT_DONE))
def run_measurements(request: HttpRequest, run_id: str) -> JsonResponse:
    """Each measurement's status; its result is at its own URL."""
    run = _done_run(request, run_id)
    gpu = gpu_status()
    return JsonResponse({"gpu_worker_online": gpu["online"], "gpu_workers": gpu["summary"],
                         "results": [_measurement(request, measurement) for measurement in
                                     run.measurements.defer("result")]})


@api.post(f"{RUN}/measurements", operation_id="measureRun",
          summary="Ask a GPU worker to measure the run: the job waits in the gpu queue until "
                  "one takes it.",
          **answers((202, schemas.Measurement, "A new measurement, queued."),
                    (200, schemas.Measurement, "One was already queued or running: that one."),
                    NO_CSRF, NOT_FOUND, NOT_DONE))
def measure_run(request: HttpRequest, run_id: str) -> JsonResponse:
    """While a measurement of the run waits or runs, asking again answers that one."""
    run = _done_run(request, run_id)
    measurement, created = request_measurement(run, request.user)
    return JsonResponse(_measurement(request, measurement), status=202 if created else 200)


@api.get(f"{RUN}/measurements/{{int:measurement_id}}", url_name="api-run-measurement",
         operation_id="getRunMeasurement", summary="One measurement, with its result once done.",
         **answers((200, schemas.Measurement, "The measurement."),
                   (404, schemas.Error, "No such run or measurement (or not the caller's to "
                                        "see).")))
def run_measurement(request: HttpRequest, run_id: str, measurement_id: int) -> JsonResponse:
    """One measurement with its result (compiler.stages.measure's MEASUREMENTS) once done."""
    run = _viewable_run(request, run_id)
    measurement = run.measurements.filter(pk=measurement_id).first()
    if measurement is None:
        raise ApiError(404, f"no measurement {measurement_id} of this run")
    return JsonResponse(_measurement(request, measurement, full=True))


@api.get(f"{RUN}/kernels/{{str:device}}/{{str:strategy}}/{{str:kernel}}",
         url_name="api-run-kernel", operation_id="getRunKernel",
         summary="One kernel: its artifact entry, CUDA source, PTX and line → node map.",
         **answers((200, schemas.KernelDetail, "The kernel."),
                   (404, schemas.Error, "No such run (or not the caller's to see), or no such "
                                        "kernel in it."), NOT_DONE))
def run_kernel(request: HttpRequest, run_id: str, device: str, strategy: str,
               kernel: str) -> JsonResponse:
    """One kernel's entry in the artifact, with its CUDA source, PTX and line → node map."""
    run = _done_run(request, run_id)
    entry = find_kernel(run.artifact, device, strategy, kernel)
    if entry is None:
        raise ApiError(404, f"no kernel {device}/{strategy}/{kernel} in this run")
    source = KernelSource.objects.filter(run=run, device=device, strategy=strategy,
                                         kernel=kernel).first()
    return JsonResponse({
        "device": device, "strategy": strategy, "kernel": entry,
        "function": source.function if source else None,
        "source": (source.source or None) if source else None,
        "ptx": (source.ptx or None) if source else None,
        "line_nodes": source.line_nodes if source else {},
        "resources": source.resources if source else None,
        "candidate_plans": source.candidate_plans if source else [],
    })


# The run page's fusion view reads it, for anyone who may see the run.
@api.get(f"{RUN}/graph", url_name="api-run-graph", operation_id="getRunGraph", auth=ANYONE,
         summary="The uploaded graph with one plan's kernels on it: every node with the kernel "
                 "that computes it, the edges, which edges go through memory, the kernels' "
                 "figures.",
         **answers((200, schemas.FusionGraph, "The graph."),
                   (400, schemas.Error, "A device or strategy the run does not have (the "
                                        "message lists them)."),
                   NOT_FOUND, NOT_DONE,
                   (422, schemas.Error, "The run's plan does not match its upload."),
                   openapi_extra=OPEN))
def run_graph(request: HttpRequest, run_id: str,
              plan: Query[schemas.PlanQuery]) -> JsonResponse:
    """The uploaded graph with one plan's kernels on it (compiler/stages/graph_view.py):
    `?device=D&strategy=S`, by default the run's first device and its fastest plan (the
    lowest projected total)."""
    run = _done_run(request, run_id)
    artifact, measurement = _measured_artifact(run)
    device, strategy = _chosen_plan(artifact, plan.device, plan.strategy)
    try:
        view = plan_graph(run, artifact, measurement, device, strategy)
    except PlanUnavailable as error:
        raise ApiError(422, str(error)) from None
    return JsonResponse({"id": run.pk, "device": device, "strategy": strategy, **view})


def _chosen_plan(artifact: dict, device: str, strategy: str) -> tuple[str, str]:
    """plan_choice's (device, strategy), its refusal a 400 naming the choices."""
    try:
        return plan_choice(artifact, device, strategy)
    except PlanUnavailable as error:
        raise ApiError(400, str(error)) from None


def _setup(query: schemas.TimelineQuery):
    """The data-parallel set-up a timeline query asks for, or None; a 400 naming a bad one."""
    if query.dp_world is None:
        return None
    try:
        return data_parallel(query.dp_world, query.interconnect, query.bucket_mb)
    except InputError as error:
        raise ApiError(400, str(error)) from None


TIMELINE_REFUSED = (400, schemas.Error, "A device or strategy the run does not have (the message "
                                        "lists them), or an interconnect that is not one.")


@api.get(f"{RUN}/timeline", url_name="api-run-timeline", operation_id="getPlanTimeline",
         auth=ANYONE,
         summary="One plan's timeline (each kernel's start and end per model, when each output "
                 "is ready, the critical path) and, with dp_world, its data-parallel overlap.",
         **answers((200, schemas.PlanTimeline, "The timeline."), TIMELINE_REFUSED, NOT_FOUND,
                   NOT_DONE, openapi_extra=OPEN))
def run_timeline(request: HttpRequest, run_id: str,
                 query: Query[schemas.TimelineQuery]) -> JsonResponse:
    """`?device=D&strategy=S&runtime=graph|stream&dp_world=N&interconnect=nvlink|ib|GBPS&
    bucket_mb=M`; worked out from the stored artifact (with the newest measurement's timings)
    on each request: milliseconds, even for a plan of thousands of kernels."""
    run = _done_run(request, run_id)
    artifact, _ = _measured_artifact(run)
    device, strategy = _chosen_plan(artifact, query.device, query.strategy)
    return JsonResponse(timeline_document(run, artifact, device, strategy,
                                          query.runtime or run.runtime, _setup(query)))


TRACE_ANSWER = {"responses": {200: {"content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}}


@api.get(f"{RUN}/plans/{{str:device}}/{{str:strategy}}/trace.perfetto-trace",
         url_name="api-run-plan-trace", operation_id="exportPlanTrace", auth=ANYONE,
         summary="Download a plan's timeline as a Perfetto trace (open it in ui.perfetto.dev): "
                 "kernels as slices on a track per model, outputs ready as instant events, "
                 "with dp_world the all-reduce's buckets.",
         **answers((200, None, "An attachment (Content-Disposition): Perfetto's protobuf trace "
                               "format."), TIMELINE_REFUSED, NOT_FOUND, NOT_DONE,
                   openapi_extra={**OPEN, **TRACE_ANSWER}))
def plan_trace(request: HttpRequest, run_id: str, device: str, strategy: str,
               query: Query[schemas.TimelineQuery]) -> HttpResponse:
    """The same query as getPlanTimeline (its device and strategy in the path)."""
    run = _done_run(request, run_id)
    artifact, _ = _measured_artifact(run)
    device, strategy = _chosen_plan(artifact, device, strategy)
    data = trace_file(run, artifact, device, strategy, query.runtime or run.runtime,
                      _setup(query))
    response = HttpResponse(data, content_type="application/octet-stream")
    name = export_name(run, device, strategy, "perfetto-trace")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@api.get(f"{RUN}/plans/{{str:device}}/{{str:strategy}}/model-explorer.json",
         url_name="api-run-plan-model-explorer", operation_id="exportPlanModelExplorer",
         auth=ANYONE,
         summary="Download a plan's op graph in Model Explorer's JSON graph format: each kernel "
                 "a layer of its ops, every node with its kernel, projected time and limiter.",
         **answers((200, schemas.Open, "An attachment (Content-Disposition): one graph "
                                       "collection, {label, graphs}."),
                   TIMELINE_REFUSED, NOT_FOUND, NOT_DONE,
                   (422, schemas.Error, "The run's plan does not match its upload."),
                   openapi_extra=OPEN))
def plan_model_explorer(request: HttpRequest, run_id: str, device: str,
                        strategy: str) -> JsonResponse:
    """docs/api.md "Exports" describes the file."""
    run = _done_run(request, run_id)
    artifact, measurement = _measured_artifact(run)
    device, strategy = _chosen_plan(artifact, device, strategy)
    try:
        graph = model_explorer_file(run, artifact, measurement, device, strategy)
    except PlanUnavailable as error:
        raise ApiError(422, str(error)) from None
    response = JsonResponse(graph)
    name = export_name(run, device, strategy, "model-explorer.json")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# --- What-if and saved plans (explorer/plan_edits.py) -------------------------------------------

PLAN_REFUSED = (400, schemas.Error, "A device or plan the run does not have, an edit list or "
                                    "plan file that is not one (the message names the edit or "
                                    "the field), a name that is not allowed.")


def _plan_call(call):
    """Run `call()`, its refusals as the API's errors."""
    try:
        return call()
    except PlanExists as error:
        raise ApiError(409, str(error)) from None
    except PlanUnavailable as error:
        raise ApiError(400, str(error)) from None
    except PermissionError as error:
        raise ApiError(403, str(error)) from None
    except InputError as error:
        raise ApiError(400, str(error)) from None


@api.post(f"{RUN}/whatif", url_name="api-run-whatif", operation_id="whatIf", auth=ANYONE,
          summary="Edit one of the run's plans and see what it costs: the plan after the edits, "
                  "each edit's kernels before and after and why, priced at once (nothing is "
                  "stored).",
          **answers((200, schemas.WhatIf, "The edited plan, or the plan before the first "
                                          "refused edit with the reason (`refused`)."),
                    PLAN_REFUSED, NO_CSRF, NOT_FOUND, NOT_DONE, openapi_extra=OPEN))
def what_if_plan(request: HttpRequest, run_id: str, body: schemas.WhatIfRequest) -> JsonResponse:
    """Send every edit since the stored plan each time: a shorter list is an undo. Edits are
    replayed on the server's open session of the plan, so an edit answers in tens of
    milliseconds; the first request for a plan opens it (seconds for a big graph)."""
    run = _done_run(request, run_id)
    return JsonResponse(_plan_call(lambda: what_if(run, body.device, body.strategy, body.edits,
                                                   graph=body.graph)))


@api.get(f"{RUN}/plans", url_name="api-run-plans", operation_id="listSavedPlans",
         auth=ANYONE, summary="The plans users saved for the run (custom:NAME), with their "
                              "compile state.",
         **answers((200, schemas.SavedPlanList, "Oldest first."), NOT_FOUND,
                   openapi_extra=OPEN))
def saved_plan_list(request: HttpRequest, run_id: str) -> JsonResponse:
    """A done one is in the run's results like a strategy's plan; a failed one says why."""
    run = _viewable_run(request, run_id)
    return JsonResponse({"plans": [saved.status_dict() for saved in saved_plans(run)]})


@api.post(f"{RUN}/plans", url_name="api-run-plans", operation_id="savePlan",
          summary="Save an edited plan, or a plan file, as a plan of the run (custom:NAME), "
                  "compiled by a worker beside the strategies' plans.",
          **answers((201, schemas.PlanSaved, "Saved and queued to compile."), PLAN_REFUSED,
                    NO_CSRF, NOT_FOUND, NOT_DONE,
                    (409, schemas.Error, "The run has a plan of that name for that device.")))
def save_run_plan(request: HttpRequest, run_id: str, body: schemas.SavePlanRequest
                  ) -> JsonResponse:
    """Its owner and its team save onto the run; anyone else who sees it saves onto a run of
    their own of the same upload (`run` and `own_run` say which)."""
    run = _done_run(request, run_id)
    saved, target = _plan_call(lambda: save_edits(run, request.user, body.model_dump()))
    answer = saved_answer(saved, target, run)
    answer["url"] = request.build_absolute_uri(answer["url"])
    return JsonResponse(answer, status=201)


@api.delete(f"{RUN}/plans/{{int:plan_id}}", url_name="api-run-plan",
            operation_id="deleteSavedPlan",
            summary="Delete a saved plan (the run's owner and its team).",
            **answers((204, None, "Deleted."), NOT_OWNER, NOT_FOUND))
def delete_run_plan(request: HttpRequest, run_id: str, plan_id: int) -> HttpResponse:
    """The plan goes from the run's results with its kernels."""
    run = _viewable_run(request, run_id)
    saved = run.saved_plans.filter(pk=plan_id).first()
    if saved is None:
        raise ApiError(404, f"the run has no saved plan {plan_id}")
    if not can_save_plans(run, request.user):
        raise ApiError(403, "only the run's owner and its team may delete its plans")
    saved.remove()
    return HttpResponse(status=204)


@api.get(f"{RUN}/plans/{{str:device}}/{{str:strategy}}/file", url_name="api-run-plan-file",
         operation_id="getPlanFile", auth=ANYONE,
         summary="A plan of the run as a plan file: its kernels as lists of node names and the "
                 "graph's digest, to apply to the same graph (savePlan, the upload form, the "
                 "CLI's --plan).",
         **answers((200, schemas.Open, "The plan file."), PLAN_REFUSED, NOT_FOUND, NOT_DONE,
                   openapi_extra=OPEN))
def plan_file(request: HttpRequest, run_id: str, device: str, strategy: str) -> JsonResponse:
    """docs/fusion.md "Plan files" describes the format."""
    run = _done_run(request, run_id)
    return JsonResponse(_plan_call(lambda: plan_file_of(run, device, strategy)))


@api.post(f"{RUN}/tune", url_name="api-run-tune", operation_id="tuneRun",
          summary="Tune the run's plans with the autotuner (owner and team): a job on the "
                  "compile queue whose best plan becomes the run's plan `tuned`.",
          **answers((202, schemas.Tuning, "A new tuning, queued."),
                    (200, schemas.Tuning, "One was already queued or running: that one."),
                    PLAN_REFUSED, NOT_OWNER, NOT_FOUND, NOT_DONE))
def tune_run(request: HttpRequest, run_id: str, body: schemas.TuneRequest) -> JsonResponse:
    """Poll getRunTuning until its status is done; the tuned plan then compiles onto the run
    (listSavedPlans shows it) and appears in /results as the strategy `tuned`."""
    run = _done_run(request, run_id)
    job, created = _plan_call(lambda: request_tuning(
        run, request.user, body.device or run.devices[0], body.model, body.search,
        body.budget_s, body.evaluations, body.seed, body.top_k))
    return JsonResponse(_tuning(job), status=202 if created else 200)


@api.get(f"{RUN}/tune", url_name="api-run-tune", operation_id="getRunTuning",
         summary="The run's latest tuning, with its result once done.",
         **answers((200, schemas.Tuning, "The tuning."),
                   (404, schemas.Error, "No such run, or no tuning of it.")))
def run_tuning(request: HttpRequest, run_id: str) -> JsonResponse:
    """Its status while it runs (stage_detail: plans scored and the best so far)."""
    job = latest_tuning(_viewable_run(request, run_id))
    if job is None:
        raise ApiError(404, "the run has not been tuned")
    run = job.run
    return JsonResponse({**_tuning(job),
                         "measured": tuning_measured(run, job, run.shown_measurement())})


def _tuning(job) -> dict:
    """A tuning as the API shows it: its result without its candidates' plan files (the
    measure queue's, not a user's)."""
    result = job.result and {key: value for key, value in job.result.items()
                             if key != "plan_files"}
    return {**job.status_dict(), "result": result}


# --- Tags as baselines (issue 40) --------------------------------------------------------------

TEAM = "/teams/{str:team}"
NOT_A_MEMBER = (404, schemas.Error, "No team of that name or id among the caller's teams.")


def _member_team(request: HttpRequest, value: str) -> Team:
    """A team of the caller's, by name or id; 404 for any other (a stranger learns nothing)."""
    try:
        return _team(request, value)
    except ApiError as error:
        raise ApiError(404, error.message) from None


def _baseline(request: HttpRequest, baseline: TagBaseline) -> dict:
    run = baseline.run
    return {"team": baseline.team.name, "tag": baseline.tag, "graph": baseline.graph_name,
            "run": run.pk, "url": request.build_absolute_uri(reverse("explorer-run",
                                                                     args=[run.pk])),
            "best": best_totals(run.artifact),
            "set_by": baseline.set_by.get_username() if baseline.set_by else None,
            "set_at": baseline.set_at.isoformat()}


@api.get(f"{TEAM}/baselines", url_name="api-team-baselines", operation_id="listBaselines",
         summary="The team's baselines: per tag and graph, the run later runs are compared with "
                 "(members only).",
         **answers((200, schemas.BaselineList, "By graph, then tag."), NOT_A_MEMBER))
def team_baselines(request: HttpRequest, team: str) -> JsonResponse:
    """Each with its run's best plan per device."""
    found = _member_team(request, team).baselines.select_related("run", "set_by", "team")
    return JsonResponse({"baselines": [_baseline(request, baseline) for baseline in found]})


@api.post(f"{TEAM}/baselines", url_name="api-team-baselines", operation_id="setBaseline",
          summary="Make a run the baseline of a tag for its graph in the team (members only), "
                  "in place of the one before.",
          **answers((200, schemas.Baseline, "The baseline now."),
                    (400, schemas.Error, "A run not shared with the team, or not finished."),
                    NO_CSRF,
                    (404, schemas.Error, "No such team among the caller's, or no such run.")))
def set_baseline(request: HttpRequest, team: str, body: schemas.BaselineRequest
                 ) -> JsonResponse:
    """The graph is the run's title (its name, else its file name): runs of later commits
    carry the same name, and a tag's baseline is looked up by it (getRunBaseline)."""
    chosen = _member_team(request, team)
    run = _viewable_run(request, body.run)
    try:
        baseline = TagBaseline.mark(chosen, body.tag, run, request.user)
    except InputError as error:
        raise ApiError(400, str(error)) from None
    return JsonResponse(_baseline(request, baseline))


@api.get(f"{RUN}/baseline", url_name="api-run-baseline", operation_id="getRunBaseline",
         summary="The baseline of a tag for the run's graph in the run's team: what `python -m "
                 "compiler compare RUN --baseline tag:NAME` compares the run with.",
         **answers((200, schemas.Baseline, "The baseline."),
                   (400, schemas.Error, "No tag, or one longer than a tag may be."),
                   (403, schemas.Error, "A run the caller may see that is not a run of one of "
                                        "their teams."),
                   (404, schemas.Error, "No such run, or no baseline of the tag for its "
                                        "graph.")))
def run_baseline(request: HttpRequest, run_id: str,
                 query: Query[schemas.BaselineQuery]) -> JsonResponse:
    """Members of the run's team only: a baseline is the team's."""
    run = _viewable_run(request, run_id)
    if not in_runs_team(run, request.user):
        raise ApiError(403, f"run {run.pk} is not a run of one of your teams: a baseline is "
                            f"a team's (share the run with the team)")
    baseline = TagBaseline.of_run(run, query.tag)
    if baseline is None:
        raise ApiError(404, f"the team {run.team.name} has no baseline of the tag "
                            f"{query.tag!r} for {run.title!r}; set one with setBaseline "
                            f"(python -m compiler baseline RUN --tag {query.tag})")
    return JsonResponse(_baseline(request, baseline))


# --- Exports -------------------------------------------------------------------------------------

def _attachment(response: HttpResponse, run: Run, suffix: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="fusion-run-{run.pk}.{suffix}"'
    return response


@api.get(f"{RUN}/export.json", url_name="api-run-export-json", operation_id="exportRunJson",
         auth=ANYONE, summary="Download the run (metadata, artifact and kernel sources) as one "
                              "JSON file.",
         **answers((200, schemas.Export, "An attachment (Content-Disposition)."), NOT_FOUND,
                   NOT_DONE, openapi_extra=OPEN))
def run_export_json(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's metadata and its whole artifact, kernel sources included (compile_graph's
    output as it was). Built once per run and metadata (a rename makes a new one): the
    917-node step's is 11 MB (0.9 MB gzipped)."""
    run = _done_run(request, run_id)
    detail = _detail(request, run)
    data = cached_gzip(run_key(run, "export.json", digest(detail)), lambda: json_bytes(
        {"run": detail, "artifact": export_artifact(run)}))
    return _attachment(gzipped_response(request, data, "application/json"), run, "json")


def export_artifact(run: Run) -> dict:
    """The run's artifact with its kernels' sources, as compile_graph returned it."""
    sources = {f"{source.device}/{source.strategy}/{source.kernel}": {
        "function": source.function, "source": source.source or None, "ptx": source.ptx or None,
        "line_nodes": source.line_nodes, "resources": source.resources,
        "candidate_plans": source.candidate_plans}
        for source in run.kernel_sources.all().iterator()}
    return {**run.artifact, "sources": sources}


CSV_ANSWER = {"responses": {200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}}


@api.get(f"{RUN}/export.csv", url_name="api-run-export-csv", operation_id="exportRunCsv",
         auth=ANYONE, summary="Download the run's kernels as CSV, one row per device × "
                              "strategy × kernel.",
         **answers((200, None, f"An attachment (Content-Disposition) with the header row "
                               f"{', '.join(CSV_COLUMNS)}; empty cells for fields not "
                               f"produced."),
                   NOT_FOUND, NOT_DONE, openapi_extra={**OPEN, **CSV_ANSWER}))
def run_export_csv(request: HttpRequest, run_id: str) -> HttpResponse:
    """One row per device × strategy × kernel (CSV_COLUMNS); empty cells for null fields.
    Built once per run and measurement."""
    run = _done_run(request, run_id)
    measurement = run.shown_measurement()
    key = run_key(run, "export.csv", measurement.pk if measurement else 0)
    data = cached_gzip(key, lambda: csv_bytes(_with_timings(run.artifact, measurement)))
    return _attachment(gzipped_response(request, data, "text/csv; charset=utf-8"), run, "csv")


def csv_bytes(artifact: dict) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in csv_rows(artifact):
        writer.writerow(["" if value is None else value for value in row])
    return buffer.getvalue().encode()


def csv_rows(artifact: dict) -> list[tuple]:
    """The values of export.csv's rows, in CSV_COLUMNS order."""
    rows = []
    for device, result in artifact["devices"].items():
        for strategy, strategy_result in result["strategies"].items():
            for kernel in strategy_result["kernels"]:
                rows.append((device, strategy, kernel["name"], kernel.get("kind"),
                             len(kernel.get("nodes", [])),
                             *(kernel.get(column) for column in CSV_COLUMNS[5:])))
    return rows


@api.get("/cost-models", url_name="api-cost-models", operation_id="listCostModels",
         summary="The learned cost models per device, newest first: which one the compiler "
                 "uses, why the others are not used, and each one's held-out evaluation next "
                 "to SOL and projected.",
         **answers((200, schemas.CostModels, "The models.")))
def cost_models(request: HttpRequest) -> JsonResponse:
    """The learned cost models of LEARNED_MODEL_DIR and the shipped ones per device, newest
    first, with the one the compiler uses and each model's held-out evaluation (what
    /cost-models shows)."""
    from compiler.cost.learned.registry import catalogue, reading_dirs   # reads headers with torch

    allow_synthetic = settings.LEARNED_ALLOW_SYNTHETIC
    directories = reading_dirs(settings.LEARNED_MODEL_DIR, settings.LEARNED_SHIPPED_MODEL_DIR)
    devices = {}
    for device, statuses in catalogue(directories, allow_synthetic).items():
        devices[device] = [_cost_model(status) for status in statuses]
    return JsonResponse({"allow_synthetic": allow_synthetic, "devices": devices})


def _cost_model(status) -> dict:
    header = status.file.header
    config = header.get("config")
    return {"label": status.label, "version": status.file.version,
            "origin": status.file.origin, "created": header.get("created"),
            "active": status.active, "why_not": status.why_not, "stale": status.stale,
            "readout": config.get("readout") if isinstance(config, dict) else None,
            **{key: header.get(key) for key in ("datasets", "programs", "evaluation",
                                                "readouts", "readout_winner")}}


@api.get("/openapi.json", url_name="api-openapi", operation_id="getOpenApi", auth=None,
         summary="This document.",
         **answers((200, dict, "The OpenAPI description."), public=True))
def openapi(request: HttpRequest) -> JsonResponse:
    """Made from the operations' declarations in this module."""
    return JsonResponse(schema(request.build_absolute_uri("/api/v1")))


def schema(server_url: str) -> dict:
    """The OpenAPI document, with this server's /api/v1 URL as its server. Its parts are those
    of the document made once per process: read them, do not change them."""
    return {**_document(), "servers": [{"url": server_url}]}


@cache
def _document() -> dict:
    return json.loads(json.dumps(api.get_openapi_schema(path_prefix="")))
