"""Submitting runs, the permalink id every run gets, and one plan of a run on its uploaded
graph (`plan_graph`: what the graph API and the source page show).

The id is content-addressed: the same graph bytes, options (devices, strategies, runtime),
compiler version and owner always give the same id, so resubmitting returns the existing run instead of
compiling again. It is also unguessable: an HMAC keyed with a key derived from SECRET_KEY, so
knowing a graph does not let anyone compute (and open) another user's link for it; 128 bits of
the HMAC in base62 make 22 characters.

The owner is part of the id on purpose. Without it, a second user uploading the same graph
would be handed the first user's run — private to someone else — and could tell from that
that someone had already submitted exactly this graph. With it, each user gets their own run
(and link); sharing goes through visibility and teams. The run's name, tags, visibility and
filename are labels and do not enter the id.
"""
from __future__ import annotations

import hashlib
import json
import logging
import string

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.crypto import salted_hmac

from compiler.errors import InputError, LimitError
from compiler.fusion.plan_files import graph_facts
from compiler.importers import sniff_reach, sniff_upload
from compiler.stages.graph_view import kernel_entries, laid_out
from compiler.stages.pipeline import canonical_options, import_graph
from compiler.stages.tune import measured_tuning
from compiler.target.launch import DEFAULT_RUNTIME, parse_runtime
from compiler.version import compiler_version
from explorer import presenters, queues
from explorer.graph_store import GraphUnavailable, StagedFile
from explorer.models import (GraphBlob, Measurement, Membership, PlanGraph, Run, SavedPlan,
                             Team, TuneJob, TuneShard, graph_sha256, uploaded)
from explorer.uploads import upload_file_name

logger = logging.getLogger(__name__)

RUN_ID_LENGTH = 22
BASE62 = string.digits + string.ascii_letters
RUN_ID_SALT = "fusion-explorer.run-id"


def run_id(data: bytes, devices, strategies, version: str, owner_id: int,
           runtime: str = DEFAULT_RUNTIME) -> str:
    """The permalink id of a run of these bytes (see the module docstring)."""
    return run_id_of(hashlib.sha256(data).hexdigest(), devices, strategies, version, owner_id,
                     runtime)


def run_id_of(graph_sha256: str, devices, strategies, version: str, owner_id: int,
              runtime: str = DEFAULT_RUNTIME) -> str:
    """`run_id` from the SHA-256 (hex) of the uploaded bytes, for a caller that has it."""
    devices, strategies = canonical_options(devices, strategies)
    payload = json.dumps({"graph": graph_sha256, "devices": devices,
                          "strategies": strategies, "runtime": parse_runtime(runtime),
                          "compiler": version, "owner": owner_id}, sort_keys=True)
    digest = salted_hmac(RUN_ID_SALT, payload, algorithm="sha256").digest()
    number = int.from_bytes(digest[:16], "big")
    chars = []
    for _ in range(RUN_ID_LENGTH):
        number, remainder = divmod(number, 62)
        chars.append(BASE62[remainder])
    return "".join(reversed(chars))


def viewable_runs(user) -> QuerySet[Run]:
    """Every run `Run.can_view` admits the user to, as one query."""
    if user is None or not user.is_authenticated:
        return Run.objects.filter(visibility=Run.PUBLIC)
    if user.is_staff:
        return Run.objects.all()
    teams = Membership.objects.filter(user=user).values("team_id")
    return Run.objects.filter(Q(visibility=Run.PUBLIC) | Q(owner=user)
                              | Q(visibility=Run.TEAM, team_id__in=teams))


def holding(runs: QuerySet[Run], wanted: dict[str, str]) -> QuerySet[Run]:
    """The runs among `runs` whose list fields hold every wanted value (`wanted`: {field:
    value}, fields among devices, strategies and tags), as a query of their ids that pages,
    orders and joins like any. SQLite cannot look inside a JSON list, so the ids and the lists
    alone are read and filtered here: never whole runs, however many there are."""
    fields = list(wanted)
    ids = [pk for pk, *lists in runs.order_by().values_list("pk", *fields)
           if all(value in found for value, found in zip(wanted.values(), lists))]
    return Run.objects.filter(pk__in=ids)


