"""Runs (an uploaded graph compiled for some devices and strategies), their kernels' sources
and measurements, and API keys; the teams runs are shared with are explorer/account_models.py's.

A run is a job and its result at once: workers.compile_run claims it, records its progress on
it and stores the artifact on it. A Measurement is the same for a request to time a run's
plans on a GPU (workers.measure_run). The claim rules live here (`Job.claim`, `renew_lease`,
...) so the tasks stay thin.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import secrets
import time
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, OperationalError, connections, models, transaction
from django.db.models import F, Q
from django.utils import timezone

from compiler.errors import InputError
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES, RUNTIME_LABELS
from explorer import graph_store
# Teams, memberships and invites live below the runs (explorer/account_models.py), which are
# shared with teams. Invite is imported too, so that Django finds it with the app's models and
# this module names every model of the app.
from explorer.account_models import Invite, Membership, Team  # noqa: F401
from explorer.graph_store import StagedFile


class ClaimLost(Exception):
    """The run was claimed again by another worker (this one was presumed dead)."""


class Job(models.Model):
    """What a run's compile job and a measurement job share: a status, the progress a page
    polls, the error a failed job shows, and the claim rules (an abstract model: each job kind
    has its own table).

    Every change of state is one conditional UPDATE that names the state it expects, so two
    workers holding the same job (a redelivery while the first worker still lives) can never
    both act on it."""
    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(QUEUED, "queued"), (RUNNING, "running"), (DONE, "done"), (FAILED, "failed")]
    # What a job does, for the error a job gets when its attempts run out.
    VERB = "run"

    status = models.CharField(max_length=10, choices=STATUSES, default=QUEUED, db_index=True)
    stage = models.CharField(max_length=20, blank=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    error_stage = models.CharField(max_length=20, blank=True)
    # Every stage of the job in order, as the worker's progress recorder keeps them:
    # [{"name", "started", "finished"}], times in seconds since the epoch, null until then
    # (stages not reached yet are listed from the start). And what the running stage is
    # doing, where its count alone would not move ("compiling 949 kernels to PTX").
    stages = models.JSONField(default=list, blank=True)
    stage_detail = models.CharField(max_length=200, blank=True)

    created = models.DateTimeField(auto_now_add=True)
    # When the job's message was last handed to the broker; null while it never was (the
    # broker was down when the job was stored): workers/sweeper.py sends it then.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    # The claim: which job holds the row (a fresh token per claim), since when, until when
    # (renewed as it reports progress) and how many claims there have been.
    claim_token = models.CharField(max_length=32, blank=True, editable=False)
    claimed_by = models.CharField(max_length=200, blank=True)
    lease_expires = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True

    def status_dict(self) -> dict:
        """What a status endpoint returns while a page waits for the job. `interrupted`: the
        job was running and its worker stopped renewing its lease (killed, or cut off), or a
        transient error gave it back to the queue; either way it will be taken up again."""
        interrupted = self.interrupted()
        detail = self.stage_detail if self.status in (self.RUNNING, self.QUEUED) else ""
        if interrupted and self.status == self.RUNNING:
            detail = "interrupted: its worker stopped answering; it will be retried"
        return {"status": self.status, "stage": self.stage,
                "progress_done": self.progress_done, "progress_total": self.progress_total,
                "error": self.error, "error_stage": self.error_stage,
                "finished": self.finished.isoformat() if self.finished else None,
                "stage_detail": detail, "interrupted": interrupted,
                "stages": self.stage_rows(time.time())}

    def interrupted(self) -> bool:
        if self.status == self.RUNNING:
            return self.lease_expires is not None and self.lease_expires < timezone.now()
        return self.status == self.QUEUED and self.attempts > 0

    def stage_rows(self, now: float) -> list[dict]:
        """Each stage with its state ("waiting", "running", "done", "failed") and the seconds
        it took, or has taken by `now` (null until it starts). A stage still open when the job
        ended closes with the job: done, or failed where the job failed."""
        ended = self.finished.timestamp() if self.finished else None
        rows = []
        for entry in self.stages:
            started, finished = entry.get("started"), entry.get("finished")
            if started is None:
                state = "waiting"
            elif finished is not None:
                state = "done"
            elif self.status == self.RUNNING:
                state = "running"
            else:
                state = "failed" if self.status == self.FAILED else "done"
                finished = ended
            seconds = None if started is None else max(0.0, (finished or now) - started)
            rows.append({"name": entry["name"], "state": state, "seconds": seconds})
        return rows

    # --- The job's life cycle: each step one conditional UPDATE. -------------------------------

    @classmethod
    def claim(cls, pk, worker: str, lease_s: int, max_attempts: int) -> str | None:
        """Take the job: a queued one, or a running one whose lease ran out (its worker died).
        Returns the claim token, or None when the job is not this worker's to take. A job that
        already used up its attempts is failed instead of being claimed again."""
        now = timezone.now()
        abandoned = Q(status=cls.RUNNING, lease_expires__lt=now)
        with transaction.atomic():
            if cls.objects.filter(abandoned, pk=pk, attempts__gte=max_attempts).update(
                    status=cls.FAILED, error_stage=F("stage"), finished=now, claim_token="",
                    error=f"Every one of the {max_attempts} attempts to {cls.VERB} ended with "
                          "its worker gone (killed, out of memory or past the hard time limit)."):
                cls._forget_attempt(pk)
        token = secrets.token_hex(16)
        with transaction.atomic():
            claimed = cls.objects.filter(Q(status=cls.QUEUED) | abandoned, pk=pk).update(
                status=cls.RUNNING, claim_token=token, claimed_by=worker[:200],
                lease_expires=now + timedelta(seconds=lease_s), attempts=F("attempts") + 1,
                started=now, stage="", progress_done=0, progress_total=0, error="",
                error_stage="", stages=[], stage_detail="")
            if claimed == 1:
                cls._forget_attempt(pk)
        return token if claimed == 1 else None

    @classmethod
    def _forget_attempt(cls, pk) -> None:
        """Drop what an attempt left before its result (called, in the same transaction, when
        the job fails and when a new attempt claims it); nothing for most job kinds."""

    @classmethod
    def renew_lease(cls, pk, token: str, lease_s: int, **progress) -> None:
        """Record progress (stage, progress_done, progress_total) and extend the lease; raise
        ClaimLost when another job has taken the row over."""
        lease_expires = timezone.now() + timedelta(seconds=lease_s)
        updated = cls.objects.filter(pk=pk, claim_token=token, status=cls.RUNNING).update(
            lease_expires=lease_expires, **progress)
        if updated != 1:
            raise ClaimLost(pk)

    @classmethod
    def keep_lease(cls, pk, token: str, lease_s: int) -> bool:
        """Extend the lease without touching the progress (the heartbeat of a job whose
        stage is long and silent); False when the claim is no longer this token's."""
        return cls.objects.filter(pk=pk, claim_token=token, status=cls.RUNNING).update(
            lease_expires=timezone.now() + timedelta(seconds=lease_s)) == 1

    @classmethod
    def release(cls, pk, token: str, reason: str) -> bool:
        """Give a claimed job back to the queue (a transient error stopped it: the database
        locked, a connection reset), saying why on its row; its attempt still counts. False
        when the claim is no longer this token's."""
        return cls.objects.filter(pk=pk, claim_token=token, status=cls.RUNNING).update(
            status=cls.QUEUED, claim_token="", lease_expires=None,
            stage_detail=f"interrupted ({reason[:150]}); it will be retried") == 1

    @classmethod
    def retry(cls, pk) -> bool:
        """Queue a failed job again with a fresh count of attempts (the owner's "retry");
        False when the job is not failed (already retried, or never failed). The caller
        sends its message once this commits."""
        return cls.objects.filter(cls.retryable(), pk=pk, status=cls.FAILED).update(
            status=cls.QUEUED, error="", error_stage="", stage="", progress_done=0,
            progress_total=0, stages=[], stage_detail="", started=None, finished=None,
            claim_token="", claimed_by="", lease_expires=None, attempts=0,
            enqueued_at=None) == 1

    @classmethod
    def retryable(cls) -> Q:
        """Which failed jobs `retry` may queue again: any, unless a job kind says otherwise."""
        return Q()

    @classmethod
    def _mark_done(cls, pk, token: str, **fields) -> None:
        """The DONE update of `finish` (call it inside the caller's transaction)."""
        updated = cls.objects.filter(pk=pk, claim_token=token, status=cls.RUNNING).update(
            status=cls.DONE, finished=timezone.now(), lease_expires=None,
            progress_done=F("progress_total"), **fields)
        if updated != 1:
            raise ClaimLost(pk)

    @classmethod
    def fail(cls, pk, error: str, error_stage: str, token: str | None = None) -> bool:
        """Mark the job failed with a message for the user. With a token, only while that claim
        holds; without, any running job (the hard time limit: the claimer was killed)."""
        jobs = cls.objects.filter(pk=pk, status=cls.RUNNING)
        if token is not None:
            jobs = jobs.filter(claim_token=token)
        # A message may quote the input, NUL characters included ("found '\x00'"), which
        # PostgreSQL refuses to store in text: they are written as the escape instead.
        with transaction.atomic():
            updated = jobs.update(status=cls.FAILED, error=error.replace("\x00", "\\x00"),
                                  error_stage=error_stage or F("stage"),
                                  finished=timezone.now(), lease_expires=None)
            if updated == 1:
                cls._forget_attempt(pk)
        return updated == 1


