"""Thin Celery tasks: each calls compiler/ and stores the artifacts, and holds no compiler logic.

Every task has an explicit, stable name (queued messages outlive code moves), acks_late so a job
whose worker dies is delivered again, and soft and hard time limits so a stuck job ends.
"""
from __future__ import annotations

import contextvars
import logging
import threading
import time

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from celery.signals import worker_init
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone
from redis.exceptions import RedisError

from compiler.errors import InputError
from compiler.stages.graph_view import STAGE as LAYOUT_STAGE
from compiler.stages.graph_view import plan_views
from compiler.runtime.gpu import GpuUnavailable
from compiler.stages.measure import (STAGES as MEASURE_STAGES, check_graph_emulated,
                                     measure_graph)
from compiler.stages.pipeline import (STAGES as COMPILE_STAGES, compile_graph, compile_plans,
                                      import_graph)
from compiler.stages.tune import candidate_plans, tune_stored
from explorer.logs import log_context
from explorer.models import (ClaimLost, Job, Measurement, PlanGraph, Run, SavedPlan, TuneJob,
                             TuneShard)
from explorer.presence import gpu_status
from explorer.queues import (COMPILE_PLAN, COMPILE_RUN, MEASURE_RUN, TUNE_RUN, TUNE_SHARD,
                             queue_of, time_limits)
from explorer.runs import learned_model_files, request_measurement
from workers.celery import app

logger = logging.getLogger(__name__)

# A compile job's stages: the pipeline's, then laying out each plan's fusion view.
RUN_STAGES = (*COMPILE_STAGES, LAYOUT_STAGE)

# Progress is written at most this often (plus at every change of stage): a big graph has
# thousands of kernels, and each write takes the database's write lock.
PROGRESS_INTERVAL_S = 0.5
# ...but every step of a stage of at most this many steps is written: the explore stage counts
# plans (at most 5 devices x 5 strategies), and the run page fetches the preview of the plans
# explored so far when that count moves.
FEW_STEPS = 25


@app.task(name="workers.ping", acks_late=True, soft_time_limit=10, time_limit=20)
def ping() -> str:
    """Health check: answers "pong" once a worker consumes the compile queue."""
    return "pong"