def check_upload(graph: StagedFile, filename: str) -> None:
    """What a web request checks of an upload before storing it, all of it cheap whatever the
    file's size: the size limit (the staged file's own check, made as it streamed in, with
    the gzip stream's), the format from the first bytes, and, for a file of at most
    settings.UPLOAD_INLINE_IMPORT_BYTES (decompressed), the whole import, so a small file that
    does not import is refused at once. A bigger file is imported by the compile worker,
    whose import errors fail the run at its "import" stage with the same message (the run
    page and the API's status show it). InputError (file:line:col) when a check fails."""
    graph.check()
    head = graph.head(sniff_reach(settings.UPLOAD_INLINE_IMPORT_BYTES))
    fmt, whole = sniff_upload(head, filename, head_bytes=settings.UPLOAD_INLINE_IMPORT_BYTES,
                              size=graph.size)
    if whole is not None:   # then `head` holds the whole file (its gzip stream, if gzipped)
        import_graph(head, filename)


class QuotaExceeded(LimitError):
    """An upload that would take its owner's stored uploads, or its team's, past their storage
    quota (STORAGE_QUOTA_BYTES, TEAM_STORAGE_QUOTA_BYTES): nothing is stored. A LimitError, so
    that the JSON API answers it 413 as any input past a limit."""


def storage_used(owner) -> int:
    """The bytes the user's runs hold in the graph store, each file once (a file the user
    uploaded for several runs counts once; one another user uploaded too counts for each of
    them); runs whose upload was removed hold none."""
    return GraphBlob.bytes_held(Run.objects.filter(owner=owner))


def team_storage_used(team) -> int:
    """The bytes the runs shared with the team hold, each file once."""
    return GraphBlob.bytes_held(Run.shared_with(team))


def storage_usage(user) -> dict:
    """What the API keys page shows: the user's usage and quota, and each of their teams'."""
    teams = Team.objects.filter(memberships__user=user).order_by("name")
    return {"used": storage_used(user), "quota": settings.STORAGE_QUOTA_BYTES,
            "teams": [{"team": team, "used": team_storage_used(team),
                       "quota": settings.TEAM_STORAGE_QUOTA_BYTES} for team in teams]}


def check_quota(owner, graph_key: str, size: int, filename: str, team=None) -> None:
    """QuotaExceeded unless `size` more bytes (an upload whose SHA-256 is `graph_key`) fit the
    owner's storage quota, and the team's for a run shared with `team`. A file the owner's runs
    (or the team's) already hold takes no more room. Two uploads at the very same moment may
    both fit alone and pass the quota together, by one upload at most each."""
    if not Run.objects.filter(owner=owner, graph_id=graph_key).exists():
        used, quota = storage_used(owner), settings.STORAGE_QUOTA_BYTES
        if used + size > quota:
            raise QuotaExceeded(
                f"storage quota: your runs' uploads take {_size(used)} of your {_size(quota)} "
                f"(STORAGE_QUOTA_BYTES), and this file is {_size(size)}; nothing was stored. "
                "Delete runs you no longer need (a run's upload goes with it), or ask the "
                "site's administrators for more room", filename)
    if team is not None and not Run.shared_with(team).filter(graph_id=graph_key).exists():
        used, quota = team_storage_used(team), settings.TEAM_STORAGE_QUOTA_BYTES
        if used + size > quota:
            raise QuotaExceeded(
                f"storage quota: the runs shared with the team {team.name} take {_size(used)} "
                f"of its {_size(quota)} (TEAM_STORAGE_QUOTA_BYTES), and this file is "
                f"{_size(size)}; nothing was stored. Share the run with fewer people, or ask "
                "the team's owners to delete runs it no longer needs", filename)


def _size(count: int) -> str:
    if count < 1024:
        return f"{count:,} bytes"
    return f"{filesizeformat(count)} ({count:,} bytes)".replace("\xa0", " ")