class GraphBlob(models.Model):
    """The index entry of an uploaded graph's file, stored once per content.

    Keyed by the SHA-256 of the bytes as uploaded (gzip and all), which also names the file in
    the graph store (explorer/graph_store.py: the storage alias "graphs", GRAPH_STORE_DIR by
    default). The bytes are a file, not a column: a database row of hundreds of MB costs its
    write (half a second for 38 MB in SQLite) and the memory to hold it in the web process.
    Runs point at the row, so the same file uploaded for several runs (other devices, other
    owners) is stored once, and the file goes when the last run that points at it is deleted
    (`Run.delete_with_graph`) or lets go of it (`Run.remove_failed_uploads`): `release`."""
    sha256 = models.CharField(primary_key=True, max_length=64, editable=False)
    size = models.PositiveBigIntegerField()
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} bytes)"

    @classmethod
    def store(cls, graph: StagedFile | bytes) -> str:
        """The key of the row of these bytes (a staged upload's, or bytes in memory), stored
        now (row and file) unless they are there already. Call it inside a transaction with
        the run that points at it: the row is written before the file, so a concurrent
        delete of the same bytes (`Run.delete_with_graph`, which deletes the file inside its
        own transaction) is either over or waits."""
        if not isinstance(graph, StagedFile):
            staged = StagedFile.from_bytes(bytes(graph), "graph")
            try:
                return cls.store(staged)
            finally:
                staged.close()
        key = graph.sha256
        if cls.objects.filter(pk=key).exists():
            if not graph_store.exists(key):   # lost (a store restored without it): put back
                graph_store.put(graph)
            return key
        try:
            with transaction.atomic():
                cls.objects.create(sha256=key, size=graph.size)
                graph_store.put(graph)
        except IntegrityError:  # the same bytes stored at the same moment by another run
            pass
        return key

    @classmethod
    def unused(cls) -> models.QuerySet:
        """The rows no run points at."""
        return cls.objects.exclude(pk__in=Run.objects.filter(graph__isnull=False)
                                   .values("graph_id"))

    @classmethod
    def release(cls, key: str) -> bool:
        """Delete the row of `key` and its file if no run points at it any longer; whether it
        did. Call it inside the transaction that let go of it: the row goes, then the file, so
        a failure before keeps both, and an upload of the same bytes meanwhile (`store`) waits
        for the transaction or finds no row and stores the file anew."""
        if not cls.unused().filter(pk=key).delete()[0]:
            return False
        graph_store.delete(key)
        return True

    @classmethod
    def bytes_held(cls, runs: models.QuerySet) -> int:
        """The size of the files `runs` point at, each file once however many of them point
        at it (what a storage quota counts)."""
        files = cls.objects.filter(pk__in=runs.filter(graph__isnull=False).values("graph_id"))
        return files.aggregate(total=models.Sum("size"))["total"] or 0

    @classmethod
    def data_of(cls, key: str) -> bytes:
        """The stored bytes (checked against their SHA-256); GraphUnavailable, an
        InputError saying what to do, when the file is missing or damaged."""
        return graph_store.read(key)


def uploaded(data: bytes, filename: str) -> bytes:
    """An upload's bytes decompressed (as stored when they do not decompress)."""
    from compiler.errors import InputError
    from compiler.importers import decompressed

    try:
        return decompressed(data, filename)
    except InputError:
        return data


