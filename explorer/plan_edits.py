"""What-if in the web app (issue 36): a run's plan edited in the fusion view or through the
API, priced at once, and saved as a plan of the run; plan files exported and applied.

The editing itself is compiler/stages/whatif.py: a `WhatIf` session answers for the whole list
of edits made since the stored plan. The browser keeps that list (and so undo and redo: a
shorter list is an undo), and every request sends it whole, so a request may land on any web
process: each keeps its few most recent sessions (WHATIF_SESSIONS) and one that has applied a
prefix of the list applies only the new edits (tens of milliseconds on the 48-layer step:
benchmarks/plan_edit_speed.py); a process without the session opens it (the upload imported,
the plan priced once: seconds for a big step) and replays the list.

Access: whoever sees a run may edit its plans (nothing is stored); saving follows
explorer/runs.py `save_plan` (the owner and the run's team save onto it, anyone else onto a
run of their own).

The Tune form (`tune_view`) queues the autotuner on the run (explorer/runs.py request_tuning,
issue 37); its best plan becomes a saved plan of kind "tuned" (the strategy `tuned`).
"""
from __future__ import annotations

import json
import threading
from collections import OrderedDict

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from compiler.errors import InputError
from compiler.fusion.plan_files import stored_plan_file
from compiler.stages.graph_view import laid_out
from compiler.stages.pipeline import import_graph
from compiler.stages.whatif import WhatIf
from explorer.models import Run, SavedPlan
from explorer.runs import (DEFAULT_TUNE_S, PlanExists, PlanUnavailable, can_save_plans,
                           learned_model_files, request_tuning, results_stamp,
                           run_graph_facts, save_plan)
from explorer.views import LoginNeeded, _run_view

# The largest request body of an edit list or a plan file (bytes): a plan file lists every
# node of the graph once; 16 MB holds one for a 200,000-node graph.
MAX_BODY_BYTES = 16 * 1024 * 1024

_sessions: OrderedDict[tuple, WhatIf] = OrderedDict()
_sessions_lock = threading.Lock()
# Sessions being opened, so that two requests for the same plan open it once.
_opening: dict[tuple, threading.Lock] = {}


def _stored_kernels(run: Run, device: str, strategy: str) -> list[dict]:
    """The kernels of a done run's plan as its artifact holds them; PlanUnavailable."""
    artifact = run.artifact if run.status == Run.DONE else None
    plans = ((artifact or {}).get("devices") or {}).get(device, {}).get("strategies", {})
    if strategy not in plans:
        raise PlanUnavailable(f"the run has no {device}/{strategy} plan"
                              + ("" if artifact else " (it is not compiled yet)"))
    return plans[strategy]["kernels"]


def _predictor(device: str):
    """`predict(plan)` with the device's learned model, and its label; (None, None) without
    one, or with WHATIF_LEARNED off."""
    if not settings.WHATIF_LEARNED:
        return None, None
    path = learned_model_files([device]).get(device)
    if path is None:
        return None, None
    from compiler.cost.learned.predict import LearnedPredictor

    try:
        predictor = LearnedPredictor.load(path)
    except InputError:
        return None, None
    return (lambda graph: lambda plan: predictor.predict_plan(graph, plan)), predictor.label


def session(run: Run, device: str, strategy: str) -> WhatIf:
    """This process's what-if session of the plan (module docstring), opened if need be;
    PlanUnavailable when the run has no such plan, InputError when its upload cannot be
    read again."""
    key = (run.pk, results_stamp(run), device, strategy)
    with _sessions_lock:
        found = _sessions.get(key)
        if found is not None:
            _sessions.move_to_end(key)
            return found
        opening = _opening.setdefault(key, threading.Lock())
    with opening:
        with _sessions_lock:
            if key in _sessions:
                return _sessions[key]
        kernels = _stored_kernels(run, device, strategy)
        graph = import_graph(bytes(run.graph_bytes), run.filename)
        predict, label = _predictor(device)
        opened = WhatIf(graph, device, run.runtime, strategy, kernels,
                        predict=predict(graph) if predict else None, learned_label=label)
        with _sessions_lock:
            _sessions[key] = opened
            _opening.pop(key, None)
            while len(_sessions) > settings.WHATIF_SESSIONS:
                _sessions.popitem(last=False)
    return opened