def submit_run(owner, data: bytes | StagedFile, filename: str, devices, strategies,
               name: str = "", tags=(), visibility: str = Run.PRIVATE, team=None,
               runtime: str = DEFAULT_RUNTIME) -> Run:
    """The run of this upload: an existing one with the same id, or a new queued one whose
    compile job is enqueued once the transaction commits. InputError (with file:line:col) when
    an option is unknown or `check_upload` refuses the file, QuotaExceeded (an InputError too)
    when a new run's upload does not fit `check_quota`; nothing is stored then. ValueError for
    visibility "team" without a team."""
    return submit(owner, data, filename, devices, strategies, name, tags, visibility, team,
                  runtime)[0]


def submit(owner, data: bytes | StagedFile, filename: str, devices, strategies, name: str = "",
           tags=(), visibility: str = Run.PRIVATE, team=None,
           runtime: str = DEFAULT_RUNTIME) -> tuple[Run, bool]:
    """`submit_run`, and whether the run is new. `data`: the upload as the request's upload
    handler staged it (explorer/graph_store.py: on disk, its SHA-256s known), or bytes the
    request holds (pasted text, a sample, the JSON API's body), staged here the same way.
    Either way it is closed when this returns: stored (renamed into the graph store) or
    dropped. `filename` is kept as explorer/uploads.py `upload_file_name` makes it, whichever
    way the upload came in."""
    filename = upload_file_name(filename)
    graph = data if isinstance(data, StagedFile) else StagedFile.from_bytes(data, filename)
    try:
        return _submit(owner, graph, filename, devices, strategies, name, tags, visibility,
                       team, runtime)
    finally:
        graph.close()


def _submit(owner, graph: StagedFile, filename: str, devices, strategies, name: str, tags,
            visibility: str, team, runtime: str) -> tuple[Run, bool]:
    if visibility == Run.TEAM and team is None:
        raise ValueError("a run shared with a team needs the team")
    devices, strategies = canonical_options(devices, strategies)
    runtime = parse_runtime(runtime)
    check_upload(graph, filename)
    version = compiler_version()
    identifier = run_id_of(graph.sha256, devices, strategies, version, owner.pk, runtime)
    existing = Run.objects.filter(pk=identifier).first()
    if existing is not None:
        return existing, False
    shared = team if visibility in (Run.TEAM, Run.PUBLIC) else None
    check_quota(owner, graph.sha256, graph.size, filename, shared)
    try:
        with transaction.atomic():
            run = Run(id=identifier, owner=owner, team=team, visibility=visibility, name=name,
                      tags=list(tags), filename=filename, devices=devices,
                      strategies=strategies, runtime=runtime, compiler_version=version)
            run.set_graph(graph)
            run.save(force_insert=True)
            transaction.on_commit(lambda: enqueue_compile(identifier))
    except IntegrityError:
        # The same upload submitted twice at once: the first one won. Or (PostgreSQL checks
        # the graph's row as the run is written) the last run of the same bytes was deleted at
        # that very moment, its graph with it: nothing is stored, and the user is asked to send
        # the file again rather than shown an error page.
        existing = Run.objects.filter(pk=identifier).first()
        if existing is None:
            raise InputError("the same graph was being deleted as it was uploaded; nothing "
                             "was stored: upload it again", filename) from None
        return existing, False
    return run, True


def retry_run(run: Run) -> bool:
    """Queue a failed run's compile again (its owner's "retry": after a worker was lost too
    often, a time limit, or a fix deployed since); False when the run is not failed. The job
    is sent once the transaction commits."""
    with transaction.atomic():
        if not Run.retry(run.pk):
            return False
        transaction.on_commit(lambda: enqueue_compile(run.pk))
    return True


def enqueue_compile(identifier: str) -> bool:
    """Send the run's compile job to the `compile` queue (its route in settings)."""
    return _enqueue(Run, identifier, queues.COMPILE_RUN)


