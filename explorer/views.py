"""Thin function views: they read the request and render; rules live on models or in compiler/.

Access: a run is shown to whoever `Run.can_view` admits. Anyone else gets a 404, never a 403,
so that a run's id says nothing to a stranger; an anonymous visitor is sent to log in first.
"""
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import (Http404, HttpRequest, HttpResponse, HttpResponseBadRequest,
                         JsonResponse)
from django.middleware.csrf import get_token
from django.core.cache import cache, caches
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve, reverse
from django.utils.safestring import mark_safe
from django.views import defaults
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from compiler.errors import InputError
from compiler.fusion.autotune import STRATEGY as TUNED_STRATEGY
from compiler.importers import detect_format
from compiler.kernels.matching import match_counts, match_kernels, plan_changes
from compiler.limits import Limits
from compiler.stages.dp import DEFAULT_BUCKET_MB, data_parallel
from compiler.target.devices import get_device
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES, RUNTIME_LABELS
from explorer import documents, plots, presenters
from explorer.forms import RunSettingsForm, UploadForm, pasted_text_limit, samples
from explorer.lookups import by_pk
from explorer.charts import Line, line_chart
from explorer.models import (MAX_TAG_LENGTH, ApiToken, GraphBlob, KernelSource, Measurement,
                             Run, TagBaseline, TuneJob)
from explorer.presence import gpu_status
from explorer.runs import (DEFAULT_TUNE_S, MAX_TUNE_S, PlanUnavailable, QuotaExceeded,
                           can_save_plans, compiled_plans, graph_digest, holding,
                           latest_tuning, learned_model_files, plan_choice, plan_graph,
                           request_measurement, results_stamp, retry_run, save_plan,
                           in_runs_team, saved_plans, storage_usage, submit, tuning_measured,
                           upload_bytes, upload_text, viewable_runs)
from explorer.timelines import timeline_document


class LoginNeeded(Exception):
    """Raised by `_viewable_run` and `_owner_only` for an anonymous visitor; the view redirects
    to the login."""


def _viewable_run(request: HttpRequest, run_id: str) -> Run:
    """The run, read in plain SQL (explorer/lookups.py); its artifact and owner are read when
    used (a page kept fresh reads neither)."""
    run = by_pk(Run, run_id)
    if run is not None and run.can_view(request.user):
        return run
    if not request.user.is_authenticated:
        raise LoginNeeded
    raise Http404("No such run.")


def _run_view(view):
    """Look the run up and check access before `view(request, run, ...)` runs."""
    def wrapper(request: HttpRequest, run_id: str, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, _viewable_run(request, run_id), *args, **kwargs)
        except LoginNeeded:
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


@require_http_methods(["GET", "POST"])
def index(request: HttpRequest) -> HttpResponse:
    """The upload form (uploads need a login) with the sample gallery."""
    if request.method == "POST":
        return _upload(request)
    form = UploadForm(user=request.user) if request.user.is_authenticated else None
    return render(request, "explorer/index.html", {"form": form, "samples": samples()})


@login_required
def _upload(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST, request.FILES, user=request.user)
    status = 400
    if form.is_valid():
        data, filename = form.graph()
        asked = {"name": form.cleaned_data["name"],
                 "visibility": form.cleaned_data["visibility"],
                 "team": form.cleaned_data["team"]}
        try:
            run, created = submit(request.user, data, filename,
                                  devices=form.cleaned_data["devices"],
                                  strategies=form.cleaned_data["strategies"],
                                  runtime=form.cleaned_data["runtime"] or DEFAULT_RUNTIME,
                                  **asked)
        except InputError as error:
            form.add_error(None, str(error))
            status = 413 if isinstance(error, QuotaExceeded) else 400
        else:
            _apply_plan_files(request, run, form.plans(), filename)
            changed = [] if created else _labels_changed(run, asked)
            if changed:
                return render(request, "explorer/upload_exists.html", {
                    "run": run, "asked": asked, "changed": changed})
            return redirect("explorer-run", run_id=run.pk)
    return render(request, "explorer/index.html", {"form": form, "samples": samples()},
                  status=status)


def _apply_plan_files(request: HttpRequest, run: Run, plans: list, filename: str) -> None:
    """Save the upload's plan files as plans of its run (explorer/runs.py `save_plan`), each
    refusal a message on the run's page: a file made for another graph is refused here when
    the upload is small enough to import in the request, else by the compile worker."""
    small = run.graph_id is not None and GraphBlob.objects.filter(
        pk=run.graph_id, size__lte=settings.UPLOAD_INLINE_IMPORT_BYTES).exists()
    for device, name, plan_file in plans:
        try:
            save_plan(run, request.user, device, name, plan_file, check_graph=small)
        except InputError as error:
            messages.error(request, f"plan file {name}: {error}")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's 400 page (handler400). A form whose fields besides its files hold more than
    DATA_UPLOAD_MAX_MEMORY_SIZE (pasted text past 2.5 MB) is refused by Django as it parses
    the request (in the CSRF check, which reads the form before the view), with nothing kept
    of it (RequestDataTooBig): on the upload page the form is shown again, empty, with the
    limit and what to do (413). Any other bad request gets Django's own page."""
    user = getattr(request, "user", None)   # none when a middleware before the login's failed
    if isinstance(exception, RequestDataTooBig) and user is not None and user.is_authenticated \
            and request.path_info == reverse("explorer-index"):
        error = (f"Graph text: the form's text fields hold more than {pasted_text_limit()}, "
                 f"so nothing was read of them: save the pasted text as a file and choose "
                 f"the file instead (a file may be up to "
                 f"{filesizeformat(Limits.from_env().max_input_bytes)}).")
        return render(request, "explorer/index.html", {
            "form": UploadForm(user=user), "samples": samples(), "upload_error": error},
            status=413)
    return defaults.bad_request(request, exception)


def _labels_changed(run: Run, asked: dict) -> list[str]:
    """The labels an upload asked for that its existing run (the same graph and options, so
    the same id) does not have: the upload page then says so instead of opening the run with
    its old labels as if they were the new ones."""
    changed = []
    if asked["name"] and asked["name"] != run.name:
        changed.append("name")
    if asked["visibility"] != run.visibility:
        changed.append("visibility")
    if (asked["team"].pk if asked["team"] else None) != run.team_id \
            and asked["visibility"] == Run.TEAM:
        changed.append("team")
    return changed