def _body(request: HttpRequest) -> dict:
    """The request's JSON object; InputError saying what is wrong with it."""
    if len(request.body) > MAX_BODY_BYTES:
        raise InputError(f"the request is {len(request.body):,} bytes, over the "
                         f"{MAX_BODY_BYTES:,} an edit list or plan file may take")
    try:
        data = json.loads(request.body or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"the request body is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise InputError("the request body must be a JSON object")
    return data


def _error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _json_view(view):
    """The what-if views' errors as JSON: 400 for bad input, 404 for a plan the run lacks,
    403 for what the user may not do, 409 for a name taken."""
    def wrapper(request, run, *args, **kwargs):
        try:
            return view(request, run, *args, **kwargs)
        except PlanExists as error:
            return _error(str(error), 409)
        except PlanUnavailable as error:
            return _error(str(error), 404)
        except PermissionError as error:
            return _error(str(error), 403)
        except InputError as error:
            return _error(str(error), 400)
    wrapper.__name__, wrapper.__doc__ = view.__name__, view.__doc__
    return wrapper


def what_if(run: Run, device: str, strategy: str, edits, graph: bool = False) -> dict:
    """The what-if answer (compiler/stages/whatif.py `WhatIf.answer`) for `edits` on the
    run's plan, with the edited plan's kernels ("kernels": their names, kinds and nodes); with
    `graph`, also the edited plan's fusion view object ("graph": compiler/stages/graph_view.py
    `laid_out`, what the graph API gives for a stored plan), which takes a big graph a second
    or more to lay out, so the fusion view asks for it after the figures."""
    opened = session(run, device, strategy)
    with opened.lock:
        answer = opened.replay(edits if edits is not None else [])
        answer["kernels"] = opened.kernel_nodes()
        if graph:
            answer["graph"] = {"id": run.pk, "device": device, "strategy": strategy,
                               "edited": True,
                               **laid_out(opened.graph, opened.kernel_entries())}
    return answer


@require_POST
@_run_view
@_json_view
def whatif_view(request: HttpRequest, run: Run, device: str, strategy: str) -> JsonResponse:
    """POST {"edits": [...], "graph": false}: the plan after the edits, priced (module
    docstring); with "graph": true, its fusion view object too."""
    data = _body(request)
    return JsonResponse(what_if(run, device, strategy, data.get("edits"),
                                graph=data.get("graph") is True))


@require_POST
@_run_view
@_json_view
def whatif_cuda(request: HttpRequest, run: Run, device: str, strategy: str) -> JsonResponse:
    """POST {"edits": [...], "kernel": name}: the CUDA of one kernel of the edited plan."""
    data = _body(request)
    opened = session(run, device, strategy)
    with opened.lock:
        answer = opened.replay(data.get("edits") or [])
        if answer["refused"]:
            raise InputError(answer["refused"]["reason"])
        return JsonResponse(opened.kernel_code(str(data.get("kernel") or "")))


def saved_answer(saved: SavedPlan, run: Run, origin: Run) -> dict:
    """What saving answers: the plan's status, the run it was saved on (the user's own when
    that is not `origin`) and its permalink."""
    url = reverse("explorer-run", args=[run.pk]) + f"#{saved.device}/{saved.strategy}"
    return {"plan": saved.status_dict(), "run": run.pk, "own_run": run.pk != origin.pk,
            "url": url}


def save_edits(run: Run, user, data: dict) -> tuple[SavedPlan, Run]:
    """Save a plan from a request's data: {"name", and either "device", "strategy" and
    "edits" (the what-if's list: the edited plan is saved) or "plan" (a plan file; its
    device, unless "device" says otherwise)}."""
    name = data.get("name")
    if data.get("plan") is not None:
        plan_file = data["plan"]
        device = data.get("device") or (plan_file.get("device")
                                        if isinstance(plan_file, dict) else None)
        if not isinstance(device, str):
            raise InputError("say which device the plan is for (\"device\")")
        return save_plan(run, user, device, name, plan_file, check_graph=True)
    device, strategy = data.get("device"), data.get("strategy")
    if not isinstance(device, str) or not isinstance(strategy, str):
        raise InputError("say which plan was edited (\"device\" and \"strategy\") and how "
                         "(\"edits\"), or give a plan file (\"plan\")")
    opened = session(run, device, strategy)
    with opened.lock:
        answer = opened.replay(data.get("edits") or [])
        if answer["refused"]:
            raise InputError(answer["refused"]["reason"])
        plan_file = opened.plan_file()
    return save_plan(run, user, device, name, plan_file, keep_kinds=True)


@require_POST
@_run_view
@_json_view
def save_view(request: HttpRequest, run: Run) -> JsonResponse:
    """POST {"name", "device", "strategy", "edits"} or {"name", "plan"}: save the plan
    (`save_edits`); 201 with `saved_answer`."""
    if not request.user.is_authenticated:
        raise LoginNeeded
    saved, target = save_edits(run, request.user, _body(request))
    return JsonResponse(saved_answer(saved, target, run), status=201)


@require_POST
@_run_view
@_json_view
def delete_saved(request: HttpRequest, run: Run, plan_id: int) -> JsonResponse:
    """POST: delete a saved plan of the run (those who may save onto it may). (A POST to the
    plan's address: a 20-digit id matches no route, as a kernel page's address would.)"""
    if not request.user.is_authenticated:
        raise LoginNeeded
    saved = SavedPlan.objects.filter(pk=plan_id, run=run).first()
    if saved is None:
        raise PlanUnavailable(f"the run has no saved plan {plan_id}")
    if not can_save_plans(run, request.user):
        raise PermissionError("only the run's owner and its team may delete its plans")
    saved.remove()
    return JsonResponse({"deleted": plan_id})


def plan_file_of(run: Run, device: str, strategy: str) -> dict:
    """The plan file of a stored plan of the run (compiler/fusion/plan_files.py), what it says
    of the graph kept per upload so that a second export need not import the upload again."""
    kernels = _stored_kernels(run, device, strategy)
    # A saved plan's file keeps its name, so that it applies as the same custom:NAME.
    name = strategy.split(":", 1)[1] if strategy.startswith("custom:") else None
    return stored_plan_file(run_graph_facts(run), strategy, device, run.runtime, kernels, name)


@require_GET
@_run_view
@_json_view
def plan_file_view(request: HttpRequest, run: Run, device: str, strategy: str) -> HttpResponse:
    """GET: the plan as a plan file, to download (`--plan` of the CLI, the upload form's plan
    field and the API apply it to the same graph)."""
    made = plan_file_of(run, device, strategy)
    response = JsonResponse(made, json_dumps_params={"indent": 1})
    filename = f"{run.pk}-{device}-{strategy.replace(':', '_')}.plan.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- Tuning (issue 37) ----------------------------------------------------------------------------

@require_POST
@_run_view
def tune_view(request: HttpRequest, run: Run) -> HttpResponse:
    """POST the tune form (device, model, search, budget_s): a tuning job of the run's plans
    (explorer/runs.py request_tuning), back to the run page saying so or why not."""
    if not request.user.is_authenticated:
        raise LoginNeeded
    form = request.POST
    try:
        budget_s = float(form.get("budget_s") or DEFAULT_TUNE_S)
    except ValueError:
        budget_s = -1.0
    try:
        job, created = request_tuning(run, request.user, form.get("device") or run.devices[0],
                                      form.get("model") or "projected",
                                      form.get("search") or "anneal", budget_s)
    except PermissionError as error:
        raise PermissionDenied(str(error)) from None
    except InputError as error:
        messages.error(request, f"Not tuned: {error}")
    else:
        messages.info(request, f"Tuning the {job.device} plans for {job.budget_s:g} s "
                               f"({job.search} search, {job.model} model)" if created
                      else "A tuning of this run is already under way")
    return redirect(reverse("explorer-run", args=[run.pk]) + "#tuning")