def graph_sha256(data: bytes, filename: str) -> str:
    """The SHA-256 of an uploaded graph, decompressed: a gzipped upload of the same text is
    the same graph. (An upload's is worked out as it streams in: graph_store.GraphDigest.)"""
    return hashlib.sha256(uploaded(data, filename)).hexdigest()


RUNTIME_CHOICES = [(name, RUNTIME_LABELS[name]) for name in RUNTIMES]
# A run's labels, as every way in takes them (the upload and settings forms, the API): a name of
# at most RUN_NAME_LENGTH characters, at most MAX_TAGS tags of at most MAX_TAG_LENGTH each.
RUN_NAME_LENGTH = 200
MAX_TAGS, MAX_TAG_LENGTH = 20, 50


class Run(Job):
    PRIVATE, TEAM, PUBLIC = "private", "team", "public"
    VISIBILITIES = [(PRIVATE, "private"), (TEAM, "team"), (PUBLIC, "public")]
    VERB = "compile this run"

    # The permalink id: see explorer/runs.py run_id().
    id = models.CharField(primary_key=True, max_length=22, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="runs")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="runs")
    visibility = models.CharField(max_length=10, choices=VISIBILITIES, default=PRIVATE)
    name = models.CharField(max_length=RUN_NAME_LENGTH, blank=True)
    tags = models.JSONField(default=list, blank=True)

    filename = models.CharField(max_length=255)
    # The uploaded bytes, stored by content (read them through `graph_bytes`); none once the
    # run let go of them (a failed run's, FAILED_RUN_UPLOADS_KEPT_S after it failed:
    # `remove_failed_uploads`), which `upload_removed` says when.
    graph = models.ForeignKey(GraphBlob, on_delete=models.PROTECT, related_name="runs",
                              null=True, blank=True)
    upload_removed = models.DateTimeField(null=True, blank=True)
    # The SHA-256 of the graph, decompressed (`graph_sha256`), set when the run is first
    # saved: runs of the same graph are found by it (compare's candidates) without reading or
    # comparing the graphs' bytes.
    graph_sha256 = models.CharField(max_length=64, blank=True, db_index=True, editable=False)
    devices = models.JSONField(default=list)
    strategies = models.JSONField(default=list)
    # How the plans' kernels are launched (compiler/target/launch.py): the runtime the cost
    # strategy decides under and whose launch terms the plans' times carry first.
    runtime = models.CharField(max_length=10, choices=RUNTIME_CHOICES, default=DEFAULT_RUNTIME)
    compiler_version = models.CharField(max_length=64)
    # When the row was last saved through the model: at creation, and whenever its labels
    # (name, tags, sharing) change. The job's own writes (claim, progress, finish) are
    # `update()`s and leave it alone. The run pages' compare pickers are kept by it
    # (`page_stamp`).
    saved = models.DateTimeField(auto_now=True)
    # When a saved plan of the run (SavedPlan) was last added, compiled or failed: what its
    # pages show changes then, so the keys of what is kept of them name it
    # (explorer/runs.py results_stamp).
    plans_changed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    @property
    def artifact(self) -> dict | None:
        """The ARTIFACT of compiler.stages.pipeline.compile_graph without "sources" (those are
        KernelSource rows); None until the run is done, whatever preview the run has meanwhile
        (`preview`). It lives in its own table (`RunArtifact`), read here on first use and kept
        on the instance."""
        if "_artifact" not in self.__dict__:
            data = self._stored_data()
            self.__dict__["_artifact"] = None if is_preview(data) else in_compiled_order(data)
        return self.__dict__["_artifact"]

    @property
    def preview(self) -> dict | None:
        """While the run compiles, compile_graph's PREVIEW as the worker last stored it (the
        plans explored so far, priced before anything is built; `store_preview`); None before
        the first plan is explored and once the run has ended (done: its `artifact` instead;
        failed: nothing). Read on first use and kept on the instance."""
        if "_preview" not in self.__dict__:
            data = self._stored_data() if self.status == self.RUNNING else None
            self.__dict__["_preview"] = in_compiled_order(data) if is_preview(data) else None
        return self.__dict__["_preview"]

    def _stored_data(self) -> dict | None:
        """The run's row in RunArtifact: its artifact or its preview (or None)."""
        if self._state.adding:
            return None
        return RunArtifact.objects.filter(run_id=self.pk).values_list("data", flat=True).first()

    @artifact.setter
    def artifact(self, value: dict | None) -> None:
        """A new artifact for the run, written when the run is saved (so
        `Run.objects.create(artifact=...)` works)."""
        self.__dict__["_artifact"] = value
        self.__dict__["_artifact_changed"] = True

    def refresh_from_db(self, *args, **kwargs):
        for kept in ("_artifact", "_artifact_changed", "_preview"):
            self.__dict__.pop(kept, None)
        super().refresh_from_db(*args, **kwargs)

    @property
    def graph_bytes(self) -> bytes:
        """The uploaded file's bytes (read from the graph store: read them once).
        GraphUnavailable when its file is missing or damaged."""
        pending = self.__dict__.get("_new_graph")
        if isinstance(pending, StagedFile):
            return pending.head(pending.size)
        if pending is not None:
            return pending
        if self.graph_id is None:
            raise graph_store.GraphUnavailable(f"the uploaded graph {self.upload_removed_why}")
        return GraphBlob.data_of(self.graph_id)

    @graph_bytes.setter
    def graph_bytes(self, data: bytes) -> None:
        """New bytes for the run, stored (GraphBlob and its file) when the run is saved; so
        `Run.objects.create(graph_bytes=...)` works."""
        self.set_graph(bytes(data))

    def set_graph(self, graph: bytes | StagedFile) -> None:
        """`graph_bytes = ...`, or an upload's file as the web request staged it (not read
        into memory: its SHA-256s were worked out as it streamed in)."""
        self.__dict__["_new_graph"] = graph

    def save(self, *args, **kwargs):
        graph = self.__dict__.pop("_new_graph", None)
        if graph is not None:
            staged = graph if isinstance(graph, StagedFile) \
                else StagedFile.from_bytes(graph, self.filename or "graph")
            try:
                self.graph_id = GraphBlob.store(staged)
                self.graph_sha256 = staged.graph_sha256
            finally:
                if staged is not graph:
                    staged.close()
        if not self.__dict__.pop("_artifact_changed", False):
            super().save(*args, **kwargs)
            return
        with transaction.atomic():
            super().save(*args, **kwargs)
            RunArtifact.put(self.pk, self.__dict__["_artifact"])

    def delete_with_graph(self) -> None:
        """Delete the run with everything of it (sources, plans' views, measurements) and
        its graph's row and file when no other run shares them, in one transaction. The file
        goes last, inside it: a failure before keeps rows and file together, and an upload of
        the same bytes meanwhile (GraphBlob.store) waits for the transaction or finds no row
        and stores the file anew."""
        with transaction.atomic():
            graph_id = self.graph_id
            self.delete()
            if graph_id is not None:
                GraphBlob.release(graph_id)

    @property
    def upload_removed_why(self) -> str:
        """When and why the run's upload was removed, for its page and its errors."""
        days = settings.FAILED_RUN_UPLOADS_KEPT_S / 86400
        kept = f"{days:g} day{'s' if days != 1 else ''}" if days >= 1 \
            else f"{settings.FAILED_RUN_UPLOADS_KEPT_S} s"
        when = f" on {self.upload_removed:%Y-%m-%d}" if self.upload_removed else ""
        return (f"was removed{when}: a failed run keeps its upload for {kept} "
                f"(FAILED_RUN_UPLOADS_KEPT_S), to free the room it took; upload the graph again "
                f"to compile it")

    @classmethod
    def retryable(cls) -> Q:
        """A failed run whose upload was removed cannot be compiled again."""
        return Q(graph__isnull=False)

    @classmethod
    def remove_failed_uploads(cls, failed_before) -> list[str]:
        """Let go of the uploads of the runs that failed before `failed_before` (the runs stay,
        saying so: `upload_removed`), each graph's row and file going with the last run that
        holds it; the ids of those runs. Each run is one conditional UPDATE (it must still be
        failed, with the same graph): two workers doing this at once, or an owner retrying
        the run meanwhile, change nothing twice."""
        stale = cls.objects.filter(status=cls.FAILED, finished__lt=failed_before,
                                   graph__isnull=False).values_list("pk", "graph_id")
        removed = []
        for pk, graph_id in list(stale):
            with transaction.atomic():
                if cls.objects.filter(pk=pk, status=cls.FAILED, graph_id=graph_id).update(
                        graph=None, upload_removed=timezone.now()):
                    GraphBlob.release(graph_id)
                    removed.append(pk)
        return removed

    @classmethod
    def shared_with(cls, team) -> models.QuerySet:
        """The team's runs: shared with it (visibility "team", or "public" with the team
        named); a run its owner keeps private is not the team's even if it names the team."""
        return cls.objects.filter(team=team, visibility__in=(cls.TEAM, cls.PUBLIC))

    def __str__(self) -> str:
        return f"{self.id} {self.title}"

    @property
    def title(self) -> str:
        """What the run is called wherever it is shown or listed: the name its owner gave it,
        else the uploaded file's name."""
        return self.name or self.filename

    def can_view(self, user) -> bool:
        """Owner and staff always; team members for a team run; anyone for a public one."""
        if self.visibility == self.PUBLIC:
            return True
        if user is None or not user.is_authenticated:
            return False
        if user.is_staff or user.pk == self.owner_id:
            return True
        return (self.visibility == self.TEAM and self.team_id is not None
                and Membership.objects.filter(team_id=self.team_id, user=user).exists())

    @classmethod
    def store_preview(cls, run_id: str, token: str, lease_s: int, preview: dict) -> None:
        """Store compile_graph's PREVIEW in place of the last one and extend the lease, while
        the claim is still `token`'s (ClaimLost otherwise), in one transaction: a run that
        failed or was claimed again meanwhile gets no preview. `finish` writes the artifact
        over it, and a failure or a new attempt drops it (`_forget_attempt`)."""
        with transaction.atomic():
            cls.renew_lease(run_id, token, lease_s)
            RunArtifact.put(run_id, {**preview, PREVIEW_KEY: True})

    @classmethod
    def _forget_attempt(cls, pk) -> None:
        """A failed run shows no plans, and a new attempt starts with none shown."""
        RunArtifact.objects.filter(run_id=pk, **{f"data__{PREVIEW_KEY}": True}).delete()

    @classmethod
    def finish(cls, run_id: str, token: str, artifact: dict,
               plan_graphs: dict[tuple[str, str], bytes] | None = None) -> None:
        """Store the artifact (its "sources" as KernelSource rows) and the plans' fusion-view
        objects ({(device, strategy): PlanGraph.pack(view)}, as PlanGraph rows) and mark the
        run done, all in one transaction: a run is never seen half-written."""
        sources = artifact.pop("sources", {})
        with transaction.atomic():
            cls._mark_done(run_id, token)
            # A new artifact holds none of the saved plans: each is compiled (again) onto it.
            SavedPlan.requeue_for(run_id)
            RunArtifact.put(run_id, artifact)
            KernelSource.objects.filter(run_id=run_id).delete()
            KernelSource.objects.bulk_create(
                (KernelSource.from_artifact(run_id, key, source)
                 for key, source in sources.items()), batch_size=500)
            PlanGraph.objects.filter(run_id=run_id).delete()
            PlanGraph.objects.bulk_create(
                PlanGraph(run_id=run_id, device=device, strategy=strategy, data=data)
                for (device, strategy), data in (plan_graphs or {}).items())

    def latest_measurement(self) -> Measurement | None:
        """The newest measurement job of this run, whatever its state (its result, which can
        be large, left unread)."""
        return self.measurements.defer("result").first()

    def shown_measurement(self) -> Measurement | None:
        """The measurement whose timings the run's pages show: the newest finished one."""
        return self.measurements.filter(status=Measurement.DONE).defer("result").first()

    def shown_measurement_id(self) -> int | None:
        """The id of `shown_measurement()`, read in plain SQL for a cache key (as `page_stamp`
        is, and why)."""
        with connections[self._state.db or "default"].cursor() as cursor:
            cursor.execute(f"SELECT id FROM {Measurement._meta.db_table} WHERE run_id = %s "
                           f"AND status = %s ORDER BY created DESC, id DESC LIMIT 1",
                           [self.pk, Measurement.DONE])
            row = cursor.fetchone()
        return row[0] if row else None

    def page_stamp(self, user) -> tuple:
        """What a logged-in visitor's page of this run shows that can change while the run's
        own row does not, as values that change with it (for a cache key; explorer/views.py
        `_kept_run_page`): the newest measurement's id, status, stage and progress, and, of
        the finished runs the compare pickers choose from (the user's own and those of this
        run's graph), how many, the newest finish and the newest change of labels.

        One statement of plain SQL: the ORM would build the two queries' SQL on every visit,
        about 1.5 ms of CPU, where running the statement takes about 0.1 ms; its values only
        make a key, so they need no conversion into Python types."""
        runs, measurements = Run._meta.db_table, Measurement._meta.db_table
        with connections[self._state.db or "default"].cursor() as cursor:
            cursor.execute(
                f"SELECT m.id, m.status, m.stage, m.progress_done, m.progress_total, "
                f"p.count, p.finished, p.saved "
                f"FROM (SELECT COUNT(*) AS count, MAX(finished) AS finished, MAX(saved) AS saved "
                f"FROM {runs} WHERE status = %s AND (owner_id = %s OR graph_sha256 = %s)) AS p "
                f"LEFT JOIN (SELECT id, status, stage, progress_done, progress_total "
                f"FROM {measurements} WHERE run_id = %s ORDER BY created DESC, id DESC LIMIT 1) "
                f"AS m ON 1 = 1",
                [Run.DONE, user.pk, self.graph_sha256, self.pk])
            return tuple(str(value) for value in cursor.fetchone())


