"""Thin function views: they read the request and render; rules live on models or in compiler/.

Access: a run is shown to whoever `Run.can_view` admits. Anyone else gets a 404, never a 403,
so that a run's id says nothing to a stranger; an anonymous visitor is sent to log in first.
"""
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from compiler.cost.devices import get_device
from compiler.errors import InputError
from explorer import presenters
from explorer.forms import UploadForm, samples
from explorer.models import KernelSource, Run
from explorer.runs import submit_run


class LoginNeeded(Exception):
    """Raised by `_viewable_run` for an anonymous visitor; the view redirects to the login."""


def _viewable_run(request: HttpRequest, run_id: str) -> Run:
    run = Run.objects.filter(pk=run_id).first()
    if run is not None and run.can_view(request.user):
        return run
    if not request.user.is_authenticated:
        raise LoginNeeded
    raise Http404("No such run.")


def _run_view(view):
    """Look the run up and check access before `view(request, run, ...)` runs."""
    def wrapper(request: HttpRequest, run_id: str, *args, **kwargs) -> HttpResponse:
        try:
            run = _viewable_run(request, run_id)
        except LoginNeeded:
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        return view(request, run, *args, **kwargs)
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
    if form.is_valid():
        data, filename = form.graph()
        try:
            run = submit_run(request.user, data, filename,
                             devices=form.cleaned_data["devices"],
                             strategies=form.cleaned_data["strategies"],
                             name=form.cleaned_data["name"],
                             visibility=form.cleaned_data["visibility"],
                             team=form.cleaned_data["team"])
        except InputError as error:
            form.add_error(None, str(error))
        else:
            return redirect("explorer-run", run_id=run.pk)
    return render(request, "explorer/index.html", {"form": form, "samples": samples()},
                  status=400)


@require_GET
@_run_view
def run_page(request: HttpRequest, run: Run) -> HttpResponse:
    """Progress while the run compiles; the comparison, plans and kernels once it is done."""
    context = {"run": run, "status": run.status_dict(), "devices": [], "figures": {}}
    if run.status == "done" and run.artifact:
        for name, result in run.artifact["devices"].items():
            device, figures = _device_context(name, result)
            context["devices"].append(device)
            context["figures"].update(figures)
    return render(request, "explorer/run.html", context)


def _device_context(name: str, result: dict) -> tuple[dict, dict]:
    """The device's tables, and its figures keyed "<device>/comparison",
    "<device>/<strategy>/time" and "<device>/<strategy>/limiter" (the DAG coloured two ways)."""
    rows = presenters.comparison_rows(result)
    figures = {f"{name}/comparison": presenters.comparison_figure(rows)}
    strategies = []
    for strategy in presenters.ordered_strategies(result["strategies"]):
        strategy_result = result["strategies"][strategy]
        decisions = presenters.decision_rows(strategy_result)
        strategies.append({
            "name": strategy,
            "kernels": presenters.kernel_rows(strategy_result),
            "decisions": decisions,
            "actions": presenters.decision_actions(decisions),
        })
        for colour_by, key in (("proj_us", "time"), ("limiter", "limiter")):
            figures[f"{name}/{strategy}/{key}"] = presenters.kernel_dag_figure(
                strategy_result, colour_by)
    device = {"name": name, "full_name": get_device(name).full_name, "comparison": rows,
              "measured": any(row["measured_us"] is not None for row in rows),
              "strategies": strategies}
    return device, figures


@require_GET
@_run_view
def run_status(request: HttpRequest, run: Run) -> JsonResponse:
    return JsonResponse(run.status_dict())


@require_GET
@_run_view
def kernel_page(request: HttpRequest, run: Run, device: str, strategy: str,
                kernel: str) -> HttpResponse:
    """One kernel: source with its line-to-node map, PTX, resources, breakdown and charts."""
    entry = presenters.find_kernel(run.artifact or {}, device, strategy, kernel)
    if entry is None:
        raise Http404("No such kernel in this run.")
    source = KernelSource.objects.filter(run=run, device=device, strategy=strategy,
                                         kernel=kernel).first()
    resources = source.resources if source else None
    spec = get_device(device)
    curves = presenters.occupancy_curves(entry, spec, resources)
    point = presenters.roofline(entry, spec)
    line_nodes = source.line_nodes if source else {}
    figures = {"pipes": presenters.pipe_utilisation_figure(entry),
               "roofline": presenters.roofline_figure(point) if point else None}
    if curves:
        for key, figure in presenters.occupancy_figures(curves).items():
            figures[f"occupancy/{key}"] = figure
    context = {
        "run": run, "device": device, "device_name": spec.full_name, "strategy": strategy,
        "kernel": entry, "source": source,
        "lines": presenters.source_lines(source.source, line_nodes) if source else [],
        "node_lines": presenters.node_lines(line_nodes),
        "occupancy": curves["current"] if curves else None,
        "roofline": point, "figures": figures,
        "breakdown": presenters.breakdown_rows(entry),
        "resources": presenters.resource_rows(resources),
        "ptxas_log": (resources or {}).get("ptxas_log", ""),
        "candidates": presenters.candidate_rows(entry),
    }
    return render(request, "explorer/kernel.html", context)