def _enqueue(model, pk, task_name: str) -> bool:
    """Hand the job's message to the broker (by its task's name: explorer/queues.py) and note
    when; whether it was sent. A broker that cannot be reached (Redis down or restarting)
    leaves the job queued and unsent, with a warning in the log: the sweeper
    (workers/sweeper.py) sends it once the broker is back. The job's row is already
    committed, so nothing the user submitted is lost."""
    try:
        queues.send_job(task_name, pk)
    except Exception as error:  # noqa: BLE001 - kombu's OperationalError, a socket error, ...
        logger.warning("could not send %s %s to the broker (%s: %s); the sweeper will",
                       model.__name__, pk, type(error).__name__, error)
        return False
    model.objects.filter(pk=pk).update(enqueued_at=timezone.now())
    return True


def request_measurement(run: Run, user) -> tuple[Measurement, bool]:
    """A measurement job for the run's plans on a GPU worker, and whether it is new: the one
    already waiting or running, if any (asking twice does not measure twice), or a new one,
    enqueued on the `gpu` queue once the transaction commits. There it waits for a GPU worker,
    however long that takes: a worker started later measures it. ValueError for a run that is
    not done."""
    if run.status != Run.DONE:
        raise ValueError("only a finished run can be measured")
    with transaction.atomic():
        # Lock the run's row so two requests at once cannot both create a job.
        Run.objects.select_for_update().filter(pk=run.pk).exists()
        pending = run.measurements.filter(status__in=(Measurement.QUEUED, Measurement.RUNNING))
        measurement = pending.first()
        if measurement is not None:
            return measurement, False
        measurement = Measurement.objects.create(
            run=run, requested_by=user if user.is_authenticated else None)
        transaction.on_commit(lambda: enqueue_measure(measurement.pk))
    return measurement, True


def enqueue_measure(measurement_id: int) -> bool:
    """Send the measurement job to the `gpu` queue (its route in settings)."""
    return _enqueue(Measurement, measurement_id, queues.MEASURE_RUN)


def learned_model_files(devices: list[str]) -> dict[str, str]:
    """The active learned cost model file of each of `devices` that has one
    (compiler/cost/learned/registry.py; settings LEARNED_MODEL_DIR, LEARNED_SHIPPED_MODEL_DIR
    and LEARNED_ALLOW_SYNTHETIC): what a compile and a what-if predict their kernels with."""
    # Imported here: the registry reads model files with torch, seconds to import.
    from compiler.cost.learned.registry import active_model, reading_dirs

    found = {}
    for device in devices:
        model = active_model(reading_dirs(settings.LEARNED_MODEL_DIR,
                                          settings.LEARNED_SHIPPED_MODEL_DIR), device,
                             settings.LEARNED_ALLOW_SYNTHETIC)
        if model is not None:
            found[device] = str(model.path)
    return found


def enqueue_tune(tune_id: int) -> bool:
    """Send a tuning job to the `compile` queue (its route in settings)."""
    return _enqueue(TuneJob, tune_id, queues.TUNE_RUN)


def enqueue_tune_shard(shard_id: int) -> bool:
    """Send one share of a tuning to the `compile` queue (its route in settings)."""
    return _enqueue(TuneShard, shard_id, queues.TUNE_SHARD)


def enqueue_saved_plan(plan_id: int) -> bool:
    """Send a saved plan's compile job to the `compile` queue (its route in settings)."""
    return _enqueue(SavedPlan, plan_id, queues.COMPILE_PLAN)


# --- A plan on the uploaded graph -----------------------------------------------------------------

GRAPH_CACHE_S = 24 * 3600  # a run's fusion graphs, each a few MB for big graphs


class PlanUnavailable(Exception):
    """A device or strategy the run does not have, or a plan that does not fit its upload."""