class RunArtifact(models.Model):
    """A done run's artifact (`Run.artifact`), in a table of its own rather than a column of
    the runs' table: artifacts weigh megabytes for big graphs, and a database that keeps a row's
    columns together (SQLite walks a big value's overflow pages to reach the columns stored
    after it) would make every list of runs pay for every listed run's artifact.

    While the run compiles, the row holds its preview instead (`Run.preview`): the plans
    explored so far, marked by PREVIEW_KEY, which no artifact has. Only a run that is done has
    an artifact here (Run.finish writes it and marks the run done at once), so whatever reads
    a done run's row reads its artifact."""
    run = models.OneToOneField(Run, primary_key=True, on_delete=models.CASCADE,
                               related_name="+")
    data = models.JSONField()

    @classmethod
    def put(cls, run_id: str, data: dict | None) -> None:
        """Store `data` as the run's artifact (None: the run has none)."""
        if data is None:
            cls.objects.filter(run_id=run_id).delete()
        else:
            cls.objects.update_or_create(run_id=run_id, defaults={"data": data})


# The key that marks a RunArtifact row as a running run's preview, not its artifact.
PREVIEW_KEY = "preview"


def is_preview(data: dict | None) -> bool:
    """Whether a RunArtifact row's data is a preview (`Run.store_preview`)."""
    return isinstance(data, dict) and data.get(PREVIEW_KEY) is True