@require_GET
@_run_view
def run_page(request: HttpRequest, run: Run) -> HttpResponse:
    """Progress while the run compiles; the comparison, plans and kernels once it is done."""
    if run.status == Run.DONE and not len(messages.get_messages(request)):
        return _kept_run_page(request, run)
    owner = request.user.pk == run.owner_id
    return _render_run(request, run, RunSettingsForm.for_run(run, request.user) if owner else None)


# How long a finished run's page is served as it was rendered for the same visitor (seconds).
# A page costs one rendering per visitor (anonymous visitors are one) and web process every few
# seconds rather than one per visit: under load, a page rendered for each request (its forms,
# pickers and measurement line) cost the owner's visits 10-12 ms of CPU each, a kept one about a
# third of that (benchmarks/load.py). The key names what the page shows that a visitor expects
# to see change at once: the run's row as read for this request (results stamp, labels, owner);
# for someone logged in also who they are, the run's newest measurement (asked for, running,
# done) and the compare pickers' runs (`Run.page_stamp`). What else the page reads (the
# GPU workers' presence, a team joined, an anonymous visitor's measurement line and same-graph
# picker) may lag by this long. A page with a message to show (after a form) is never kept.
RUN_PAGE_CACHE_S = 5

# Where the request's CSRF token goes in a kept page: rendered in place of the token, so that
# one rendering serves the same user's browsers (each has a token of its own) and each request
# puts its own in. An HTML comment: no escaped text can spell it.
CSRF_MARKER = mark_safe("<!-- the request's CSRF token -->")


def _kept_run_page(request: HttpRequest, run: Run) -> HttpResponse:
    pages = caches["pages"]
    # The owner's id, not name: the owner's row is read only to render (a renamed user shows
    # once the kept page lapses).
    labels = documents.digest([run.name, run.tags, run.filename, run.visibility, run.team_id,
                               run.owner_id])
    key = f"run-page:{run.pk}:{results_stamp(run)}:{labels}:{documents.accepts_gzip(request)}"
    user = request.user
    if not user.is_authenticated:
        response = pages.get(key)
        if response is None:
            response = _render_run(request, run, None)
            pages.set(key, response, RUN_PAGE_CACHE_S)
        return response
    key += ":" + documents.digest([user.pk, user.get_username(), run.page_stamp(user)])
    # The page around its results, and the results' key in the results' cache.
    html, results_key = pages.get(key, (None, None))
    results = cache.get(results_key) if results_key else None
    if results is None:
        form = RunSettingsForm.for_run(run, user) if user.pk == run.owner_id else None
        html, results_key, results = _run_page_parts(request, run, form, run.latest_measurement(),
                                                     csrf_token=CSRF_MARKER)
        pages.set(key, (html, results_key), RUN_PAGE_CACHE_S)
    return documents.page_response(request, html.replace(CSRF_MARKER, get_token(request)),
                                   RESULTS_MARKER, results)


def _run_context(request: HttpRequest, run: Run,
                 settings_form: RunSettingsForm | None) -> dict:
    """What the run page shows of a run in any state."""
    return {"run": run, "status": run.status_dict(),
            "is_owner": request.user.pk == run.owner_id, "settings_form": settings_form}


def _render_run(request: HttpRequest, run: Run, settings_form: RunSettingsForm | None,
                status: int = 200) -> HttpResponse:
    if run.status != Run.DONE:
        context = {**_run_context(request, run, settings_form), "preview_html": _preview(run)}
        return render(request, "explorer/run.html", context, status=status)
    html, _, results = _run_page_parts(request, run, settings_form, run.latest_measurement())
    return documents.page_response(request, html, RESULTS_MARKER, results, status)


def _run_page_parts(request: HttpRequest, run: Run, settings_form: RunSettingsForm | None,
                    latest: Measurement | None,
                    **extra) -> tuple[str, str, documents.Fragment]:
    """A finished run's page with RESULTS_MARKER where its results go, and those results
    (rendered once per run and measurement) with their key in the cache; `extra`: more of the
    template's context."""
    measured = _measured_by(run, latest)
    results_key = _results_key(run, measured, "page-fragment")
    results = _cached(run, measured, "page-fragment", lambda: documents.Fragment.of(
        render_to_string("explorer/run_results.html",
                         _results_context(run, _devices(run, measured),
                                          run.artifact["graph"]))))
    context = {
        **_run_context(request, run, settings_form),
        "results_html": RESULTS_MARKER,
        "measurement": presenters.measurement_state(latest, _gpu_status(), run.compiler_version),
        "can_measure": request.user.is_authenticated,
        "other_runs": _other_runs(request.user, run),
        **_saved_plans_context(request, run),
        **_baseline_context(request, run),
        **extra,
    }
    return render_to_string("explorer/run.html", context, request), results_key, results


# Where the results go in a finished run's page: they are most of it (159 kB of its 166 for the
# 917-node transformer step), rendered and compressed once per run and measurement, and put in
# the page rendered for each request (an HTML comment, which no escaped text can spell).
RESULTS_MARKER = mark_safe("<!-- the run's results -->")


# How long a web process reuses what it read of the GPU workers' announcements (seconds). They
# change when a worker starts or stops (and lapse after three heartbeats); reading them is a
# SCAN of the broker's Redis, whose length grows with everything else Redis holds.
GPU_STATUS_CACHE_S = 5


def _gpu_status() -> dict:
    return cache.get_or_set(f"gpu-status:{settings.REDIS_URL}", gpu_status, GPU_STATUS_CACHE_S)


# Rendered results of finished runs are cached this long; their key names everything they
# show, so a new measurement or a recompiled run gets a new key rather than a stale page.
RESULTS_CACHE_S = 24 * 3600


def _measured_by(run: Run, latest: Measurement | None) -> Measurement | None:
    """`run.shown_measurement()`, sparing the query when `latest` (the run's newest
    measurement) is finished or there is none."""
    if latest is None or latest.status == Measurement.DONE:
        return latest
    return run.shown_measurement()


def _results_key(run: Run, measured: Measurement | None, part: str) -> str:
    return f"run-results:{run.pk}:{results_stamp(run)}:{measured.pk if measured else 0}:{part}"


def _cached(run: Run, measured: Measurement | None, part: str, render_part):
    key = _results_key(run, measured, part)
    value = cache.get(key)
    if value is None:
        value = render_part()
        cache.set(key, value, RESULTS_CACHE_S)
    return value