class JobTask(Task):
    """The base of the tasks that work on a Job row (explorer.models), whose first argument is
    the row's primary key."""
    abstract = True
    model: type[Job] = Job
    time_limit_setting = ""
    # The log field that names the job on every line the task logs (`run_id`).
    log_field = ""

    def __call__(self, *args, **kwargs):
        fields = {self.log_field: args[0]} if args else {}
        with log_context(**fields):
            return super().__call__(*args, **kwargs)

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Celery calls this when the job ended with an exception the task did not handle;
        mainly the hard time limit, which kills the job's process (this runs in the worker's
        main process then). Failing the job means no page waits on it forever."""
        if not args:
            return
        if isinstance(exc, TimeLimitExceeded):
            message = (f"The job was stopped after the hard time limit of "
                       f"{getattr(settings, self.time_limit_setting)} s.")
        else:
            message = f"The job failed: {type(exc).__name__}: {exc}"
        self.model.fail(args[0], message, error_stage="")


class CompileTask(JobTask):
    abstract = True
    model = Run
    time_limit_setting = "COMPILE_TIME_LIMIT_S"
    log_field = "run_id"


class MeasureTask(JobTask):
    abstract = True
    model = Measurement
    time_limit_setting = "MEASURE_TIME_LIMIT_S"
    log_field = "measurement_id"


class SavedPlanTask(JobTask):
    abstract = True
    model = SavedPlan
    time_limit_setting = "COMPILE_TIME_LIMIT_S"
    log_field = "saved_plan_id"


class TuneTask(JobTask):
    abstract = True
    model = TuneJob
    time_limit_setting = "COMPILE_TIME_LIMIT_S"
    log_field = "tune_id"


class TuneShardTask(JobTask):
    abstract = True
    model = TuneShard
    time_limit_setting = "COMPILE_TIME_LIMIT_S"
    log_field = "tune_shard_id"


class _ProgressRecorder:
    """The progress callback: saves stage, counts, what the stage is doing and when each stage
    started and finished on the job's row (throttled) and renews the claim's lease with each
    save. `stages`: the stages the job will go through, in order, listed as waiting until
    they start (Job.stages)."""

    def __init__(self, model: type[Job], pk, token: str, lease_s: int,
                 stages: tuple[str, ...] = ()):
        self.model, self.pk, self.token, self.lease_s = model, pk, token, lease_s
        self.stage, self.detail, self.saved_at = "", "", 0.0
        self.stages = [{"name": name, "started": None, "finished": None} for name in stages]

    def __call__(self, stage: str, done: int, total: int, detail: str = "") -> None:
        entering = stage != self.stage
        if entering:
            self._enter(stage)
        news = entering or (detail and detail != self.detail) or total <= FEW_STEPS
        self.stage = stage
        if detail or entering:
            self.detail = detail
        now = time.monotonic()
        if not news and done < total and now - self.saved_at < PROGRESS_INTERVAL_S:
            return
        self.model.renew_lease(self.pk, self.token, self.lease_s,
                               stage=stage, progress_done=done, progress_total=total,
                               stages=self.stages, stage_detail=self.detail[:200])
        self.saved_at = now
        if entering and stage == "codegen" and settings.COMPILE_TEST_CODEGEN_DELAY_S:
            time.sleep(settings.COMPILE_TEST_CODEGEN_DELAY_S)

    def _enter(self, stage: str) -> None:
        """Close the stage running now and start `stage` (listed, or added at the end)."""
        now = time.time()
        for entry in self.stages:
            if entry["started"] is not None and entry["finished"] is None:
                entry["finished"] = now
        entry = next((e for e in self.stages if e["name"] == stage and e["started"] is None),
                     None)
        if entry is None:
            entry = {"name": stage, "started": None, "finished": None}
            self.stages.append(entry)
        entry["started"] = now


@app.task(bind=True, base=CompileTask, name=COMPILE_RUN, acks_late=True,
          reject_on_worker_lost=True, **time_limits(COMPILE_RUN), max_retries=None,
          ignore_result=True)
def compile_run(self, run_id: str) -> str:
    """Compile run `run_id` (explorer.models.Run) and store its artifact on it (so no result is
    kept in Redis). Safe to deliver twice: only the job that claims the run computes it."""
    token = Run.claim(run_id, self.request.hostname or "", settings.COMPILE_LEASE_S,
                      settings.COMPILE_MAX_ATTEMPTS)
    if token is None:
        return _not_claimed(self, Run, run_id)
    run = Run.objects.get(pk=run_id)
    progress = _ProgressRecorder(Run, run_id, token, settings.COMPILE_LEASE_S, RUN_STAGES)

    def show_explored(preview: dict) -> None:
        """The run page shows the plans explored so far while the rest compiles. A preview
        the database refuses for a moment is skipped, not a reason to compile again: the next
        one, or the artifact, takes its place."""
        try:
            Run.store_preview(run_id, token, settings.COMPILE_LEASE_S, preview)
        except (OperationalError, InterfaceError):
            logger.warning("could not store a preview of run %s", run_id, exc_info=True)

    def compile_it() -> tuple:
        data = run.graph_bytes
        artifact = compile_graph(data, run.filename, run.devices, run.strategies,
                                 progress=progress, learned_models=learned_models(run.devices),
                                 runtime=run.runtime, explored=show_explored)
        # The fusion view's objects, laid out now so the first look at a big plan is quick.
        return artifact, {plan: PlanGraph.pack(view)
                          for plan, view in plan_views(data, run.filename, artifact, progress)}

    return _work(Run, run_id, token, progress, settings.COMPILE_SOFT_TIME_LIMIT_S, compile_it,
                 settings.COMPILE_LEASE_S, settings.COMPILE_MAX_ATTEMPTS)


@app.task(bind=True, base=SavedPlanTask, name=COMPILE_PLAN, acks_late=True,
          reject_on_worker_lost=True, **time_limits(COMPILE_PLAN), max_retries=None,
          ignore_result=True)
def compile_saved_plan(self, plan_id: int) -> str:
    """Compile a saved plan (explorer.models.SavedPlan) of a done run and add it to the run's
    artifact. A run not done yet is left alone: its finish queues the plan again. A plan of a
    failed run fails with it."""
    saved = SavedPlan.objects.select_related("run").filter(pk=plan_id).first()
    if saved is None:
        return "nothing to do"
    run = saved.run
    if run.status == Run.FAILED:
        SavedPlan.objects.filter(pk=plan_id, status=SavedPlan.QUEUED).update(
            status=SavedPlan.FAILED, finished=timezone.now(),
            error="The run failed, so its saved plans cannot be compiled; retry the run.")
        return SavedPlan.FAILED
    if run.status != Run.DONE:
        return "waiting for the run"
    token = SavedPlan.claim(plan_id, self.request.hostname or "", settings.COMPILE_LEASE_S,
                            settings.COMPILE_MAX_ATTEMPTS)
    if token is None:
        return _not_claimed(self, SavedPlan, plan_id)
    progress = _ProgressRecorder(SavedPlan, plan_id, token, settings.COMPILE_LEASE_S, RUN_STAGES)

    def compile_it() -> tuple:
        data = run.graph_bytes
        part = compile_plans(data, run.filename, [{"device": saved.device,
                                                   "strategy": saved.strategy,
                                                   "file": saved.plan,
                                                   "keep_kinds": saved.keep_kinds}],
                             progress=progress, learned_models=learned_models([saved.device]),
                             runtime=run.runtime)
        views = dict(plan_views(data, run.filename, part, progress))
        view = views.get((saved.device, saved.strategy))
        entry = part["devices"][saved.device]["strategies"][saved.strategy]
        return (run.pk, entry, part["sources"],
                PlanGraph.pack(view) if view is not None else None)

    with log_context(run_id=run.pk):
        outcome = _work(SavedPlan, plan_id, token, progress, settings.COMPILE_SOFT_TIME_LIMIT_S,
                        compile_it, settings.COMPILE_LEASE_S, settings.COMPILE_MAX_ATTEMPTS)
        if outcome == SavedPlan.DONE and saved.kind == SavedPlan.TUNED:
            _measure_when_a_gpu_is_online(run, saved.author)
        return outcome


def _measure_when_a_gpu_is_online(run: Run, user) -> None:
    """The tuner's "then minutes on hardware": once its plan is on the run, ask a GPU worker to
    measure the run's plans, the tuned one with them, if one is online (else the run page's
    Measure button does it when one is)."""
    try:
        if gpu_status()["online"] and user is not None:
            request_measurement(Run.objects.get(pk=run.pk), user)
    except Exception:  # noqa: BLE001 - a measurement not asked for is no failure of the plan
        logger.warning("could not ask for a measurement of tuned run %s", run.pk, exc_info=True)


@app.task(bind=True, base=TuneTask, name=TUNE_RUN, acks_late=True, reject_on_worker_lost=True,
          **time_limits(TUNE_RUN), max_retries=None, ignore_result=True)
def tune_run(self, tune_id: int) -> str:
    """Start a tuning of a done run's plans (explorer.models.TuneJob): spread its search over
    as many shares (TuneShard, workers.tune_shard) as the compile queue has worker processes
    (`tuning_shares`), each an independent search on whichever worker takes it; the last to
    end joins them and saves the best plan as the run's "tuned" plan."""
    token = TuneJob.claim(tune_id, self.request.hostname or "", settings.COMPILE_LEASE_S,
                          settings.COMPILE_MAX_ATTEMPTS)
    if token is None:
        return _not_claimed(self, TuneJob, tune_id)
    run = TuneJob.objects.select_related("run").get(pk=tune_id).run
    if run.status != Run.DONE:
        TuneJob.fail(tune_id, "only a compiled run can be tuned", "tune", token)
        return TuneJob.FAILED
    try:
        with transaction.atomic():
            TuneJob.hand_to_shares(tune_id, token, tuning_shares())
    except ClaimLost:
        return "claim lost"
    return "shared"


