"""The JSON API at /api/v1/ (routes in explorer/api_urls.py, schema in explorer/api_schema.py,
guide in docs/api.md): submit a graph, poll a run's status, fetch its results, ask for and read
its GPU measurements, export it.

Authentication: a browser's session, or `Authorization: Bearer <key>` with an ApiToken's key
for scripts. Only token-authenticated requests skip the CSRF check; a session-authenticated
POST needs the CSRF token like any form. Nobody authenticated gets a 401 in JSON, never a
redirect to the login page.

Access follows the pages: a run is shown to whoever `Run.can_view` admits, and anyone else gets
a 404 that reads exactly like a missing run's. Every error is JSON: {"error": <message>}.
"""
from __future__ import annotations

import csv
import io
import json
from functools import wraps

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import EmptyPage, Paginator
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from compiler.cost.launch import DEFAULT_RUNTIME, RUNTIMES
from compiler.errors import InputError, LimitError
from compiler.fusion.explore import STRATEGIES
from compiler.limits import Limits
from explorer.api_schema import schema
from explorer.documents import cached_gzip, digest, gzipped_response, json_bytes, run_key
from explorer.graph_store import StagedFile
from explorer.lookups import by_pk
from explorer.models import ApiToken, KernelSource, Measurement, Run, Team
from explorer.presenters import apply_measurement, find_kernel
from explorer.runs import (PlanUnavailable, holding, plan_choice, plan_graph,
                           request_measurement, retry_run, submit, viewable_runs)
from explorer.uploads import graph_of
from workers.presence import gpu_status

DEFAULT_DEVICES = ["h100"]
PER_PAGE, MAX_PER_PAGE = 50, 200
MAX_TAGS, MAX_TAG_LENGTH = 20, 50

# The columns of export.csv: one row per device × strategy × kernel.
CSV_COLUMNS = ("device", "strategy", "kernel", "kind", "nodes", "dram_bytes", "sol_us",
               "proj_us", "measured_us", "limiter", "occupancy", "waves", "block_size",
               "grid_size", "registers", "shared_bytes", "spill_bytes", "schedule")


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


# Requests that change nothing: all a read-only key may send, and no CSRF check needed.
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")


def _authenticate(request: HttpRequest) -> None:
    """Set request.user from a bearer token, or keep the session's user (checking CSRF for an
    unsafe method); ApiError 401 when neither names an active user."""
    header = request.headers.get("Authorization", "")
    if header:
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
        return
    if not request.user.is_authenticated:
        raise ApiError(401, "authentication required: send 'Authorization: Bearer <API key>' "
                            "(see docs/api.md) or log in")
    if request.method not in SAFE_METHODS:
        rejected = CsrfViewMiddleware(lambda request: None).process_view(request, None, (), {})
        if rejected is not None:
            raise ApiError(403, "CSRF check failed: send the CSRF token with a session, or use "
                                "an API key")


def api_view(*methods: str, public: bool = False, anonymous: bool = False):
    """Allow only these methods, authenticate (unless public) and turn ApiError into JSON.
    `anonymous`: a request with no credentials at all goes on as the anonymous user, who sees
    public runs only (as the run page does for them); credentials given are still checked."""
    def decorator(view):
        @csrf_exempt  # checked in _authenticate for session-authenticated requests only
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            try:
                if request.method not in methods:
                    error = ApiError(405, f"method {request.method} not allowed here")
                    response = error.response()
                    response["Allow"] = ", ".join(methods)
                    return response
                credentials = "Authorization" in request.headers \
                    or request.user.is_authenticated
                if not public and (credentials or not anonymous):
                    _authenticate(request)
                return view(request, *args, **kwargs)
            except ApiError as error:
                return error.response()
        return wrapper
    return decorator


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