def _devices(run: Run, measured: Measurement | None) -> dict:
    """The artifact's devices, with the measured timings merged in."""
    artifact = run.artifact
    result = None
    if measured is not None:
        result = Measurement.objects.values_list("result", flat=True).get(pk=measured.pk)
    return presenters.apply_measurement(artifact["devices"], result)


def _preview(run: Run) -> str:
    """The run page's preview while the run compiles (templates/explorer/run_preview.html):
    the results of the plans explored so far, as their explore stage priced them, with what
    waits for the build marked pending; empty (and hidden) before the first plan is explored
    and nothing once the run has ended. Rendered for each request: it changes as plans are
    explored."""
    if run.status not in (Run.QUEUED, Run.RUNNING):
        return ""
    preview = run.preview
    context = {"run": run, "explored": None}
    if preview is not None:
        context = {**_results_context(run, preview["devices"], preview["graph"], preview=True),
                   "explored": preview["explored"]}
    return render_to_string("explorer/run_preview.html", context)


@require_GET
@_run_view
def run_preview(request: HttpRequest, run: Run) -> HttpResponse:
    """The preview part of a compiling run's page (`_preview`), which the page fetches again
    as the run's status says more plans are explored."""
    return HttpResponse(_preview(run))


def _results_context(run: Run, devices: dict, graph: dict, preview: bool = False) -> dict:
    """Per device: the strategy comparison and its chart, the strategy tabs, and the panel of
    the tab that opens first (the others load when clicked). `graph`: the artifact's summary
    of the graph. With `preview`, `devices` are a compiling run's preview (Run.preview): the
    plans explored so far, a row for each plan still being explored, and no "why faster"
    (the compare page it links to takes finished runs)."""
    context = {"run": run, "devices": [], "preview": preview,
               "graph_notes": graph.get("notes")}
    runtimes = all(strategy["total"].get("runtimes") for result in devices.values()
                   for strategy in result["strategies"].values() if not strategy["unavailable"])
    if runtimes:
        context["runtime_choices"] = presenters.runtime_choices(run.runtime)
        context["runtime_note"] = (f"the cost plan was searched for "
                                   f"{RUNTIME_LABELS[run.runtime]}; every plan is priced "
                                   f"under both.")
    for name, result in devices.items():
        rows = presenters.comparison_rows(result)
        eager = (result.get("eager") or {}).get("measured_us")
        learned_model = presenters.learned_model(*result["strategies"].values())
        strategies = presenters.ordered_strategies(result["strategies"])
        # The tab that opens first is the fastest plan (the lowest projected total), as the
        # fusion view's and the graph API's default.
        default = presenters.default_plan({"devices": devices}, name)[1]
        panel = _panel_context(run, name, default, result["strategies"][default])
        context["devices"].append({
            "name": name, "full_name": get_device(name).full_name, "comparison": rows,
            "charts": presenters.comparison_charts(rows, eager),
            "runtimes": runtimes, "verdicts": presenters.verdicts(rows, learned_model),
            "launch_sources": presenters.launch_sources(result),
            "why": _why(run, name, result, rows) if runtimes and not preview else None,
            "exploring": [strategy for strategy in presenters.ordered_strategies(run.strategies)
                          if strategy not in result["strategies"]] if preview else [],
            "measured": any(row["measured_us"] is not None for row in rows),
            "learned": any(row["learned_us"] is not None for row in rows),
            "decided": any(row["decided_by"] for row in rows),
            "learned_model": learned_model,
            "eager": result.get("eager"), "measured_on": result.get("measured_on"),
            "strategies": [{"name": strategy, "default": strategy == default,
                            "kernel_count": len(result["strategies"][strategy]["kernels"])}
                           for strategy in strategies],
            "panel": panel})
    return context


def _why(run: Run, device: str, result: dict, rows: list[dict]) -> dict | None:
    """The run page's "why faster" box, with the compare page's link for the same pair."""
    why = presenters.why_faster(result, rows, run.runtime)
    if why is not None:
        why["compare_url"] = (f"{reverse('explorer-compare')}?a={run.pk}:{device}:{why['a']}"
                              f"&b={run.pk}:{device}:{why['b']}&runtime={run.runtime}"
                              f"#why")
    return why


# The decision table shows this many rows at first; the filter searches them all.
DECISIONS_SHOWN = 200
# Kernel table rows a panel holds at first (in plan order); "show all" loads the rest. A
# 48-layer training step's plan has 3,000 kernels, whose rows made a 4.5 MB page.
KERNEL_ROWS_SHOWN = 200


def _panel_context(run: Run, device: str, strategy: str, result: dict,
                   all_rows: bool = False) -> dict:
    """One strategy's panel: the outliers, the kernel table (its first KERNEL_ROWS_SHOWN rows
    unless `all_rows`), who decided the fusions and the decisions."""
    decisions = presenters.decision_rows(result, _measured_moves(run, device, strategy))
    kernels = presenters.kernel_rows(result, get_device(device).sm_count)
    learned_model = presenters.learned_model(result)
    # A compiling run's panel shows its preview: no kernel pages, what nvcc gives pending.
    return {"run": run, "device": device, "strategy": strategy, "preview": run.status != Run.DONE,
            "kernels": kernels if all_rows else kernels[:KERNEL_ROWS_SHOWN],
            "kernel_count": len(kernels),
            # The learned column where a model predicted the plan, even when it left every
            # kernel to the projected model (each cell says why); not where its file failed.
            "learned": learned_model is not None and "error" not in learned_model,
            "learned_model": learned_model,
            "ratios": any(row["proj_over_sol"] is not None for row in kernels),
            "error_min_us": presenters.ERROR_MIN_DEVICE_US,
            "outliers": presenters.outlier_summary(result),
            "decided_by": presenters.decided_by(strategy, result),
            "xla_names": any(row["xla_name"] for row in kernels),
            "cuda_note": presenters.cuda_note(strategy),
            "unavailable": result.get("unavailable"),
            "decisions": decisions[:DECISIONS_SHOWN], "decision_count": len(decisions),
            "charts": list(plots.PLAN_CHARTS.items()),
            "measured_gains": any(row["measured_gain_us"] is not None or row["measured_why"]
                                  for row in decisions),
            "actions": presenters.decision_actions(decisions)}


def _measured_moves(run: Run, device: str, strategy: str) -> list[dict] | None:
    """A tuned plan's moves as the run's shown measurement priced them (else None)."""
    if strategy != TUNED_STRATEGY or run.status != Run.DONE:
        return None
    measured = _shown_tuning_measured(run, run.tunings.filter(device=device).first())
    return measured["moves"] if measured else None