def plan_choice(artifact: dict, device: str | None, strategy: str | None) -> tuple[str, str]:
    """The (device, strategy) asked for, what is left out filled in as every page fills it
    (`presenters.default_plan`: the first device, its lowest projected strategy);
    PlanUnavailable naming the choices when the run has no such device or strategy."""
    devices = artifact.get("devices") or {}
    device = device or next(iter(sorted(devices)), "")
    if device not in devices:
        raise PlanUnavailable(f"device '{device}' is not one of this run's: "
                              f"{', '.join(devices) or '(none)'}")
    plan = presenters.default_plan(artifact, device, strategy or None)
    if plan is None:
        strategies = devices[device].get("strategies", {})
        raise PlanUnavailable(f"strategy '{strategy or ''}' is not one of this run's: "
                              f"{', '.join(strategies) or '(none)'}")
    return plan


def results_stamp(run: Run) -> str:
    """A run's creation and finish times, for the keys of what is cached of its results: a
    recompiled run (or another run under a reused id) gets new keys, not stale answers."""
    return "-".join(f"{moment.timestamp():.6f}" if moment else "0"
                    for moment in (run.created, run.finished, run.plans_changed))


def plan_graph(run: Run, artifact: dict, measurement: Measurement | None, device: str,
               strategy: str) -> dict:
    """compiler/stages/graph_view.py's object for one plan of a done run (`artifact`: its
    artifact with `measurement`'s timings), with its layout: the one the compile worker
    stored (PlanGraph), its kernels' figures taken from `artifact`; else laid out from the
    upload and stored. Cached under a key that names everything it shows. PlanUnavailable
    when the plan does not fit the upload."""
    measured = measurement.pk if measurement else 0
    key = f"fusion-graph:{run.pk}:{results_stamp(run)}:{measured}:{device}:{strategy}"
    view = cache.get(key)
    if view is not None:
        return view
    kernels = artifact["devices"][device]["strategies"][strategy]["kernels"]
    stored = PlanGraph.objects.filter(run=run, device=device, strategy=strategy) \
        .values_list("data", flat=True).first()
    if stored is not None:
        view = PlanGraph.unpack(stored)
        view["kernels"] = kernel_entries(kernels)
    else:
        try:
            view = laid_out(import_graph(bytes(run.graph_bytes), run.filename), kernels)
        except (InputError, ValueError) as error:  # an upload or plan changed since
            raise PlanUnavailable(f"the run's graph cannot be shown: {error}") from error
        PlanGraph.objects.update_or_create(run=run, device=device, strategy=strategy,
                                           defaults={"data": PlanGraph.pack(view)})
    cache.set(key, view, GRAPH_CACHE_S)
    return view


def upload_bytes(run: Run) -> bytes:
    """The uploaded file's bytes, decompressed (as stored when they do not decompress)."""
    return uploaded(bytes(run.graph_bytes), run.filename)


def upload_text(run: Run) -> str | None:
    """The uploaded file as text, or None for a binary format (ONNX) or a file the graph store
    no longer has (GraphUnavailable: the run's page and status say so once a worker reads
    it)."""
    try:
        return upload_bytes(run).decode("utf-8")
    except (UnicodeDecodeError, GraphUnavailable):
        return None


def graph_digest(run: Run) -> str:
    """The SHA-256 of the uploaded graph, decompressed: a gzipped upload of the same text is
    the same graph (stored with the run: Run.graph_sha256; worked out here only for runs
    older than that field, and their uploaded bytes' own when the file is gone)."""
    if run.graph_sha256:
        return run.graph_sha256
    try:
        return graph_sha256(bytes(run.graph_bytes), run.filename)
    except GraphUnavailable:
        return run.graph_id


# --- Saved plans (issue 36): plans users make, compiled onto a run -----------------------------

class PlanExists(InputError):
    """A saved plan of that name is already the run's (for that device)."""


def can_save_plans(run: Run, user) -> bool:
    """Who may add plans to a run (and delete them): its owner, staff, and, for a run shared
    with a team, the team's members. Anyone else who sees the run saves onto a run of their
    own (`save_plan`)."""
    if user is None or not user.is_authenticated:
        return False
    if user.is_staff or user.pk == run.owner_id:
        return True
    return run.visibility in (Run.TEAM, Run.PUBLIC) and in_runs_team(run, user)