@api_view("GET", "POST")
def runs(request: HttpRequest) -> JsonResponse:
    """GET: the runs the caller can view, newest first, paginated and filtered.
    POST: submit a graph (multipart or JSON)."""
    if request.method == "POST":
        return _submit(request)
    found = viewable_runs(request.user)
    query = request.GET.get("q", "").strip()
    if query:
        found = found.filter(Q(name__icontains=query) | Q(filename__icontains=query))
    wanted = {field: request.GET[key] for key, field in (("device", "devices"), ("tag", "tags"))
              if request.GET.get(key)}
    if wanted:
        found = holding(found, wanted)
    per_page = _positive_int(request, "per_page", PER_PAGE)
    if per_page > MAX_PER_PAGE:
        raise ApiError(400, f"per_page is at most {MAX_PER_PAGE}")
    # The page's runs alone are read whole (with their owners and teams): one query for the
    # count, one for the page.
    paginator = Paginator(found.select_related("owner", "team"), per_page)
    try:
        page = paginator.page(_positive_int(request, "page", 1))
    except EmptyPage:
        raise ApiError(404, f"no such page: there are {paginator.num_pages}")

    def page_url(number: int) -> str:
        params = request.GET.copy()
        params["page"] = str(number)
        return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")

    return JsonResponse({
        "count": paginator.count, "page": page.number, "pages": paginator.num_pages,
        "per_page": per_page,
        "next": page_url(page.next_page_number()) if page.has_next() else None,
        "previous": page_url(page.previous_page_number()) if page.has_previous() else None,
        "results": [_summary(request, run) for run in page],
    })


def _positive_int(request: HttpRequest, name: str, default: int) -> int:
    value = request.GET.get(name, str(default))
    if not value.isdigit() or int(value) < 1:
        raise ApiError(400, f"{name} must be a positive integer, not {value!r}")
    return int(value)