def in_compiled_order(artifact: dict | None) -> dict | None:
    """`artifact` with its devices and each device's plans in the order compile_graph wrote
    them: devices by name, strategies in exploration order. PostgreSQL keeps a JSON object's
    keys in an order of its own (jsonb: shortest first, so "xla" before "unfused"), and the
    pages, the exports and the API list devices and plans in the artifact's order."""
    if not artifact or not isinstance(artifact.get("devices"), dict):
        return artifact
    # Here, not at the top: the compiler's fusion package takes most of a second to import,
    # which a manage.py command that never reads an artifact need not pay.
    from compiler.fusion.explore import STRATEGIES

    order = {name: index for index, name in enumerate(STRATEGIES)}
    devices = {}
    for device in sorted(artifact["devices"]):
        result = artifact["devices"][device]
        plans = result.get("strategies") or {}
        names = sorted(plans, key=lambda name: (order.get(name, len(order)), name))
        devices[device] = {**result, "strategies": {name: plans[name] for name in names}}
    return {**artifact, "devices": devices}


class Measurement(Job):
    """One request to time a run's plans on a GPU: a job on the `gpu` queue
    (workers.measure_run) and, once done, its result: compiler.stages.measure.measure_graph's
    MEASUREMENTS (the GPU's name, every plan's kernels checked and timed, the eager
    baseline)."""
    VERB = "measure this run"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="measurements")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    gpu = models.CharField(max_length=200, blank=True)
    compiler_version = models.CharField(max_length=64, blank=True)
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"measurement {self.pk} of {self.run_id} ({self.status})"

    @classmethod
    def finish(cls, pk: int, token: str, result: dict) -> None:
        cls._mark_done(pk, token, result=result, gpu=result.get("gpu", "")[:200],
                       compiler_version=result.get("compiler_version", "")[:64])

    @classmethod
    def record_imported(cls, run: Run, result: dict, origin: str) -> Measurement:
        """A finished measurement of `run` made elsewhere (a GPU campaign's, explorer/campaigns.py)
        with no job behind it; its `gpu` is the line the pages show, `origin`."""
        now = timezone.now()
        return cls.objects.create(run=run, status=cls.DONE, started=now, finished=now,
                                  gpu=origin[:200], result=result,
                                  compiler_version=result.get("compiler_version", "")[:64])


# A saved plan's name: letters, digits, "_", "-" and "." (it is part of a permalink,
# "#h100/custom:NAME"), at most SAVED_PLAN_NAME_LENGTH characters; its strategy is
# "custom:NAME", which every table that names a plan's strategy has room for.
SAVED_PLAN_NAME_LENGTH = 40
SAVED_PLAN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
CUSTOM_PREFIX = "custom:"
STRATEGY_LENGTH = len(CUSTOM_PREFIX) + SAVED_PLAN_NAME_LENGTH + 13


class RunPlanJob(Job):
    """A job whose outcome the run's pages show beside its plans (a saved plan, a tuning): its
    changes, failing included, are noted on the run (`touch_run`), whose kept pages name them."""

    class Meta:
        abstract = True

    @staticmethod
    def touch_run(run_id: str) -> None:
        """Note on the run that its saved plans or tunings changed (Run.plans_changed)."""
        Run.objects.filter(pk=run_id).update(plans_changed=timezone.now())

    @classmethod
    def fail(cls, pk, error: str, error_stage: str, token: str | None = None) -> bool:
        failed = super().fail(pk, error, error_stage, token)
        if failed:
            run_id = cls.objects.filter(pk=pk).values_list("run_id", flat=True).first()
            if run_id:
                cls.touch_run(run_id)
        return failed