def in_runs_team(run: Run, user) -> bool:
    """Whether `user` is a member of the run's team (false for a run of no team)."""
    return (run.team_id is not None and user.is_authenticated
            and Membership.objects.filter(team_id=run.team_id, user=user).exists())


def run_graph_facts(run: Run) -> dict:
    """What a plan file says of the run's graph (compiler/fusion/plan_files.py
    `graph_facts`), kept per upload so that it is worked out once."""
    key = f"plan-file-graph:{run.graph_sha256 or run.pk}"
    facts = cache.get(key)
    if facts is None:
        facts = graph_facts(import_graph(bytes(run.graph_bytes), run.filename))
        cache.set(key, facts, 24 * 3600)
    return facts


def check_plan_graph(run: Run, plan_file) -> None:
    """InputError at once for a plan file made for another graph (the compile worker checks
    the rest: every node named, each grouping legal)."""
    if not isinstance(plan_file, dict):
        return
    theirs = (plan_file.get("graph") or {}).get("digest") \
        if isinstance(plan_file.get("graph"), dict) else None
    ours = run_graph_facts(run)
    if theirs != ours["digest"]:
        named = (plan_file.get("graph") or {}).get("name", "another graph") \
            if isinstance(plan_file.get("graph"), dict) else "another graph"
        raise InputError(f"the plan is for {named} (digest {str(theirs)[:12]}), not for "
                         f"{ours['name']} (digest {ours['digest'][:12]}): a plan applies only "
                         f"to the graph it was made for")


def save_plan(run: Run, user, device: str, name: str, plan_file: dict,
              check_graph: bool = False, keep_kinds: bool = False) -> tuple[SavedPlan, Run]:
    """Save `plan_file` as the plan "custom:NAME" of `run` for `device`, compiled onto the
    run's artifact by the compile worker once the run is done; and the run it was saved on.
    A user who may not add plans to the run (`can_save_plans`) but sees it saves onto their
    own run of the same upload and options (made, and compiled, if they had none): a stranger's
    edits never change someone else's run. InputError for a bad name, a device the run does
    not have or a file that is no plan file, and with `check_graph` for a file made for
    another graph (`check_plan_graph`: the upload is imported once per graph for it);
    PlanExists for a name taken. The compile worker checks the rest. `keep_kinds`: the file
    was written here from an edited stored plan (SavedPlan.keep_kinds)."""
    if not user.is_authenticated:
        raise PermissionError("log in to save a plan")
    try:
        name = SavedPlan.check_name(name)
    except ValueError as error:
        raise InputError(str(error)) from None
    if device not in run.devices:
        raise InputError(f"device {device!r} is not one of the run's: {', '.join(run.devices)}")
    if not isinstance(plan_file, dict) or not isinstance(plan_file.get("kernels"), list):
        raise InputError("not a plan file: a JSON object with a list \"kernels\" is expected")
    if check_graph:
        check_plan_graph(run, plan_file)
    if not can_save_plans(run, user):
        run = _own_copy(run, user)
    plan_file = {**plan_file, "name": name}
    with transaction.atomic():
        if SavedPlan.objects.filter(run=run, device=device, name=name).exists():
            raise PlanExists(f"the run has a plan named {name} for {device} already: choose "
                             f"another name, or delete that plan first")
        saved = SavedPlan.objects.create(run=run, device=device, name=name, plan=plan_file,
                                         author=user, keep_kinds=keep_kinds)
        SavedPlan.touch_run(run.pk)
        transaction.on_commit(lambda: enqueue_saved_plan(saved.pk))
    return saved, run


def _own_copy(run: Run, user) -> Run:
    """The user's own run of `run`'s upload with its devices, strategies and runtime (private,
    named as the run is): submitted like an upload, so the user's existing one is found."""
    try:
        data = bytes(run.graph_bytes)
    except GraphUnavailable as error:
        raise InputError(f"the run's graph cannot be copied to a run of yours: {error}") from None
    return submit_run(user, data, run.filename, run.devices, run.strategies, name=run.title,
                      runtime=run.runtime)