def _shown_tuning_measured(run: Run, job: TuneJob | None) -> dict | None:
    """`tuning_measured` under the run's shown measurement, kept with the run's results: the
    measurement's result (megabytes for a big run) is read once per run state, not for every
    page and panel that shows the tuning."""
    measured = run.shown_measurement()
    if job is None or measured is None:
        return None
    return _cached(run, measured, f"tuning-measured:{job.pk}:{job.status}",
                   lambda: [tuning_measured(run, job, measured)])[0]


def _plan_result(run: Run, device: str, strategy: str, measured: Measurement | None) -> dict:
    """One plan of a done run, or of a compiling run's preview once it is explored."""
    if run.status == Run.DONE:
        devices = _devices(run, measured)
    elif run.preview is not None:
        devices = run.preview["devices"]
    else:
        raise Http404("This run has no results yet.")
    return _strategy_result(devices, device, strategy)


def _strategy_result(devices: dict, device: str, strategy: str) -> dict:
    result = devices.get(device, {}).get("strategies", {}).get(strategy)
    if result is None:
        raise Http404("This run has no such device or strategy.")
    return result


def _cached_if_done(run: Run, measured: Measurement | None, part: str, render_part):
    """`_cached` for a done run's part; a compiling run's preview changes, and is rendered
    anew each time."""
    return _cached(run, measured, part, render_part) if run.status == Run.DONE \
        else render_part()


@require_GET
@_run_view
def plan_panel(request: HttpRequest, run: Run, device: str, strategy: str) -> HttpResponse:
    """The HTML of one strategy's panel, which the run page loads when its tab is opened
    (?rows=all: with every row of its kernel table, for "show all")."""
    measured = run.shown_measurement()
    all_rows = request.GET.get("rows") == "all"

    def render_panel() -> str:
        context = _panel_context(run, device, strategy,
                                 _plan_result(run, device, strategy, measured), all_rows)
        return render_to_string("explorer/run_panel.html", {"panel": context})
    return HttpResponse(_cached_if_done(
        run, measured, f"panel:{device}:{strategy}:{'all' if all_rows else 'first'}",
        render_panel))


@require_GET
@_run_view
def plan_decisions(request: HttpRequest, run: Run, device: str, strategy: str) -> JsonResponse:
    """Every decision of one plan, [action, subject, reason, gain_us, kernels] each, for the
    filter."""
    measured = run.shown_measurement()

    def rows() -> list:
        result = _plan_result(run, device, strategy, None)
        return [[row["action"], row["subject"], row["reason"], row["gain_us"], row["kernels"],
                 row["measured_gain_us"], row["measured_why"]]
                for row in presenters.decision_rows(result,
                                                    _measured_moves(run, device, strategy))]
    return JsonResponse({"decisions": _cached_if_done(run, measured,
                                                      f"decisions:{device}:{strategy}", rows)})


@require_GET
@_run_view
def plan_plot(request: HttpRequest, run: Run, device: str, strategy: str,
              chart: str) -> JsonResponse:
    """One of a plan's interactive charts (explorer/plots.py PLAN_CHARTS) as plotly.js JSON,
    built once per run state and cached with its results; static/explorer/plots.js draws it."""
    if chart not in plots.PLAN_CHARTS:
        raise Http404("No such chart.")
    measured = run.shown_measurement()
    spec = get_device(device) if device in run.devices else None
    if spec is None or run.status != Run.DONE:
        raise Http404("This run has no such plan yet.")
    # The timeline's options: ?runtime=graph|stream&dp_world=N&interconnect=nvlink|ib|GBPS
    # &bucket_mb=M (the API's getPlanTimeline takes the same).
    options = {key: request.GET.get(key, "")[:OPTION_LENGTH] for key in TIMELINE_OPTIONS}
    runtime = options["runtime"] if options["runtime"] in RUNTIMES else run.runtime

    def figure() -> dict:
        devices = _devices(run, measured)
        result = _strategy_result(devices, device, strategy)

        def kernel_url(name: str) -> str:
            return reverse("explorer-kernel", args=[run.pk, device, strategy, name])
        if chart == "roofline":
            return plots.plan_roofline(result, spec, kernel_url)
        if chart == "accuracy":
            return plots.accuracy(result, kernel_url)
        try:
            setup = None if not options["dp_world"] else data_parallel(
                float(options["dp_world"]), options["interconnect"] or "nvlink",
                float(options["bucket_mb"] or DEFAULT_BUCKET_MB))
        except (InputError, ValueError) as error:
            return {"empty": f"No data-parallel overlap: {error}"}
        artifact = {**run.artifact, "devices": devices}
        return plots.timeline(timeline_document(run, artifact, device, strategy, runtime,
                                                setup))
    part = f"plot:{device}:{strategy}:{chart}:{runtime}:" + ":".join(
        options[key] for key in TIMELINE_OPTIONS[1:])
    return JsonResponse(_cached(run, measured, part, figure))


TIMELINE_OPTIONS = ("runtime", "dp_world", "interconnect", "bucket_mb")
# A timeline option's value is a word or a number: longer ones are cut (they are part of a
# cache key).
OPTION_LENGTH = 24


@require_GET
@_run_view
def tuning_plot(request: HttpRequest, run: Run) -> JsonResponse:
    """The latest done tuning's search curve as plotly.js JSON (explorer/plots.py)."""
    job = latest_tuning(run)
    if job is None or job.status != TuneJob.DONE:
        raise Http404("This run has no finished tuning.")
    return JsonResponse(plots.tuning_curve(job.result or {}))