# At most this many shares to a tuning, however many workers there are.
MAX_TUNE_SHARES = 16


def tuning_shares() -> int:
    """How many shares a tuning is spread over: TUNE_SHARES, or with 0 (the default) one per
    worker process that consumes the compile queue (Celery's inspect, one second at most);
    1 when none answers."""
    if settings.TUNE_SHARES:
        return settings.TUNE_SHARES
    compile_queue = queue_of(TUNE_RUN)
    try:
        inspector = app.control.inspect(timeout=1.0)
        queues = inspector.active_queues() or {}
        stats = inspector.stats() or {}
    except Exception:  # noqa: BLE001 - the broker busy or gone: one share still tunes
        logger.warning("could not count the compile workers; tuning in one share",
                       exc_info=True)
        return 1
    processes = sum((stats.get(name) or {}).get("pool", {}).get("max-concurrency", 1)
                    for name, consumed in queues.items()
                    if any(queue.get("name") == compile_queue for queue in consumed))
    return max(1, min(processes, MAX_TUNE_SHARES))


@app.task(bind=True, base=TuneShardTask, name=TUNE_SHARD, acks_late=True,
          reject_on_worker_lost=True, **time_limits(TUNE_SHARD), max_retries=None,
          ignore_result=True)
def tune_shard(self, shard_id: int) -> str:
    """One share of a tuning (explorer.models.TuneShard): its own search from the run's plans
    (compiler/stages/tune.py, with the share's seed), its answer kept on the row; the share
    that ends last joins them all (TuneJob.settle)."""
    token = TuneShard.claim(shard_id, self.request.hostname or "", settings.COMPILE_LEASE_S,
                            settings.COMPILE_MAX_ATTEMPTS)
    if token is None:
        return _not_claimed(self, TuneShard, shard_id)
    shard = TuneShard.objects.select_related("tuning__run").get(pk=shard_id)
    job, run = shard.tuning, shard.tuning.run
    progress = _ProgressRecorder(TuneShard, shard_id, token, settings.COMPILE_LEASE_S,
                                 ("import", "tune"))

    def compute() -> tuple:
        progress("import", 0, 1)
        graph = import_graph(run.graph_bytes, run.filename)
        plans = (run.artifact["devices"].get(job.device) or {}).get("strategies") or {}
        if not plans:
            raise InputError(f"the run has no {job.device} plans")
        predictor = _tuning_predictor(job)
        total = job.evaluations or 0
        progress("tune", 0, total, f"{job.search} search under the {job.model} model, "
                                   f"{job.budget_s:g} s")
        return tune_stored(
            graph, job.device, run.runtime,
            {name: plan["kernels"] for name, plan in plans.items()}, job.model, job.search,
            job.budget_s, job.evaluations, job.seed, job.top_k, predictor,
            progress=lambda done, best: progress("tune", done, max(total, done),
                                                 f"{done} plans scored, best {best:,.2f} µs"),
            shard=shard.index)

    with log_context(run_id=run.pk):
        return _work(TuneShard, shard_id, token, progress, settings.COMPILE_SOFT_TIME_LIMIT_S,
                     compute, settings.COMPILE_LEASE_S, settings.COMPILE_MAX_ATTEMPTS)


