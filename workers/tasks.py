"""Thin Celery tasks: each calls compiler/ and stores the artifacts, and holds no compiler logic.

Every task has an explicit, stable name (queued messages outlive code moves), acks_late so a job
whose worker dies is delivered again, and soft and hard time limits so a stuck job ends.
"""
import logging
import time

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from compiler.errors import InputError
from compiler.pipeline import compile_graph
from explorer.models import ClaimLost, Run
from workers.celery import app

logger = logging.getLogger(__name__)

# Progress is written at most this often (plus at every change of stage): a big graph has
# thousands of kernels, and each write takes the database's write lock.
PROGRESS_INTERVAL_S = 0.5


@app.task(name="workers.ping", acks_late=True, soft_time_limit=10, time_limit=20)
def ping() -> str:
    """Health check: answers "pong" once a worker consumes the compile queue."""
    return "pong"


class CompileTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        """Celery calls this when the job ended with an exception the task did not handle;
        mainly the hard time limit, which kills the job's process (this runs in the worker's
        main process then). Failing the run means no page waits on it forever."""
        if not args:
            return
        if isinstance(exc, TimeLimitExceeded):
            message = (f"The compile job was stopped after the hard time limit of "
                       f"{settings.COMPILE_TIME_LIMIT_S} s.")
        else:
            message = f"The compile job failed: {type(exc).__name__}: {exc}"
        Run.fail(args[0], message, error_stage="")


class _ProgressRecorder:
    """The progress callback: saves stage and counts on the run (throttled) and renews the
    claim's lease with each save."""

    def __init__(self, run_id: str, token: str):
        self.run_id, self.token = run_id, token
        self.stage, self.saved_at = "", 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        entering = stage != self.stage
        self.stage = stage
        now = time.monotonic()
        if not entering and done < total and now - self.saved_at < PROGRESS_INTERVAL_S:
            return
        Run.renew_lease(self.run_id, self.token, settings.COMPILE_LEASE_S,
                        stage=stage, progress_done=done, progress_total=total)
        self.saved_at = now
        if entering and stage == "codegen" and settings.COMPILE_TEST_CODEGEN_DELAY_S:
            time.sleep(settings.COMPILE_TEST_CODEGEN_DELAY_S)


@app.task(bind=True, base=CompileTask, name="workers.compile_run", acks_late=True,
          reject_on_worker_lost=True, soft_time_limit=settings.COMPILE_SOFT_TIME_LIMIT_S,
          time_limit=settings.COMPILE_TIME_LIMIT_S, max_retries=None,
          ignore_result=True)
def compile_run(self, run_id: str) -> str:
    """Compile run `run_id` (explorer.models.Run) and store its artifact on it (so no result is
    kept in Redis). Safe to deliver twice: only the job that claims the run computes it."""
    token = Run.claim(run_id, self.request.hostname or "", settings.COMPILE_LEASE_S,
                      settings.COMPILE_MAX_ATTEMPTS)
    if token is None:
        return _not_claimed(self, run_id)
    run = Run.objects.get(pk=run_id)
    progress = _ProgressRecorder(run_id, token)
    try:
        artifact = compile_graph(bytes(run.graph_bytes), run.filename, run.devices,
                                 run.strategies, progress=progress)
        Run.finish(run_id, token, artifact)
    except ClaimLost:
        logger.warning("run %s was claimed by another job; dropping this one's work", run_id)
        return "claim lost"
    except InputError as error:
        Run.fail(run_id, str(error), progress.stage or "import", token)
        return Run.FAILED
    except SoftTimeLimitExceeded:
        Run.fail(run_id, f"Compiling took longer than the limit of "
                         f"{settings.COMPILE_SOFT_TIME_LIMIT_S} s.", progress.stage, token)
        return Run.FAILED
    except Exception as error:  # a compiler bug: tell the user, keep the worker going
        logger.exception("compiling run %s failed in stage %s", run_id, progress.stage)
        Run.fail(run_id, f"Internal compiler error ({type(error).__name__}: {error}). This is "
                         "a bug; please report it with the run's link.", progress.stage, token)
        return Run.FAILED
    return Run.DONE


def _not_claimed(task, run_id: str) -> str:
    """A delivery of a run this job may not take: finished, gone, or still held by a job whose
    lease is alive. In the last case check back when the lease would run out: if that worker
    died meanwhile, the retry claims the run."""
    run = Run.objects.filter(pk=run_id).only("status", "lease_expires").first()
    if run is None or run.status != Run.RUNNING:
        return "nothing to do"
    wait_s = (run.lease_expires - timezone.now()).total_seconds() if run.lease_expires else 0
    raise task.retry(countdown=max(1, int(wait_s) + 1))