@require_POST
@_run_view
def measure(request: HttpRequest, run: Run) -> HttpResponse:
    """Ask a GPU worker to measure the run (anyone logged in who can see it)."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
    try:
        request_measurement(run, request.user)
    except ValueError as error:
        return HttpResponseBadRequest(str(error))
    return redirect("explorer-run", run_id=run.pk)


def _plans_by_device(run: Run) -> list[tuple[str, list[str]]]:
    return presenters.plans_by_device(run.devices, run.strategies, compiled_plans(run))


def _plan_choices(run: Run, by_device: list[tuple[str, list[str]]] | None = None) -> list[dict]:
    """Every (device, plan) of the run for the "compare strategies" picker, its saved plans
    after its strategies; A starts on the first device's first strategy, B on its cost plan
    (the last strategy without one). `by_device`: `_plans_by_device(run)`, when the caller
    has it."""
    by_device = by_device if by_device is not None else _plans_by_device(run)
    plans = [{"value": f"{run.pk}:{device}:{strategy}",
              "label": f"{device} · {strategy}", "a": False, "b": False}
             for device, strategies in by_device for strategy in strategies]
    if plans:
        first = [name for name in by_device[0][1] if not name.startswith("custom")] \
            or by_device[0][1]
        plans[0]["a"] = True
        plans[first.index("cost") if "cost" in first else len(first) - 1]["b"] = True
    return plans


def _tuning_context(run: Run, can_tune: bool) -> dict:
    """What the run page's tuning card shows (templates/explorer/tuning.html): the latest
    tuning, its chart of the best score against plans scored, and, for those who may tune
    (`can_tune`), the form's choices (asking whether a learned model exists imports torch: a
    visitor who cannot tune does not pay for it)."""
    job = latest_tuning(run)
    result = job.result if job is not None and job.status == TuneJob.DONE else None
    chart = None
    if result and result.get("history"):
        # The gain over the best start, which starts at zero and only grows: a line from zero
        # reads at a glance where an absolute total of thousands of µs would look flat.
        history = result["history"]
        evaluations = max(result["evaluations"], history[-1][0], 1)
        start = history[0][2]
        xs = [entry[0] for entry in history] + [evaluations]
        ys = [start - entry[2] for entry in history] + [start - history[-1][2]]
        chart = line_chart(f"Gain over the best start ({result['model']} model)",
                           [Line("gain", xs, ys, "#3b6fd8", steps=True)], [],
                           "plans scored", "µs below the best start")
    learned = can_tune and learned_model_files(run.devices)
    return {"tuning": job, "tuning_result": result, "tuning_chart": chart,
            "tuning_measured": _shown_tuning_measured(run, job),
            "tuning_pending": job is not None and job.status in (TuneJob.QUEUED,
                                                                 TuneJob.RUNNING),
            "tune_models": [m for m in ("projected", "learned", "sol")
                            if m != "learned" or learned],
            "can_tune": can_tune, "tune_default_s": DEFAULT_TUNE_S,
            "tune_max_s": MAX_TUNE_S}



def _saved_plans_context(request: HttpRequest, run: Run) -> dict:
    """What the run page shows of its saved plans and plan files (templates/explorer/
    saved_plans.html), its fusion view's and compare form's plan pickers, and its tuning card
    (who may save plans may tune)."""
    saved = saved_plans(run)
    may_save = can_save_plans(run, request.user)
    by_device = presenters.plans_by_device(
        run.devices, run.strategies,
        [(plan.device, plan.strategy) for plan in saved if plan.status == plan.DONE])
    return {"saved_plans": saved,
            "saved_plans_pending": any(p.status in (p.QUEUED, p.RUNNING) for p in saved),
            "can_save_plans": may_save,
            "plans": _plan_choices(run, by_device),
            "plan_names": presenters.plan_names(by_device),
            "plan_files": by_device,
            **_tuning_context(run, may_save)}


# How many runs the run page offers to compare with.
COMPARE_CHOICES = 50


def _other_runs(user, run: Run) -> list[tuple[str, list[Run]]]:
    """Other finished runs to compare with: of the same graph, every run the user may see
    (the team's and public ones too), then the user's own runs of other graphs."""
    same = _same_graph_runs(user, run, besides=run)
    others = _other_graph_runs(user, run) if user.is_authenticated else []
    groups = [("same graph", same), ("other graphs", others)]
    return [(label, members) for label, members in groups if members]


def _other_graph_runs(user, run: Run) -> list[Run]:
    """The user's finished runs of graphs other than `run`'s, newest first."""
    return list(Run.objects.filter(owner=user, status=Run.DONE).exclude(pk=run.pk)
                .exclude(graph_sha256=run.graph_sha256).order_by("-created")
                .only(*RUN_CHOICE_FIELDS)[:COMPARE_CHOICES])


# What a run picker needs of each run.
RUN_CHOICE_FIELDS = ("id", "name", "filename", "created", "devices", "strategies", "owner",
                     "visibility")


def _same_graph_runs(user, run: Run, besides: Run | None = None) -> list[Run]:
    """The finished runs of `run`'s graph the user may see, newest first, but for `besides`."""
    runs = viewable_runs(user).filter(graph_sha256=run.graph_sha256, status=Run.DONE)
    if besides is not None:
        runs = runs.exclude(pk=besides.pk)
    return list(runs.select_related("owner").order_by("-created")
                .only(*RUN_CHOICE_FIELDS)[:COMPARE_CHOICES])


@require_POST
@_run_view
def run_settings(request: HttpRequest, run: Run) -> HttpResponse:
    """The owner renames, tags or shares the run; anyone else who can see it is refused."""
    _owner_only(request, run, "change it")
    form = RunSettingsForm(request.POST, user=request.user, run=run)
    if not form.is_valid():
        return _render_run(request, run, form, status=400)
    form.apply(run)
    return redirect("explorer-run", run_id=run.pk)


@require_POST
@_run_view
def run_baseline(request: HttpRequest, run: Run) -> HttpResponse:
    """A member of the run's team makes the finished run the baseline of a tag (e.g. main) for
    its graph in the team, as `python -m compiler baseline` does (docs/ci.md): later runs of
    the graph are gated against it, and the team page tracks them."""
    if not request.user.is_authenticated:
        raise LoginNeeded
    if not in_runs_team(run, request.user):
        raise PermissionDenied("Only the members of the run's team can make it a baseline.")
    tag = request.POST.get("tag", "").strip()
    if not tag or len(tag) > MAX_TAG_LENGTH:
        messages.error(request, f"A baseline's tag is 1 to {MAX_TAG_LENGTH} characters.")
    else:
        try:
            TagBaseline.mark(run.team, tag, run, request.user)
            messages.success(request, f"This run is now the baseline of {tag} for "
                                      f"{run.title} in {run.team.name}.")
        except InputError as error:
            messages.error(request, str(error))
    return redirect("explorer-run", run_id=run.pk)


def _baseline_context(request: HttpRequest, run: Run) -> dict:
    """The run page's baseline line: the tags it is the baseline of, and for members of its
    team, the form that makes it one."""
    return {"baseline_of": list(TagBaseline.objects.filter(run=run).select_related("team")),
            "can_mark_baseline": in_runs_team(run, request.user)}


def _owner_only(request: HttpRequest, run: Run, action: str) -> None:
    """PermissionDenied for anyone but the run's owner; an anonymous visitor (perhaps the
    owner, logged out) is sent to log in instead, whatever the run's visibility."""
    if not request.user.is_authenticated:
        raise LoginNeeded
    if request.user.pk != run.owner_id:
        raise PermissionDenied(f"Only the run's owner can {action}.")


@require_POST
@_run_view
def run_retry(request: HttpRequest, run: Run) -> HttpResponse:
    """The owner queues a failed run again; a run that is not failed is left as it is, and one
    whose upload was removed says why it cannot be."""
    _owner_only(request, run, "retry it")
    if not retry_run(run) and run.upload_removed:
        messages.error(request, f"This run cannot be compiled again: the uploaded graph "
                                f"{run.upload_removed_why}.")
    return redirect("explorer-run", run_id=run.pk)


@require_http_methods(["GET", "POST"])
@_run_view
def run_delete(request: HttpRequest, run: Run) -> HttpResponse:
    """The owner deletes the run: a page that asks, then the POST that deletes it with its
    kernels, measurements and (unless another run shares it) its graph's bytes."""
    _owner_only(request, run, "delete it")
    if request.method == "GET":
        return render(request, "explorer/run_delete.html", {"run": run})
    title = run.title
    run.delete_with_graph()
    messages.success(request, f"Deleted the run {title}.")
    return redirect("explorer-history")


@require_GET
@_run_view
def run_status(request: HttpRequest, run: Run) -> JsonResponse:
    """The run's job status, and its latest measurement's (null when there is none)."""
    latest = run.latest_measurement()
    tuning = latest_tuning(run)
    return JsonResponse({**run.status_dict(),
                         "measurement": latest.status_dict() if latest else None,
                         "saved_plans": [saved.status_dict() for saved in saved_plans(run)],
                         "tuning": tuning.status_dict() if tuning else None})


@require_GET
@_run_view
def kernel_page(request: HttpRequest, run: Run, device: str, strategy: str,
                kernel: str) -> HttpResponse:
    """One kernel: source with its line-to-node map, PTX, resources, breakdown and charts."""
    entry = presenters.find_kernel(run.artifact or {}, device, strategy, kernel)
    if entry is None:
        raise Http404("No such kernel in this run.")
    latest = run.latest_measurement()
    measured_by = _measured_by(run, latest)
    if measured_by is not None:
        devices = presenters.apply_measurement(
            {device: run.artifact["devices"][device]},
            Measurement.objects.values_list("result", flat=True).get(pk=measured_by.pk))
        entry = presenters.find_kernel({"devices": devices}, device, strategy, kernel)
    source = KernelSource.objects.filter(run=run, device=device, strategy=strategy,
                                         kernel=kernel).first()
    resources = source.resources if source else None
    spec = get_device(device)
    curves = presenters.occupancy_curves(entry, spec, resources)
    point = presenters.roofline(entry, spec)
    line_nodes = source.line_nodes if source else {}
    drawn = {"pipes": presenters.pipe_utilisation_chart(entry),
             "roofline": presenters.roofline_chart(point) if point else None,
             **(presenters.occupancy_charts(curves) if curves else {})}
    context = {
        "run": run, "device": device, "device_name": spec.full_name, "strategy": strategy,
        "kernel": entry, "source": source, "sms_used": presenters.sms_used(entry, spec.sm_count),
        "cuda_note": presenters.cuda_note(strategy),
        "lines": presenters.source_lines(source.source, line_nodes) if source else [],
        "node_lines": presenters.node_lines(line_nodes),
        "occupancy": curves["current"] if curves else None,
        "roofline": point, "charts": drawn,
        "breakdown": presenters.breakdown_rows(entry),
        "resources": presenters.resource_rows(resources),
        "ptxas_log": (resources or {}).get("ptxas_log", ""),
        "measured": presenters.measured_rows(entry),
        "figures": presenters.kernel_figures(entry, spec),
        "measurement": presenters.measurement_state(latest, _gpu_status(), run.compiler_version),
        "measured_on": (devices[device].get("measured_on") if measured_by else None),
        "candidates": presenters.candidate_rows(entry, source.candidate_plans if source else []),
        "learned_model": presenters.learned_model(
            run.artifact["devices"][device]["strategies"][strategy]),
    }
    return render(request, "explorer/kernel.html", context)


@require_GET
@_run_view
def run_source(request: HttpRequest, run: Run) -> HttpResponse:
    """The uploaded text with line numbers (`#L28`, `#L28-L35` mark lines), each line that
    defines a node coloured by the kernel of the chosen plan that computes it, with a link to
    that kernel's page (Compiler Explorer's line colouring); an ONNX model in ONNX's printable
    text form, each node's line coloured by the kernel computing its outputs.
    `?device=&strategy=`: the plan (default: the first device's fastest)."""
    text = upload_text(run)
    onnx_outputs = None
    if text is None:
        text, onnx_outputs = _onnx_listing(run)
    context = {"run": run, "text_lines": None, "plan_error": None, "devices": [],
               "strategies": [], "device": None, "strategy": None,
               "onnx_text": onnx_outputs is not None}
    nodes_by_line: dict[int, list[dict]] = {}
    if run.status == Run.DONE and run.artifact is not None:
        measured = _measured_by(run, run.latest_measurement())
        artifact = {"devices": _devices(run, measured)}
        try:
            device, strategy = plan_choice(artifact, request.GET.get("device"),
                                           request.GET.get("strategy"))
            view = plan_graph(run, artifact, measured, device, strategy)
        except PlanUnavailable as error:
            context["plan_error"] = str(error)
        else:
            context.update(device=device, strategy=strategy, devices=list(artifact["devices"]),
                           strategies=list(artifact["devices"][device]["strategies"]))
            nodes_by_line = presenters.nodes_by_line(view) if onnx_outputs is None \
                else presenters.nodes_by_outputs(view, onnx_outputs)
    if text is not None:
        context["text_lines"] = presenters.upload_lines(text, nodes_by_line)
    return render(request, "explorer/source.html", context,
                  status=400 if context["plan_error"] else 200)


def _onnx_listing(run: Run) -> tuple[str | None, dict[int, list[str]] | None]:
    """An ONNX upload's printable text and each node line's outputs (compiler/importers/onnx.py
    `printable_text`), or (None, None) for another binary file or one no longer stored."""
    try:
        data = upload_bytes(run)
        if detect_format(run.filename.removesuffix(".gz"), data) != "onnx":
            return None, None
        # The onnx package takes a second to load: only the source of an ONNX upload pays.
        from compiler.importers.onnx import printable_text
        return printable_text(data, run.filename)
    except InputError:   # GraphUnavailable, or a model the worker could not read either
        return None, None


@require_GET
def compare(request: HttpRequest) -> HttpResponse:
    """Two plans side by side: ?a=<run>[:device[:strategy]]&b=... (or ?run=<id>&run=<id>, as
    the history page's checkboxes send them)."""
    a, b = request.GET.get("a"), request.GET.get("b")
    if not (a and b):
        picked = request.GET.getlist("run")
        if len(picked) != 2:
            return HttpResponseBadRequest("Choose two runs to compare: ?a=<run>&b=<run>.")
        a, b = picked
    try:
        side_a = _compare_side(request, a)
        side_b = _compare_side(request, b, prefer_device=side_a["device"],
                               prefer_strategy=side_a["strategy"])
    except LoginNeeded:
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
    kernels_a, kernels_b = side_a["result"]["kernels"], side_b["result"]["kernels"]
    # Kernels are matched by the graph nodes they own: two different graphs can share node
    # names by chance, so the page says when the runs are not of the same graph.
    different = side_a["run"].pk != side_b["run"].pk and \
        graph_digest(side_a["run"]) != graph_digest(side_b["run"])
    rows = match_kernels(kernels_a, kernels_b)
    changes = plan_changes(kernels_a, kernels_b)
    runtime = request.GET.get("runtime")
    runtime = runtime if runtime in RUNTIMES else side_b["run"].runtime
    why = presenters.why_regions(side_a, side_b)
    context = {
        "why": why, "runtime": runtime,
        "runtime_choices": presenters.runtime_choices(runtime) if why else None,
        "a": side_a, "b": side_b,
        "swap_url": f"?a={side_b['spec']}&b={side_a['spec']}",
        "totals": presenters.total_rows(presenters.plan_totals(side_a["result"]),
                                        presenters.plan_totals(side_b["result"])),
        "rows": rows,
        "counts": match_counts(rows),
        "changes": changes,
        "change_groups": [("Split", changes["split"], "of A is split in B into"),
                          ("Merged", changes["merged"], "of B merges A's")],
        "sides": [("A", side_a), ("B", side_b)],
        "deltas_chart": presenters.kernel_delta_chart(rows),
        "different_graphs": different,
        "pick_groups": _compare_candidates(request.user, side_a["run"], side_b["run"]),
    }
    return render(request, "explorer/compare.html", context)


def _compare_candidates(user, run_a: Run, run_b: Run) -> list[dict]:
    """The plans either side of the compare page may pick, one group per run: the two runs
    shown, then every other finished run of A's graph the user may see (a teammate's, a
    public one), newest first."""
    runs = {run.pk: run for run in (run_a, run_b)}
    for run in _same_graph_runs(user, run_a):
        runs.setdefault(run.pk, run)
    return [{"label": f"{run.title} · {run.owner.get_username()} · "
                      f"{run.created:%Y-%m-%d %H:%M}", "plans": _plan_choices(run)}
            for run in runs.values()]


@require_GET
def compare_cuda(request: HttpRequest) -> HttpResponse:
    """The CUDA of one kernel of each side, as a diff: ?a=<run:device:strategy>&ka=<kernel>
    &b=...&kb=... (the compare page links its matched kernels here)."""
    names = {key: request.GET.get(key, "") for key in ("a", "ka", "b", "kb")}
    if not all(names.values()):
        return HttpResponseBadRequest("Name both plans and both kernels: "
                                      "?a=<run:device:strategy>&ka=<kernel>&b=...&kb=...")
    try:
        sides = [_compare_side(request, names["a"]), _compare_side(request, names["b"])]
    except LoginNeeded:
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
    sources = []
    for side, kernel in zip(sides, (names["ka"], names["kb"])):
        source = KernelSource.objects.filter(run=side["run"], device=side["device"],
                                             strategy=side["strategy"], kernel=kernel).first()
        if source is None or not source.source:
            raise Http404(f"{side['device']}/{side['strategy']} of run {side['run'].pk} has no "
                          f"generated CUDA for kernel {kernel!r} (a library call, a kernel "
                          "the code generator refused, or no such kernel).")
        entry = next((k for k in side["result"]["kernels"] if k["name"] == kernel), {})
        sources.append({"side": side, "kernel": kernel, "source": source, "entry": entry})
    diff = presenters.cuda_diff(sources[0]["source"].source, sources[0]["source"].function,
                                sources[1]["source"].source, sources[1]["source"].function)
    return render(request, "explorer/compare_cuda.html", {
        "sides": list(zip(("A", "B"), sources)), "diff": diff,
        "function": presenters.DIFF_FUNCTION,
        "compare_url": f"?a={names['a']}&b={names['b']}"})


def _compare_side(request: HttpRequest, text: str, prefer_device: str | None = None,
                  prefer_strategy: str | None = None) -> dict:
    """One side of a comparison: a run the user can view, and the plan the text names. What
    it leaves out is the other side's device and strategy where this run has them."""
    run_id, device, strategy = presenters.parse_side(text)
    run = _viewable_run(request, run_id)
    if run.status != Run.DONE or not run.artifact:
        raise Http404("This run has no results yet.")
    devices = _devices(run, run.shown_measurement())
    artifact = {**run.artifact, "devices": devices}
    if device is None and prefer_device in devices:
        device = prefer_device
    if strategy is None and prefer_strategy in devices.get(device, {}).get("strategies", {}):
        strategy = prefer_strategy
    plan = presenters.default_plan(artifact, device, strategy)
    if plan is None:
        raise Http404("This run has no such device or strategy.")
    device, strategy = plan
    result = devices[device]["strategies"][strategy]
    return {"run": run, "device": device, "strategy": strategy,
            "spec": f"{run.pk}:{device}:{strategy}", "result": result,
            "learned_model": presenters.learned_model(result),
            "decided_by": presenters.decided_by(strategy, result)}


# Runs per page of the history.
HISTORY_PAGE_SIZE = 25
OWNER_FILTERS = ("me", "team", "public")
# Query parameter -> the Run field (a JSON list) it looks in.
LIST_FILTERS = {"device": "devices", "strategy": "strategies", "tag": "tags"}


@require_GET
@login_required
def history(request: HttpRequest) -> HttpResponse:
    """Every run the user can view, newest first, with filters and a search."""
    query = request.GET
    runs = viewable_runs(request.user)
    if query.get("q"):
        runs = runs.filter(Q(name__icontains=query["q"]) | Q(filename__icontains=query["q"]))
    if query.get("status") in dict(Run.STATUSES):
        runs = runs.filter(status=query["status"])
    owner = query.get("owner")
    if owner == "me":
        runs = runs.filter(owner=request.user)
    elif owner == "team":
        runs = runs.filter(visibility=Run.TEAM).exclude(owner=request.user)
    elif owner == "public":
        runs = runs.filter(visibility=Run.PUBLIC)
    wanted = {field: query[key] for key, field in LIST_FILTERS.items() if query.get(key)}
    if wanted:
        runs = holding(runs, wanted)
    page = Paginator(runs.select_related("owner"),
                     HISTORY_PAGE_SIZE).get_page(query.get("page"))
    best = documents.best_totals(page)
    rows = [{"run": run, "best": best.get(run.pk, [])} for run in page]
    filters = query.copy()
    filters.pop("page", None)
    everything = viewable_runs(request.user).order_by().values_list("devices", "strategies",
                                                                    "tags")
    context = {"page": page, "rows": rows, "query": query, "filters": filters.urlencode(),
               "owners": OWNER_FILTERS, "statuses": [name for name, _ in Run.STATUSES],
               "choices": _filter_choices(everything)}
    return render(request, "explorer/history.html", context)


def _filter_choices(lists) -> dict[str, list[str]]:
    devices, strategies, tags = set(), set(), set()
    for run_devices, run_strategies, run_tags in lists:
        devices.update(run_devices)
        strategies.update(run_strategies)
        tags.update(run_tags)
    return {"device": sorted(devices),
            "strategy": presenters.ordered_strategies(strategies), "tag": sorted(tags)}


# Longest token name a user may give.
TOKEN_NAME_LENGTH = 100


# How long a new key may live, as the API keys page offers it (None: until revoked).
TOKEN_LIFETIMES_DAYS = {"30": 30, "90": 90, "365": 365, "never": None}
NEW_KEY_SESSION = "explorer-new-api-key"


@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request: HttpRequest) -> HttpResponse:
    """The user's API keys: make one, with its scope and lifetime, or revoke one. A new key is
    shown once: the POST keeps it in the session and redirects, and the next GET shows it and
    forgets it (a refresh makes no second key), with the page marked not to be cached. The page
    also shows how much of their storage quota the user's runs, and their teams', take."""
    if request.method == "POST":
        if "revoke" in request.POST:
            revoke = request.POST["revoke"]
            if revoke.isdigit():
                ApiToken.objects.filter(user=request.user, pk=int(revoke)).delete()
            return redirect("explorer-api-tokens")
        name = request.POST.get("name", "").strip()[:TOKEN_NAME_LENGTH]
        scope = request.POST.get("scope", ApiToken.READ)
        lifetime = request.POST.get("expires", "90")
        if scope not in dict(ApiToken.SCOPES) or lifetime not in TOKEN_LIFETIMES_DAYS:
            return HttpResponseBadRequest("unknown scope or lifetime")
        _, key = ApiToken.create_for(request.user, name, scope, TOKEN_LIFETIMES_DAYS[lifetime])
        request.session[NEW_KEY_SESSION] = key
        return redirect("explorer-api-tokens")
    new_key = request.session.pop(NEW_KEY_SESSION, None)
    tokens = ApiToken.objects.filter(user=request.user)
    response = render(request, "explorer/api_tokens.html", {
        "tokens": tokens, "new_key": new_key, "scopes": ApiToken.SCOPES,
        "lifetimes": list(TOKEN_LIFETIMES_DAYS), "storage": storage_usage(request.user)})
    response["Cache-Control"] = "no-store"
    return response