def _tuning_predictor(job: TuneJob):
    """The learned model a tuning under the learned model scores with; InputError without
    one for the device."""
    if job.model != "learned":
        return None
    path = learned_models([job.device]).get(job.device)
    if path is None:
        raise InputError(f"no learned model for {job.device}: train one (manage.py "
                         f"train_costmodel) or tune under the projected model")
    from compiler.cost.learned.predict import LearnedPredictor

    return LearnedPredictor.load(path)


def learned_models(devices: list[str]) -> dict[str, str]:
    """The active learned cost model file of each of `devices` that has one: what a compile
    predicts their kernels with (explorer/runs.py `learned_model_files`)."""
    return learned_model_files(devices)


@worker_init.connect(weak=False)
def import_learned_registry(sender, **_kwargs) -> None:
    """A compile worker imports what `learned_models` needs (torch: about 2 s) as it starts, in
    the process its pool processes are forked from, instead of in its first run, before that
    run's first plan could be shown."""
    if queue_of(COMPILE_RUN) in sender.app.amqp.queues.consume_from:
        import compiler.cost.learned.registry  # noqa: F401


@app.task(bind=True, base=MeasureTask, name=MEASURE_RUN, acks_late=True,
          reject_on_worker_lost=True, **time_limits(MEASURE_RUN), max_retries=None,
          ignore_result=True)