class SavedPlan(RunPlanJob):
    """A plan a user made for a run (edited in the fusion view, or a plan file uploaded with
    it or later): kept as its plan file (compiler/fusion/plan_files.py) and compiled by the
    compile worker onto the run's artifact as the strategy "custom:NAME" of its device, with
    its kernels' sources and fusion view, beside the strategies' plans. Compiled once the run
    is done, and again whenever the run is compiled again (a new artifact holds no saved
    plan). A plan that does not apply fails here with the reason; the run is untouched."""
    VERB = "compile this plan"
    # A plan a user made ("custom:NAME"), or the autotuner's best ("tuned", TuneJob), whose
    # name no user's plan can have (a name starts with a letter or a digit).
    CUSTOM, TUNED = "custom", "tuned"
    TUNED_NAME = "-tuned"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="saved_plans")
    device = models.CharField(max_length=20)
    name = models.CharField(max_length=SAVED_PLAN_NAME_LENGTH)
    kind = models.CharField(max_length=10, default=CUSTOM,
                            choices=[(CUSTOM, "made by a user"), (TUNED, "the autotuner's")])
    # What the plan's entry in the artifact takes besides what compiling it gives: a tuned
    # plan's decisions (its moves, each with its predicted gain), cost model and tuning.
    extra = models.JSONField(default=dict, blank=True)
    plan = models.JSONField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="saved_plans")
    # The plan was saved from an edit of a stored plan (explorer/plan_edits.py), its file
    # written here: its kernels keep the kinds in it (compiler/fusion/plan_files.py
    # plan_from_file's keep_kinds), so it compiles to what the what-if priced. A user's plan
    # file is never trusted so: its kinds are the kernel analysis's.
    keep_kinds = models.BooleanField(default=False)

    class Meta:
        ordering = ["created", "id"]
        constraints = [models.UniqueConstraint(fields=["run", "device", "name"],
                                               name="one_saved_plan_per_name")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.device}/{self.strategy} ({self.status})"

    @property
    def strategy(self) -> str:
        return self.strategy_of(self.kind, self.name)

    @classmethod
    def strategy_of(cls, kind: str, name: str) -> str:
        """The strategy a saved plan of this kind and name is in its run's artifact."""
        return cls.TUNED if kind == cls.TUNED else CUSTOM_PREFIX + name

    @staticmethod
    def check_name(name) -> str:
        """The name, or ValueError saying what a name may be."""
        if not isinstance(name, str) or not SAVED_PLAN_NAME.fullmatch(name) \
                or len(name) > SAVED_PLAN_NAME_LENGTH:
            raise ValueError(f"a plan's name is 1 to {SAVED_PLAN_NAME_LENGTH} letters, digits, "
                             f"'_', '-' or '.', starting with a letter or digit; not {name!r}")
        return name

    def status_dict(self) -> dict:
        return {**super().status_dict(), "id": self.pk, "device": self.device,
                "name": self.name, "strategy": self.strategy}

    @classmethod
    def requeue_for(cls, run_id: str) -> list[int]:
        """Queue every saved plan of the run again (the run got a new artifact), each sent to
        the compile queue once the caller's transaction commits; their ids."""
        ids = list(cls.objects.filter(run_id=run_id).values_list("pk", flat=True))
        if ids:
            cls.objects.filter(pk__in=ids).update(
                status=cls.QUEUED, error="", error_stage="", stage="", progress_done=0,
                progress_total=0, stages=[], stage_detail="", started=None, finished=None,
                claim_token="", claimed_by="", lease_expires=None, attempts=0,
                enqueued_at=None)
            from explorer import runs   # runs imports this module

            transaction.on_commit(lambda: [runs.enqueue_saved_plan(pk) for pk in ids])
        return ids

    @classmethod
    def finish(cls, pk: int, token: str, run_id: str, entry: dict, sources: dict,
               view: bytes | None) -> None:
        """Add the compiled plan to its run's artifact (`entry`: its strategy entry;
        `sources`: its kernels' KernelSource entries; `view`: its packed fusion view) and mark
        it done, in one transaction, the run's row locked so that two plans landing at once
        both stay."""
        with transaction.atomic():
            saved = cls.objects.get(pk=pk)
            Run.objects.select_for_update().filter(pk=run_id).exists()
            artifact = RunArtifact.objects.filter(run_id=run_id) \
                .values_list("data", flat=True).first()
            if artifact is None or is_preview(artifact):
                raise ClaimLost(pk)   # the run is being compiled again: so will the plan be
            if saved.device not in (artifact.get("devices") or {}):
                raise InputError(f"the run has no {saved.device} plans: a saved plan is for "
                                 f"one of the run's devices ({', '.join(artifact['devices'])})")
            cls._mark_done(pk, token)
            strategies = artifact["devices"][saved.device]["strategies"]
            unfused = (strategies.get("unfused") or {}).get("total", {}).get("sol_us")
            if unfused and entry["total"].get("sol_us"):
                entry["total"]["speedup_vs_unfused"] = unfused / entry["total"]["sol_us"]
            entry.update(saved.extra or {})
            strategies[saved.strategy] = entry
            RunArtifact.put(run_id, artifact)
            KernelSource.objects.filter(run_id=run_id, device=saved.device,
                                        strategy=saved.strategy).delete()
            KernelSource.objects.bulk_create(
                (KernelSource.from_artifact(run_id, key, source)
                 for key, source in sources.items()), batch_size=500)
            PlanGraph.objects.filter(run_id=run_id, device=saved.device,
                                     strategy=saved.strategy).delete()
            if view is not None:
                PlanGraph.objects.create(run_id=run_id, device=saved.device,
                                         strategy=saved.strategy, data=view)
            cls.touch_run(run_id)

    def remove(self) -> None:
        """Delete the plan and what it added to its run's artifact, in one transaction."""
        with transaction.atomic():
            Run.objects.select_for_update().filter(pk=self.run_id).exists()
            artifact = RunArtifact.objects.filter(run_id=self.run_id) \
                .values_list("data", flat=True).first()
            plans = ((artifact or {}).get("devices") or {}).get(self.device, {}) \
                .get("strategies", {})
            if self.strategy in plans:
                del plans[self.strategy]
                RunArtifact.put(self.run_id, artifact)
            KernelSource.objects.filter(run_id=self.run_id, device=self.device,
                                        strategy=self.strategy).delete()
            PlanGraph.objects.filter(run_id=self.run_id, device=self.device,
                                     strategy=self.strategy).delete()
            self.delete()
            self.touch_run(self.run_id)