@require_GET
@login_required
def cost_models(request: HttpRequest) -> HttpResponse:
    """The learned cost models in LEARNED_MODEL_DIR and the shipped ones (registry.SHIPPED),
    per device, newest first: the one the
    compiler uses (the newest trained on measured times; synthetic ones too with
    LEARNED_ALLOW_SYNTHETIC), why each other one is not used, and the data and held-out
    figures of the active model or of the one ?model=<label> names. Files that are not
    readable model files are left out (registry.model_files), so a broken file cannot break
    the page."""
    # Imported here: the registry reads headers with torch, which the other pages never need.
    from compiler.cost.learned.registry import catalogue, reading_dirs

    directory = reading_dirs(settings.LEARNED_MODEL_DIR, settings.LEARNED_SHIPPED_MODEL_DIR)
    allow_synthetic = settings.LEARNED_ALLOW_SYNTHETIC
    devices = catalogue(directory, allow_synthetic)
    wanted = request.GET.get("model")
    if wanted and wanted not in {s.label for statuses in devices.values() for s in statuses}:
        raise Http404("No such model.")
    sections = []
    for device, statuses in devices.items():
        active = next((s.file for s in statuses if s.active), None)
        selected = next((s.file for s in statuses if s.label == wanted),
                        active or statuses[0].file)
        # Read defensively: a file written by other code may lack parts of the header.
        evaluation = selected.header.get("evaluation")
        evaluation = evaluation if isinstance(evaluation, dict) else {}
        sections.append({"device": device, "rows": statuses, "active": active,
                         "selected": selected, "header": selected.header,
                         "evaluation": [(split, evaluation.get(split))
                                        for split in ("program", "family")]})
    return render(request, "explorer/cost_models.html",
                  {"sections": sections, "directory": directory,
                   "allow_synthetic": allow_synthetic,
                   "models": ("learned", "sol", "projected")})



def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's 404 page (handler404). An address that only a trailing slash keeps from a
    page (/gallery/ for /gallery) is sent to the page. The page shows the reason a view gave
    (Http404("No such run.")), never Django's own exceptions: an unmatched address is a
    Resolver404, whose text is its class name."""
    if isinstance(exception, Resolver404) and request.method in ("GET", "HEAD") \
            and _is_page(request.path_info.rstrip("/")):
        query = request.META.get("QUERY_STRING", "")
        return redirect(request.path.rstrip("/") + (f"?{query}" if query else ""))
    reason = exception.args[0] if type(exception) is Http404 and exception.args else ""
    return render(request, "404.html", {"reason": reason if isinstance(reason, str) else ""},
                  status=404)


def _is_page(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True