def measure_run(self, measurement_id: int) -> str:
    """Time the plans of a measurement's run on this worker's GPU (compiler.stages.measure) and
    store the result on the Measurement. A worker without a GPU fails the job with the reason;
    an emulated one (settings.GPU_WORKER_EMULATED) stores the kernels' check on the CPU
    emulator, with no time in it."""
    hostname = self.request.hostname or ""
    token = Measurement.claim(measurement_id, hostname, settings.MEASURE_LEASE_S,
                              settings.MEASURE_MAX_ATTEMPTS)
    if token is None:
        return _not_claimed(self, Measurement, measurement_id)
    run = Measurement.objects.select_related("run").get(pk=measurement_id).run
    progress = _ProgressRecorder(Measurement, measurement_id, token, settings.MEASURE_LEASE_S,
                                 MEASURE_STAGES)
    with log_context(run_id=run.pk):
        try:
            return _work(Measurement, measurement_id, token, progress,
                         settings.MEASURE_SOFT_TIME_LIMIT_S,
                         lambda: (_measure(run, progress),),
                         settings.MEASURE_LEASE_S, settings.MEASURE_MAX_ATTEMPTS)
        except GpuUnavailable as error:
            message = f"The GPU worker {hostname} cannot measure: {error}."
            _log_failure(logging.WARNING, Measurement, measurement_id, "gpu", message)
            Measurement.fail(measurement_id, message, "gpu", token)
            return Measurement.FAILED


def _measure(run: Run, progress) -> dict:
    """The measurement's MEASUREMENTS: timed on this worker's GPU, or checked on the CPU
    emulator when the worker is an emulated one. Its run's saved plans are measured with the
    strategies', and so are the plans its latest tuning chose to measure."""
    measure = check_graph_emulated if settings.GPU_WORKER_EMULATED else measure_graph
    return measure(run.graph_bytes, run.filename, run.devices, run.strategies,
                   progress=progress, runtime=run.runtime,
                   custom_plans=saved_plan_files(run) + tuning_candidate_files(run))


def saved_plan_files(run: Run) -> list[dict]:
    """The run's compiled saved plans as measure_graph (and compile_plans) take them."""
    return [{"device": saved.device, "strategy": saved.strategy, "file": saved.plan,
             "keep_kinds": saved.keep_kinds}
            for saved in run.saved_plans.filter(status=SavedPlan.DONE)]


def tuning_candidate_files(run: Run) -> list[dict]:
    """The plans the run's latest tuning of each device chose to measure besides its tuned
    plan (compiler/stages/tune.py `candidate_plans`), while that tuned plan is the run's: the
    tuner's top K measured with it, the paper's "then minutes on hardware"."""
    files = []
    for device in run.devices:
        job = run.tunings.filter(device=device).first()
        if job is not None and job.status == TuneJob.DONE and job.result and \
                run.saved_plans.filter(device=device, kind=SavedPlan.TUNED,
                                       status=SavedPlan.DONE,
                                       created__gte=job.created).exists():
            files += candidate_plans(job.result, device)
    return files


class _LeaseKeeper:
    """Renews a claimed job's lease every third of the lease from a daemon thread while the
    job computes, whether or not it reports progress: a live worker never loses its job to a
    redelivery during a long, silent stage (one big kernel's compile, a huge import). Only a
    worker that is gone (killed, frozen, cut off from the database) lets its lease run out."""

    def __init__(self, model: type[Job], pk, token: str, lease_s: int):
        self.model, self.pk, self.token, self.lease_s = model, pk, token, lease_s
        self.stopped = threading.Event()
        # In the job's log context, so that its warnings name the task and the job too.
        self.thread = threading.Thread(target=contextvars.copy_context().run, args=(self._beat,),
                                       name=f"lease-{pk}", daemon=True)

    def __enter__(self) -> _LeaseKeeper:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.thread.join()

    def _beat(self) -> None:
        from django.db import connection

        try:
            while not self.stopped.wait(max(1.0, self.lease_s / 3)):
                try:
                    if not self.model.keep_lease(self.pk, self.token, self.lease_s):
                        return   # taken over, or ended: the job's own calls find out
                except Exception:  # noqa: BLE001 - the database busy: try again next beat
                    logger.warning("could not renew the lease of %s %s", self.model.__name__,
                                   self.pk, exc_info=True)
        finally:
            connection.close()   # this thread's own connection


# Errors that say nothing about the job, only about the moment: the database locked or gone
# for a while, a connection reset. A job they stop is queued again, not failed as a bug.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError, InterfaceError, ConnectionError, TimeoutError, RedisError)
# The wait before a job stopped by a transient error is taken up again, doubled per attempt.
TRANSIENT_RETRY_S = 5