def _submit(request: HttpRequest) -> JsonResponse:
    if request.content_type == "application/json":
        fields, data, filename = _json_submission(request)
    elif request.content_type == "multipart/form-data":
        fields, data, filename = _multipart_submission(request)
    else:
        raise ApiError(415, "send the graph as multipart/form-data (a 'file' field) or as "
                            "application/json ({\"filename\": ..., \"text\": ...})")
    holding_nul = sorted(key for key, value in {**fields, "filename": filename}.items()
                         if key != "text" and _holds_nul(value))
    if holding_nul:    # PostgreSQL would refuse to store or even look one up
        raise ApiError(400, f"a NUL character in {', '.join(holding_nul)}")
    devices = _string_list(fields.get("devices"), "devices") or DEFAULT_DEVICES
    strategies = _string_list(fields.get("strategies"), "strategies") or list(STRATEGIES)
    runtime = fields.get("runtime") or DEFAULT_RUNTIME
    if runtime not in RUNTIMES:
        raise ApiError(400, f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    tags = _string_list(fields.get("tags"), "tags")
    if len(tags) > MAX_TAGS or any(len(tag) > MAX_TAG_LENGTH for tag in tags):
        raise ApiError(400, f"at most {MAX_TAGS} tags of at most {MAX_TAG_LENGTH} characters")
    name = fields.get("name") or ""
    if not isinstance(name, str) or len(name) > 200:
        raise ApiError(400, "name must be a string of at most 200 characters")
    visibility = fields.get("visibility") or Run.PRIVATE
    if visibility not in dict(Run.VISIBILITIES):
        raise ApiError(400, f"visibility must be one of {', '.join(dict(Run.VISIBILITIES))}")
    team = _team(request, fields.get("team"))
    if visibility == Run.TEAM and team is None:
        raise ApiError(400, "a run shared with a team needs the team")
    try:
        run, created = submit(request.user, data, filename, devices=devices,
                              strategies=strategies, name=name, tags=tags,
                              visibility=visibility, team=team, runtime=runtime)
    except LimitError as error:      # the file is past a configured limit: too large
        raise ApiError(413, str(error))
    except InputError as error:
        raise ApiError(400, str(error))
    body = {"id": run.pk, "status": run.status, **_links(request, run)}
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


def _json_submission(request: HttpRequest) -> tuple[dict, bytes, str]:
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
    except (UnicodeDecodeError, ValueError) as error:
        raise ApiError(400, f"the request body is not valid JSON: {error}")
    if not isinstance(fields, dict):
        raise ApiError(400, "the request body must be a JSON object")
    filename, text = fields.get("filename"), fields.get("text")
    if not isinstance(filename, str) or not filename or not isinstance(text, str):
        raise ApiError(400, "give the graph as \"filename\" (its suffix picks the format: "
                            ".hlo, .json) and \"text\"")
    return fields, text.encode(), filename


def _multipart_submission(request: HttpRequest) -> tuple[dict, StagedFile, str]:
    """The fields and the graph of a multipart submission: one 'file', or several (an ONNX
    model with its external data files; or one .zip of them: explorer/uploads.py), each
    streamed to disk by the upload handler (explorer/graph_store.py), never held whole."""
    uploads = request.FILES.getlist("file")
    if not uploads:
        raise ApiError(400, "give the graph as the multipart field 'file'")
    try:
        data, filename = graph_of(uploads)
    except LimitError as error:
        raise ApiError(413, str(error))
    except InputError as error:
        raise ApiError(400, str(error))
    fields = {key: request.POST.get(key) for key in ("name", "visibility", "team", "runtime")}
    for key in ("devices", "strategies", "tags"):
        # Repeated fields or one comma-separated field: devices=a100&devices=h100, a100,h100.
        fields[key] = [item.strip() for value in request.POST.getlist(key)
                       for item in value.split(",") if item.strip()]
    return fields, data, filename


def _holds_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    return isinstance(value, list) and any(_holds_nul(item) for item in value)


def _string_list(value, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ApiError(400, f"{name} must be a list of strings")
    return value


def _team(request: HttpRequest, value) -> Team | None:
    """The team named (by name or id) in a submission, which the caller must belong to."""
    if value in (None, ""):
        return None
    teams = Team.objects.filter(memberships__user=request.user)
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        team = teams.filter(pk=int(value)).first()
    else:
        team = teams.filter(name=str(value)).first()
    if team is None:
        raise ApiError(400, f"you are not a member of a team {value!r}")
    return team


# --- One run -------------------------------------------------------------------------------------

@api_view("GET", "DELETE")
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run's metadata; DELETE: its owner deletes it (204), with its kernels,
    measurements and, unless another run shares it, its graph's bytes."""
    run = _viewable_run(request, run_id)
    if request.method == "DELETE":
        _owner_only(request, run, "delete it")
        run.delete_with_graph()
        return HttpResponse(status=204)
    return JsonResponse(_detail(request, run))


@api_view("POST")
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


@api_view("GET")
def run_status(request: HttpRequest, run_id: str) -> JsonResponse:
    return JsonResponse(_viewable_run(request, run_id).status_dict())


@api_view("GET")
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


@api_view("GET", "POST")
def run_measurements(request: HttpRequest, run_id: str) -> JsonResponse:
    """GET: the run's measurements, newest first, and whether a GPU worker is online.
    POST: ask for one (202); while one waits or runs, that one (200)."""
    run = _done_run(request, run_id)
    if request.method == "POST":
        measurement, created = request_measurement(run, request.user)
        return JsonResponse(_measurement(request, measurement), status=202 if created else 200)
    gpu = gpu_status()
    return JsonResponse({"gpu_worker_online": gpu["online"], "gpu_workers": gpu["summary"],
                         "results": [_measurement(request, measurement) for measurement in
                                     run.measurements.defer("result")]})


@api_view("GET")
def run_measurement(request: HttpRequest, run_id: str, measurement_id: int) -> JsonResponse:
    """One measurement with its result (compiler.measure's MEASUREMENTS) once done."""
    run = _viewable_run(request, run_id)
    measurement = run.measurements.filter(pk=measurement_id).first()
    if measurement is None:
        raise ApiError(404, f"no measurement {measurement_id} of this run")
    return JsonResponse(_measurement(request, measurement, full=True))


@api_view("GET")
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


@api_view("GET", anonymous=True)   # the run page's fusion view, for anyone who may see it
def run_graph(request: HttpRequest, run_id: str) -> JsonResponse:
    """The uploaded graph with one plan's kernels on it (compiler/fusion/graph_view.py):
    `?device=D&strategy=S`, by default the run's first device and its fastest plan (the
    lowest projected total)."""
    run = _done_run(request, run_id)
    artifact, measurement = _measured_artifact(run)
    try:
        device, strategy = plan_choice(artifact, request.GET.get("device"),
                                       request.GET.get("strategy"))
    except PlanUnavailable as error:
        raise ApiError(400, str(error)) from None
    try:
        view = plan_graph(run, artifact, measurement, device, strategy)
    except PlanUnavailable as error:
        raise ApiError(422, str(error)) from None
    return JsonResponse({"id": run.pk, "device": device, "strategy": strategy, **view})


# --- Exports -------------------------------------------------------------------------------------

def _attachment(response: HttpResponse, run: Run, suffix: str) -> HttpResponse:
    response["Content-Disposition"] = f'attachment; filename="fusion-run-{run.pk}.{suffix}"'
    return response


@api_view("GET", anonymous=True)
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


@api_view("GET", anonymous=True)
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


@api_view("GET")
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


@api_view("GET", public=True)
def openapi(request: HttpRequest) -> JsonResponse:
    return JsonResponse(schema(request.build_absolute_uri("/api/v1")))