class TuneJob(RunPlanJob):
    """A request to tune a run's plans with the autotuner (compiler/fusion/autotune.py): a job
    on the compile queue that searches from the run's plans under a model for a time budget,
    stores its result (the best plans, each model's totals, which to measure, the history of
    the best score) and saves the best plan as the run's strategy "tuned" (a SavedPlan of kind
    TUNED, compiled onto the run like any saved plan)."""
    VERB = "tune this run"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tunings")
    device = models.CharField(max_length=20)
    model = models.CharField(max_length=10, default="projected")
    search = models.CharField(max_length=10, default="anneal")
    budget_s = models.FloatField(default=30.0)
    evaluations = models.PositiveIntegerField(null=True, blank=True)
    seed = models.IntegerField(default=0)
    top_k = models.PositiveSmallIntegerField(default=3)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="tunings")
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"tuning {self.pk} of {self.run_id} ({self.status})"

    def status_dict(self) -> dict:
        return {**super().status_dict(), "id": self.pk, "device": self.device,
                "model": self.model, "search": self.search, "budget_s": self.budget_s}

    @classmethod
    def hand_to_shares(cls, pk: int, token: str, count: int) -> list[int]:
        """Spread the search over `count` shares (TuneShard), each a job of its own on the
        compile queue, sent once the caller's transaction commits; the tuning stays running,
        without a lease of its own (its shares hold theirs), until the last share settles it
        (`settle`). Their ids."""
        updated = cls.objects.filter(pk=pk, claim_token=token, status=cls.RUNNING).update(
            lease_expires=None, stage="tune", progress_done=0, progress_total=count,
            stage_detail=f"searching in {count} share{'s' if count != 1 else ''}")
        if updated != 1:
            raise ClaimLost(pk)
        ids = [TuneShard.objects.create(tuning_id=pk, index=index).pk for index in range(count)]
        from explorer import runs   # runs imports this module

        transaction.on_commit(lambda: [runs.enqueue_tune_shard(shard) for shard in ids])
        return ids

    @classmethod
    def settle(cls, pk: int) -> None:
        """Once every share has ended (call inside the transaction that ended one): join the
        finished shares' answers and finish the tuning (`finish`), or fail it with the first
        share's error when none finished."""
        job = cls.objects.select_for_update().filter(pk=pk, status=cls.RUNNING).first()
        if job is None:
            return
        shares = list(job.shares.order_by("index"))
        if any(share.status in (share.QUEUED, share.RUNNING) for share in shares):
            cls.objects.filter(pk=pk).update(progress_done=sum(
                share.status in (share.DONE, share.FAILED) for share in shares))
            return
        done = [share.result for share in shares if share.status == share.DONE]
        if not done:
            failed = next((share for share in shares if share.status == share.FAILED), None)
            cls.fail(pk, failed.error if failed else "no share of the tuning ran", "tune",
                     job.claim_token)
            return
        from compiler.stages.tune import merge_tunings

        result, plan_file, extra = merge_tunings(
            [(answer["summary"], answer["plan_file"], answer["extra"]) for answer in done],
            job.top_k)
        cls.finish(pk, job.claim_token, result, job.run_id, job.device, plan_file, extra)

    @classmethod
    def finish(cls, pk: int, token: str, result: dict, run_id: str, device: str,
               plan_file: dict, extra: dict) -> None:
        """Store the search's result and save its best plan as the run's "tuned" plan of the
        device (replacing an earlier one), queued to compile, in one transaction."""
        with transaction.atomic():
            cls._mark_done(pk, token, result=result)
            tuned = SavedPlan.objects.filter(run_id=run_id, device=device,
                                             kind=SavedPlan.TUNED).first()
            if tuned is not None:
                tuned.remove()
            saved = SavedPlan.objects.create(
                run_id=run_id, device=device, name=SavedPlan.TUNED_NAME, kind=SavedPlan.TUNED,
                plan=plan_file, keep_kinds=True, extra=extra,
                author=cls.objects.get(pk=pk).requested_by)
            cls.touch_run(run_id)
            from explorer import runs   # runs imports this module

            transaction.on_commit(lambda: runs.enqueue_saved_plan(saved.pk))


class TuneShard(Job):
    """One share of a tuning (TuneJob.hand_to_shares): an independent search with its own seed
    over the tuning's budget, on whichever compile worker takes it, so that a fleet of several
    workers scores several times the plans in the same time. Its answer (`result`: the
    share's summary, its best plan's file and that plan's extra fields) waits here until the
    last share joins them all (TuneJob.settle)."""
    VERB = "search this share of a tuning"

    tuning = models.ForeignKey(TuneJob, on_delete=models.CASCADE, related_name="shares")
    index = models.PositiveSmallIntegerField()
    result = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["tuning", "index"]

    def __str__(self) -> str:
        return f"share {self.index} of tuning {self.tuning_id} ({self.status})"

    @classmethod
    def finish(cls, pk: int, token: str, summary: dict, plan_file: dict, extra: dict) -> None:
        with transaction.atomic():
            cls._mark_done(pk, token, result={"summary": summary, "plan_file": plan_file,
                                              "extra": extra})
            TuneJob.settle(cls.objects.get(pk=pk).tuning_id)

    @classmethod
    def fail(cls, pk, error: str, error_stage: str, token: str | None = None) -> bool:
        with transaction.atomic():
            failed = super().fail(pk, error, error_stage, token)
            if failed:
                TuneJob.settle(cls.objects.get(pk=pk).tuning_id)
        return failed


class PlanGraph(models.Model):
    """The fusion view's object of one plan of a run (compiler/stages/graph_view.py
    `laid_out`: the op graph with the plan's kernels on it and its layout), as gzipped JSON
    (`pack`). The compile worker makes one per plan before it marks the run done, so the
    first look at a big plan need not import the upload and lay it out (3-4 s for a
    16,000-node step)."""
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="plan_graphs")
    device = models.CharField(max_length=20)
    strategy = models.CharField(max_length=STRATEGY_LENGTH)
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "device", "strategy"],
                                               name="one_graph_per_run_plan")]

    @staticmethod
    def pack(view: dict) -> bytes:
        """The view as `data` holds it."""
        return gzip.compress(json.dumps(view, separators=(",", ":")).encode(), compresslevel=6)

    @staticmethod
    def unpack(data) -> dict:
        """The view `data` holds (bytes, or the memoryview a query gives)."""
        return json.loads(gzip.decompress(bytes(data)))