def _work(model: type[Job], pk, token: str, progress: _ProgressRecorder, soft_limit_s: int,
          compute, lease_s: int, max_attempts: int) -> str:
    """Run `compute()` for a claimed job, its lease kept alive meanwhile, and store what it
    returns (the arguments of the model's `finish` after the token), or fail the job with a
    message for the user and the stage that failed; a transient error queues it again
    (`_requeue`). The worker keeps going whatever happens."""
    try:
        with _LeaseKeeper(model, pk, token, lease_s):
            model.finish(pk, token, *compute())
    except ClaimLost:
        logger.warning("%s %s was claimed by another job; dropping this one's work",
                       model.__name__, pk)
        return "claim lost"
    except InputError as error:
        # The user's graph, not a bug: a warning, with where the importer stopped.
        stage = progress.stage or "import"
        _log_failure(logging.WARNING, model, pk, stage, str(error))
        model.fail(pk, str(error), stage, token)
        return model.FAILED
    except SoftTimeLimitExceeded:
        message = f"The job took longer than the limit of {soft_limit_s} s."
        _log_failure(logging.WARNING, model, pk, progress.stage, message)
        model.fail(pk, message, progress.stage, token)
        return model.FAILED
    except GpuUnavailable:
        raise
    except TRANSIENT_ERRORS as error:
        return _requeue(model, pk, token, progress, error, max_attempts)
    except Exception as error:  # a compiler bug: tell the user, keep the worker going
        _log_failure(logging.ERROR, model, pk, progress.stage, "internal compiler error")
        model.fail(pk, f"Internal compiler error ({type(error).__name__}: {error}). This is "
                       "a bug; please report it with the run's link.", progress.stage, token)
        return model.FAILED
    return model.DONE


def _log_failure(level: int, model: type[Job], pk, stage: str, reason: str) -> None:
    """The line of a failed job, with the exception being handled (its traceback) and the
    stage; the task's and the job's ids come from the log context."""
    logger.log(level, "%s %s failed in stage %s: %s", model.__name__, pk, stage, reason,
               exc_info=True, extra={"stage": stage})


def _requeue(model: type[Job], pk, token: str, progress: _ProgressRecorder, error: Exception,
             max_attempts: int) -> str:
    """A transient error stopped the job: give it back to the queue and send it again after a
    wait that doubles per attempt, or fail it, saying so, once its attempts are used up."""
    from django.db import connection

    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()   # a broken one reconnects for what follows
    reason = f"{type(error).__name__}: {error}"
    attempts = model.objects.filter(pk=pk).values_list("attempts", flat=True).first() or 0
    if attempts >= max_attempts:
        _log_failure(logging.ERROR, model, pk, progress.stage,
                     f"{max_attempts} attempts stopped by transient errors")
        model.fail(pk, f"Every one of the {max_attempts} attempts to {model.VERB} was stopped "
                       f"by a transient error; the last: {reason}. Retry it later.",
                   progress.stage, token)
        return model.FAILED
    logger.warning("%s %s stopped by a transient error in stage %s (%s); queued again",
                   model.__name__, pk, progress.stage, reason)
    if model.release(pk, token, reason):
        countdown = TRANSIENT_RETRY_S * 2 ** max(0, attempts - 1)
        task = {Run: compile_run, SavedPlan: compile_saved_plan, TuneJob: tune_run,
                TuneShard: tune_shard}.get(model, measure_run)
        try:
            task.apply_async((pk,), countdown=countdown)
        except Exception:  # noqa: BLE001 - the broker down too: the sweeper sends it later
            logger.warning("could not send %s %s again; the sweeper will", model.__name__, pk)
    return "retrying"


def _not_claimed(task, model: type[Job], pk) -> str:
    """A delivery of a job this worker may not take: finished, gone, or still held by a job
    whose lease is alive. In the last case check back when the lease would run out: if that
    worker died meanwhile, the retry claims the job."""
    job = model.objects.filter(pk=pk).only("status", "lease_expires").first()
    if job is None or job.status != model.RUNNING:
        return "nothing to do"
    wait_s = (job.lease_expires - timezone.now()).total_seconds() if job.lease_expires else 0
    raise task.retry(countdown=max(1, int(wait_s) + 1))