def compiled_plans(run: Run) -> list[tuple[str, str]]:
    """(device, strategy) of each of the run's saved plans that is compiled onto it (its
    artifact holds them), read without the plan files."""
    return [(device, SavedPlan.strategy_of(kind, name))
            for device, kind, name in run.saved_plans.filter(status=SavedPlan.DONE)
            .values_list("device", "kind", "name")]


def saved_plans(run: Run) -> list[SavedPlan]:
    """The run's saved plans, oldest first (their plan files left unread)."""
    return list(run.saved_plans.select_related("author").defer("plan"))


# --- Tuning (issue 37): the autotuner on a run's plans ---------------------------------------------

# The longest tuning a request may ask for (seconds of search), and the default.
MAX_TUNE_S, DEFAULT_TUNE_S = 600.0, 30.0
TUNE_MODELS, TUNE_SEARCHES = ("projected", "learned", "sol"), ("anneal", "beam")


def request_tuning(run: Run, user, device: str, model: str = "projected",
                   search: str = "anneal", budget_s: float = DEFAULT_TUNE_S,
                   evaluations: int | None = None, seed: int = 0,
                   top_k: int = 3) -> tuple[TuneJob, bool]:
    """A tuning job of the run's plans for `device` (compiler/stages/tune.py), and whether it
    is new: one already waiting or running is answered instead. Who may: those who may add
    plans to the run (`can_save_plans`), since its result is a plan of the run; PermissionError
    for others. InputError for a run not done or an option out of range (said which)."""
    if not can_save_plans(run, user):
        raise PermissionError("only the run's owner and its team may tune it")
    if run.status != Run.DONE:
        raise InputError("only a compiled run can be tuned")
    if device not in run.devices:
        raise InputError(f"device {device!r} is not one of the run's: {', '.join(run.devices)}")
    if model not in TUNE_MODELS or search not in TUNE_SEARCHES:
        raise InputError(f"model is one of {', '.join(TUNE_MODELS)} and search one of "
                         f"{', '.join(TUNE_SEARCHES)}")
    if model == "learned" and device not in learned_model_files([device]):
        raise InputError(f"no learned model for {device}: tune under the projected model")
    if not 0 < budget_s <= MAX_TUNE_S:
        raise InputError(f"the budget is above 0 and at most {MAX_TUNE_S:g} s")
    if evaluations is not None and evaluations <= 0:
        raise InputError("evaluations, when given, is above 0")
    if not 1 <= top_k <= 10:
        raise InputError("top_k is 1 to 10")
    with transaction.atomic():
        Run.objects.select_for_update().filter(pk=run.pk).exists()
        pending = run.tunings.filter(status__in=(TuneJob.QUEUED, TuneJob.RUNNING)).first()
        if pending is not None:
            return pending, False
        job = TuneJob.objects.create(run=run, device=device, model=model, search=search,
                                     budget_s=budget_s, evaluations=evaluations, seed=seed,
                                     top_k=top_k, requested_by=user)
        TuneJob.touch_run(run.pk)
        transaction.on_commit(lambda: enqueue_tune(job.pk))
    return job, True


def latest_tuning(run: Run) -> TuneJob | None:
    return run.tunings.first()


def tuning_measured(run: Run, job: TuneJob | None, measurement: Measurement | None
                    ) -> dict | None:
    """What the run's shown measurement says of a done tuning: its top plans' measured totals,
    the fastest of them, the regret of the model's pick and each move's measured gain
    (compiler/stages/tune.py `measured_tuning`); None without a measurement of its plans."""
    if job is None or job.status != TuneJob.DONE or not job.result or measurement is None:
        return None
    result = Measurement.objects.filter(pk=measurement.pk).values_list("result", flat=True)
    device = ((result.first() or {}).get("devices") or {}).get(job.device) or {}
    if not device.get("strategies"):
        return None
    stored = {name: plan["kernels"] for name, plan in
              (run.artifact or {}).get("devices", {}).get(job.device, {})
              .get("strategies", {}).items()}
    return measured_tuning(job.result, device["strategies"], stored, job.device)

