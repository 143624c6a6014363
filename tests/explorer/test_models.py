"""Run access rules, permalink ids and submission (explorer.models, explorer.runs)."""
from datetime import datetime, timezone
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.test import override_settings

from compiler.errors import InputError
from compiler.version import compiler_version
from explorer import runs
from explorer.models import ClaimLost, Membership, Run, RunArtifact, SavedPlan, Team
from explorer.runs import run_id, submit_run

REPO_ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = (REPO_ROOT / "tests/data/hlo/softmax.hlo").read_bytes()

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    users = get_user_model().objects
    owner = users.create_user("owner")
    teammate = users.create_user("teammate")
    stranger = users.create_user("stranger")
    staff = users.create_user("staff", is_staff=True)
    team = Team.objects.create(name="compilers")
    Membership.objects.create(team=team, user=owner, role=Membership.ADMIN)
    Membership.objects.create(team=team, user=teammate)
    return {"owner": owner, "teammate": teammate, "stranger": stranger, "staff": staff,
            "anonymous": AnonymousUser(), "team": team}


@pytest.fixture
def enqueued(monkeypatch):
    """The ids submit_run enqueued (no broker in these tests)."""
    sent = []
    monkeypatch.setattr(runs, "enqueue_compile", sent.append)
    return sent


def make_run(people, visibility, team=True) -> Run:
    return Run.objects.create(id=visibility[:1] * 22, owner=people["owner"],
                              team=people["team"] if team else None, visibility=visibility,
                              filename="softmax.hlo", graph_bytes=SOFTMAX, devices=["h100"],
                              strategies=["xla"], compiler_version="test")


@pytest.mark.parametrize("visibility, viewers", [
    ("private", {"owner", "staff"}),
    ("team", {"owner", "teammate", "staff"}),
    ("public", {"owner", "teammate", "stranger", "staff", "anonymous"}),
])
def test_can_view_follows_visibility(people, visibility, viewers):
    run = make_run(people, visibility)
    allowed = {who for who in ("owner", "teammate", "stranger", "staff", "anonymous")
               if run.can_view(people[who])}
    assert allowed == viewers


def test_a_team_run_without_a_team_is_visible_to_its_owner_only(people):
    run = make_run(people, "team", team=False)
    assert run.can_view(people["owner"])
    assert not run.can_view(people["teammate"])


def test_a_run_is_called_by_its_name_else_by_its_uploaded_files_name(people):
    run = make_run(people, "private")
    assert run.title == "softmax.hlo"
    run.name = "my softmax"
    assert run.title == "my softmax"


def test_status_dict_has_what_the_status_page_polls(people):
    run = make_run(people, "private")
    assert run.status_dict() == {"status": "queued", "stage": "", "progress_done": 0,
                                 "progress_total": 0, "error": "", "error_stage": "",
                                 "finished": None, "stage_detail": "", "interrupted": False,
                                 "stages": []}


def test_a_run_knows_its_graphs_hash_and_a_gzipped_upload_is_the_same_graph(people):
    import gzip
    import hashlib

    plain = make_run(people, "private")
    packed = Run.objects.create(id="z" * 22, owner=people["owner"], filename="softmax.hlo.gz",
                                graph_bytes=gzip.compress(SOFTMAX), devices=["h100"],
                                strategies=["xla"], compiler_version="test")
    assert plain.graph_sha256 == packed.graph_sha256 == hashlib.sha256(SOFTMAX).hexdigest()
    assert Run.objects.filter(graph_sha256=plain.graph_sha256).count() == 2


def test_each_stage_shows_its_state_and_how_long_it_took_or_has_taken(people):
    run = make_run(people, "private")
    run.status, run.stage_detail = Run.RUNNING, "h100: compiling 12 distinct kernels to PTX"
    run.stages = [{"name": "import", "started": 100.0, "finished": 101.5},
                  {"name": "build", "started": 101.5, "finished": None},
                  {"name": "cost", "started": None, "finished": None}]
    assert run.stage_rows(now=110.0) == [
        {"name": "import", "state": "done", "seconds": 1.5},
        {"name": "build", "state": "running", "seconds": 8.5},
        {"name": "cost", "state": "waiting", "seconds": None}]
    assert run.status_dict()["stage_detail"] == "h100: compiling 12 distinct kernels to PTX"
    # The job failed in the build: that stage failed when the job did; no detail is left.
    run.status = Run.FAILED
    run.finished = datetime.fromtimestamp(104.0, tz=timezone.utc)
    assert [(row["state"], row["seconds"]) for row in run.stage_rows(now=110.0)] == \
        [("done", 1.5), ("failed", 2.5), ("waiting", None)]
    assert run.status_dict()["stage_detail"] == ""