class KernelSource(models.Model):
    """One generated kernel of a run: what its kernel page shows."""
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="kernel_sources")
    device = models.CharField(max_length=20)
    strategy = models.CharField(max_length=STRATEGY_LENGTH)
    kernel = models.CharField(max_length=200)
    function = models.CharField(max_length=200)
    source = models.TextField()
    ptx = models.TextField(blank=True)
    line_nodes = models.JSONField(default=dict)
    resources = models.JSONField(null=True, blank=True)
    # The CodeGen plans codegen weighed for this kernel, with their projections: the kernel
    # page's table. Kept here rather than in the run's artifact, which every run page reads.
    candidate_plans = models.JSONField(default=list)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "device", "strategy", "kernel"],
                                               name="one_source_per_run_kernel")]
        ordering = ["device", "strategy", "id"]

    def __str__(self) -> str:
        return f"{self.run_id} {self.device}/{self.strategy}/{self.kernel}"

    @classmethod
    def from_artifact(cls, run_id: str, key: str, source: dict) -> KernelSource:
        """A row from one entry of the artifact's "sources" ("<device>/<strategy>/<kernel>")."""
        device, strategy, kernel = key.split("/", 2)
        return cls(run_id=run_id, device=device, strategy=strategy, kernel=kernel,
                   function=source["function"], source=source["source"] or "",
                   ptx=source["ptx"] or "", line_nodes=source["line_nodes"],
                   resources=source["resources"],
                   candidate_plans=source.get("candidate_plans") or [])


# How fresh ApiToken.last_used is kept.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiToken(models.Model):
    """A key a script sends as `Authorization: Bearer <key>` to use the API as its user.

    Only the key's SHA-256 is stored, so a leaked database does not leak working keys; the key
    itself is shown once, when it is made (`create_api_token`). Keys carry 256 random bits, so
    looking a key up by its hash needs no salt and no constant-time comparison.

    A key has a scope, READ (GET requests only: a dashboard, a CI job that fetches results)
    or SUBMIT (everything its user may do through the API: submit, retry and delete runs,
    ask for measurements), and may expire: an expired key is refused as an unknown one is."""
    KEY_PREFIX = "fe_"
    READ, SUBMIT = "read", "submit"
    SCOPES = [(READ, "read: look only (GET)"),
              (SUBMIT, "submit: also submit, retry and delete runs, ask for measurements")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=10, choices=SCOPES, default=SUBMIT)
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField(null=True, blank=True)   # null: never
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.user} {self.name or self.pk}"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @property
    def expired(self) -> bool:
        return self.expires is not None and self.expires <= timezone.now()

    @classmethod
    def create_for(cls, user, name: str = "", scope: str = SUBMIT,
                   days: int | None = None) -> tuple[ApiToken, str]:
        """A new token for the user, valid for `days` (None: until revoked), and its key
        (which is not stored anywhere)."""
        if scope not in dict(cls.SCOPES):
            raise ValueError(f"scope must be one of {', '.join(dict(cls.SCOPES))}")
        key = cls.KEY_PREFIX + secrets.token_urlsafe(32)
        expires = timezone.now() + timedelta(days=days) if days else None
        token = cls.objects.create(user=user, name=name, key_hash=cls.hash_key(key),
                                   scope=scope, expires=expires)
        return token, key

    @classmethod
    def for_key(cls, key: str) -> ApiToken | None:
        """The token of the key, if it is live (not expired, its user active), recording
        that it was used; None otherwise."""
        from explorer.lookups import by_pk, row   # read by every API request: plain SQL

        token = row(cls, "key_hash", cls.hash_key(key))
        if token is None or token.expired:
            return None
        token.user = by_pk(cls._meta.get_field("user").related_model, token.user_id)
        if token.user is None or not token.user.is_active:
            return None
        now = timezone.now()
        # At most one write a minute per key: a script's every request would otherwise be a
        # database write, and SQLite serialises them.
        if token.last_used is None or now - token.last_used > LAST_USED_RESOLUTION:
            try:
                with transaction.atomic():
                    cls.objects.filter(pk=token.pk).update(last_used=now)
            except OperationalError:
                # The database held its write lock past the timeout (SQLite storing a big
                # upload on a loaded machine: seen in benchmarks/load.py). The record can
                # wait for the key's next request; the answer to this one does not.
                pass
        return token

    @classmethod
    def user_for_key(cls, key: str):
        """The active user a live key belongs to, or None."""
        token = cls.for_key(key)
        return token.user if token else None


class TagBaseline(models.Model):
    """The run a team measures a graph's later runs of a tag against (`main`: what the main
    branch's CI uploads): one per team, tag and graph, the graph known by its runs' title (a
    model's graph changes from commit to commit, so its digest cannot name it). The regression
    gate (`python -m compiler compare RUN --baseline tag:main`) and the team page read it."""
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="baselines")
    tag = models.CharField(max_length=50)
    graph_name = models.CharField(max_length=255)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="baseline_of")
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    set_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "tag", "graph_name"],
                                               name="one_baseline_per_team_tag_and_graph")]
        ordering = ["graph_name", "tag"]

    def __str__(self) -> str:
        return f"{self.team} {self.tag}: {self.graph_name} = {self.run_id}"

    @classmethod
    def mark(cls, team: Team, tag: str, run: Run, user) -> TagBaseline:
        """Make `run` the baseline of `tag` for its graph in `team`, replacing the one before.
        The run must be a finished run shared with the team (InputError otherwise): a baseline
        every member can open and compare with."""
        if not Run.shared_with(team).filter(pk=run.pk).exists():
            raise InputError(f"run {run.pk} is not shared with the team {team.name}: share it "
                             f"with the team (visibility team or public) first")
        if run.status != Run.DONE:
            raise InputError(f"run {run.pk} is {run.status}: only a finished run can be a "
                             f"baseline")
        baseline, _ = cls.objects.update_or_create(
            team=team, tag=tag, graph_name=run.title, defaults={"run": run, "set_by": user})
        return baseline

    @classmethod
    def of_run(cls, run: Run, tag: str) -> TagBaseline | None:
        """The baseline of `tag` for the graph of `run` in the run's team, if it has one."""
        if run.team_id is None:
            return None
        return cls.objects.filter(team_id=run.team_id, tag=tag, graph_name=run.title) \
            .select_related("run").first()