def test_run_id_is_22_base62_characters_and_stable():
    first = run_id(SOFTMAX, ["h100", "a100"], ["xla", "cost"], "v1", 7)
    assert len(first) == 22 and first.isalnum()
    assert first == run_id(SOFTMAX, ["a100", "h100"], ["cost", "xla"], "v1", 7)


@pytest.mark.parametrize("change", [
    {"data": SOFTMAX + b"\n"}, {"devices": ["h100"]}, {"strategies": ["xla"]},
    {"version": "v2"}, {"owner_id": 8}, {"runtime": "stream"},
])
def test_run_id_changes_with_graph_options_version_and_owner(change):
    base = {"data": SOFTMAX, "devices": ["h100", "a100"], "strategies": ["xla", "cost"],
            "version": "v1", "owner_id": 7}
    assert run_id(**base) != run_id(**{**base, **change})


def test_run_id_depends_on_the_secret_key():
    before = run_id(SOFTMAX, ["h100"], ["xla"], "v1", 7)
    with override_settings(SECRET_KEY="another-secret"):
        assert run_id(SOFTMAX, ["h100"], ["xla"], "v1", 7) != before


def test_submit_run_stores_a_queued_run_and_enqueues_it_after_commit(
        people, enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = submit_run(people["owner"], SOFTMAX, "softmax.hlo", ["h100"], ["cost", "xla"],
                         name="softmax", tags=["demo"])
    assert enqueued == [run.id]
    run.refresh_from_db()
    assert run.status == Run.QUEUED
    assert run.strategies == ["xla", "cost"]  # exploration order: cost reuses the xla plan
    assert run.compiler_version == compiler_version()
    assert bytes(run.graph_bytes) == SOFTMAX and run.tags == ["demo"]


def test_submit_run_returns_the_existing_run_for_the_same_upload(
        people, enqueued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first = submit_run(people["owner"], SOFTMAX, "softmax.hlo", ["h100"], ["xla"])
        again = submit_run(people["owner"], SOFTMAX, "renamed.hlo", ["h100"], ["xla"],
                           name="another label")
        theirs = submit_run(people["stranger"], SOFTMAX, "softmax.hlo", ["h100"], ["xla"])
    assert again.pk == first.pk
    assert theirs.pk != first.pk
    assert Run.objects.count() == 2
    assert enqueued == [first.pk, theirs.pk]


def test_submit_run_rejects_a_bad_graph_and_stores_nothing(people, enqueued):
    with pytest.raises(InputError, match=r"^bad\.hlo:\d+"):
        submit_run(people["owner"], SOFTMAX[: len(SOFTMAX) // 2], "bad.hlo", ["h100"], ["xla"])
    assert not Run.objects.exists() and not enqueued


def test_submit_run_rejects_an_unknown_device(people, enqueued):
    with pytest.raises(InputError, match="unknown device 'tpu'"):
        submit_run(people["owner"], SOFTMAX, "softmax.hlo", ["tpu"], ["xla"])


def test_a_queued_run_is_claimed_once(people):
    run = make_run(people, "private")
    token = Run.claim(run.id, "worker-a", lease_s=60, max_attempts=3)
    assert token
    assert Run.claim(run.id, "worker-b", lease_s=60, max_attempts=3) is None
    run.refresh_from_db()
    assert (run.status, run.claimed_by, run.attempts) == (Run.RUNNING, "worker-a", 1)


def test_a_run_whose_lease_ran_out_is_claimed_again_and_the_old_claim_is_lost(people):
    run = make_run(people, "private")
    stale = Run.claim(run.id, "worker-a", lease_s=-1, max_attempts=3)
    fresh = Run.claim(run.id, "worker-b", lease_s=60, max_attempts=3)
    assert fresh and fresh != stale
    with pytest.raises(ClaimLost):
        Run.renew_lease(run.id, stale, 60, stage="codegen")
    with pytest.raises(ClaimLost):
        Run.finish(run.id, stale, {"graph": {}, "devices": {}, "sources": {}})
    assert not Run.fail(run.id, "late", "codegen", stale)
    run.refresh_from_db()
    assert (run.status, run.attempts) == (Run.RUNNING, 2)


def test_a_run_that_used_up_its_attempts_fails_instead_of_being_claimed(people):
    run = make_run(people, "private")
    Run.claim(run.id, "worker-a", lease_s=60, max_attempts=1)
    Run.renew_lease(run.id, Run.objects.get(pk=run.id).claim_token, -1, stage="build")
    assert Run.claim(run.id, "worker-b", lease_s=60, max_attempts=1) is None
    run.refresh_from_db()
    assert (run.status, run.error_stage) == (Run.FAILED, "build")
    assert "Every one of the 1 attempts" in run.error


def test_a_done_run_is_not_claimed_again(people):
    run = make_run(people, "private")
    token = Run.claim(run.id, "worker-a", lease_s=60, max_attempts=3)
    Run.finish(run.id, token, {"graph": {}, "devices": {}, "sources": {
        "h100/xla/fusion.1": {"function": "xla_fusion_1", "source": "src", "ptx": None,
                              "line_nodes": {"3": ["add.1"]}, "resources": None}}})
    assert Run.claim(run.id, "worker-b", lease_s=-1, max_attempts=3) is None
    run.refresh_from_db()
    assert run.status == Run.DONE and run.artifact == {"graph": {}, "devices": {}}
    source = run.kernel_sources.get()
    assert (source.device, source.strategy, source.kernel) == ("h100", "xla", "fusion.1")


def test_an_artifact_lives_outside_the_runs_table_and_goes_with_its_run(people):
    run = make_run(people, "private")
    assert Run.objects.get(pk=run.pk).artifact is None
    run.artifact = {"graph": {"nodes": 3}, "devices": {}}
    run.save()

    columns = {field.column for field in Run._meta.concrete_fields}
    assert "artifact" not in columns
    assert Run.objects.get(pk=run.pk).artifact == {"graph": {"nodes": 3}, "devices": {}}
    assert RunArtifact.objects.filter(run_id=run.pk).count() == 1
    run.delete_with_graph()
    assert not RunArtifact.objects.exists()


# A preview as compile_graph hands it out, and the artifact that follows it.
PREVIEW = {"compiler_version": "v", "graph": {"nodes": 3}, "explored": {"plans": 1, "of": 2},
           "devices": {"h100": {"strategies": {"unfused": {"kernels": [], "total": {}}}}}}
ARTIFACT = {"compiler_version": "v", "graph": {"nodes": 3}, "devices": {}, "sources": {}}


def test_a_compiling_run_shows_its_preview_and_never_as_its_artifact(people):
    run = make_run(people, "private")
    token = Run.claim(run.id, "worker-a", lease_s=60, max_attempts=3)
    Run.store_preview(run.id, token, 60, PREVIEW)

    stored = Run.objects.get(pk=run.pk)
    assert stored.preview["explored"] == {"plans": 1, "of": 2}
    assert stored.preview["devices"] == PREVIEW["devices"]
    assert stored.artifact is None
    Run.finish(run.id, token, dict(ARTIFACT))
    done = Run.objects.get(pk=run.pk)
    assert done.preview is None
    assert done.artifact == {"compiler_version": "v", "graph": {"nodes": 3}, "devices": {}}


def test_a_preview_is_stored_only_while_the_claim_holds(people):
    run = make_run(people, "private")
    stale = Run.claim(run.id, "worker-a", lease_s=-1, max_attempts=3)
    Run.claim(run.id, "worker-b", lease_s=60, max_attempts=3)
    with pytest.raises(ClaimLost):
        Run.store_preview(run.id, stale, 60, PREVIEW)
    assert not RunArtifact.objects.exists()


def test_a_failed_run_keeps_no_preview(people):
    run = make_run(people, "private")
    token = Run.claim(run.id, "worker-a", lease_s=60, max_attempts=3)
    Run.store_preview(run.id, token, 60, PREVIEW)
    assert Run.fail(run.id, "a bug", "build", token)
    assert not RunArtifact.objects.exists()
    assert Run.objects.get(pk=run.pk).preview is None


def test_a_new_attempt_starts_without_the_last_ones_preview(people):
    run = make_run(people, "private")
    stale = Run.claim(run.id, "worker-a", lease_s=-1, max_attempts=3)
    Run.store_preview(run.id, stale, -1, PREVIEW)
    assert Run.claim(run.id, "worker-b", lease_s=60, max_attempts=3)
    assert Run.objects.get(pk=run.pk).preview is None
    assert not RunArtifact.objects.exists()


def test_a_run_failed_for_want_of_attempts_keeps_no_preview(people):
    run = make_run(people, "private")
    token = Run.claim(run.id, "worker-a", lease_s=60, max_attempts=1)
    Run.store_preview(run.id, token, -1, PREVIEW)
    assert Run.claim(run.id, "worker-b", lease_s=60, max_attempts=1) is None
    assert Run.objects.get(pk=run.pk).status == Run.FAILED
    assert not RunArtifact.objects.exists()


def test_ending_a_run_leaves_another_runs_preview_and_a_done_runs_artifact_alone(people):
    done, compiling = make_run(people, "private"), make_run(people, "team")
    token = Run.claim(done.id, "worker-a", lease_s=60, max_attempts=3)
    Run.finish(done.id, token, dict(ARTIFACT))
    other = Run.claim(compiling.id, "worker-a", lease_s=60, max_attempts=3)
    Run.store_preview(compiling.id, other, 60, PREVIEW)
    assert not Run.fail(done.id, "late", "cost")
    assert Run.objects.get(pk=done.pk).artifact is not None
    assert Run.objects.get(pk=compiling.pk).preview is not None


def test_a_saved_plan_lands_on_an_artifact_never_on_a_preview(people):
    """A run compiled again shows a preview meanwhile; a saved plan finishing then is compiled
    again onto the new artifact (Run.finish queues it), never written into the preview."""
    run = make_run(people, "private")
    token = Run.claim(run.id, "worker-a", lease_s=60, max_attempts=3)
    Run.store_preview(run.id, token, 60, PREVIEW)
    saved = SavedPlan.objects.create(run=run, device="h100", name="mine", plan={})
    plan_token = SavedPlan.claim(saved.pk, "worker-b", lease_s=60, max_attempts=3)
    entry = {"kernels": [], "total": {"sol_us": 1.0}}

    with pytest.raises(ClaimLost):
        SavedPlan.finish(saved.pk, plan_token, run.id, entry, {}, None)
    assert Run.objects.get(pk=run.pk).preview["devices"] == PREVIEW["devices"]


@pytest.fixture
def latest_schema_after():
    """Migrates the test database back to the latest migrations once a migration test that
    took it to an older state is over: the next tests of the process expect today's tables."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_every_artifact_into_its_own_table(latest_schema_after):
    """Migration 0012 on a database of 0011: each done run's artifact becomes a RunArtifact
    row, a run without one gets none."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("explorer", "0011_invites_and_signup_attempts")], \
        [("explorer", "0012_run_artifact_table")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    owner = old.get_model("auth", "User").objects.create(username="owner")
    blob = old.get_model("explorer", "GraphBlob").objects.create(sha256="0" * 64, size=1,
                                                                  data=b"x")
    OldRun = old.get_model("explorer", "Run")
    for pk, artifact in (("d" * 22, {"devices": {"h100": {}}}), ("q" * 22, None)):
        OldRun.objects.create(id=pk, owner=owner, graph=blob, filename="a.hlo",
                              compiler_version="test", artifact=artifact)

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    moved = new.get_model("explorer", "RunArtifact").objects.values_list("run_id", "data")
    assert list(moved) == [("d" * 22, {"devices": {"h100": {}}})]


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_every_graph_blob_into_a_file_named_by_its_sha256(
        latest_schema_after):
    """Migration 0014 on a database of 0013: each GraphBlob row's bytes become the graph
    store's file of their SHA-256 (ab/cd/abcd...), and the rows keep no bytes; reversed, the
    bytes come back into the rows."""
    import hashlib

    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from explorer.graph_store import graph_storage

    before, after = [("explorer", "0013_run_saved")], [("explorer", "0014_graph_files")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    owner = old.get_model("auth", "User").objects.create(username="owner")
    contents = [SOFTMAX, b"HloModule other\n" + bytes(range(256)) * 4]
    keys = [hashlib.sha256(data).hexdigest() for data in contents]
    for key, data in zip(keys, contents):
        blob = old.get_model("explorer", "GraphBlob").objects.create(sha256=key,
                                                                      size=len(data), data=data)
        old.get_model("explorer", "Run").objects.create(
            id=key[:22], owner=owner, graph=blob, filename="a.hlo", compiler_version="test")

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    storage = graph_storage()
    for key, data in zip(keys, contents):
        with storage.open(f"{key[:2]}/{key[2:4]}/{key}", "rb") as file:
            assert file.read() == data
    new = executor.loader.project_state(after).apps
    assert "data" not in {field.name for field in new.get_model("explorer", "GraphBlob")
                          ._meta.get_fields()}
    assert not storage.listdir("tmp")[1], "a temporary file was left behind"

    executor = MigrationExecutor(connection)
    executor.migrate(before)
    restored = executor.loader.project_state(before).apps.get_model("explorer", "GraphBlob")
    assert {key: bytes(data) for key, data in restored.objects.values_list("pk", "data")} \
        == dict(zip(keys, contents))
