"""Uploaded graphs' files (explorer/graph_store.py): streamed to disk by the upload handler,
stored once per content under their SHA-256, read back by workers, removed with their last run.

The store is a folder of this test process's own (tests/settings.py). Files stay there across
tests (a test's database rows are rolled back, its files are not), so the tests look for the
files of their own bytes rather than count the store's.
"""
import gzip
import hashlib
import io
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from unittest import mock

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from explorer import graph_store
from explorer.graph_store import GraphUnavailable, StagedFile
from explorer.models import GraphBlob, Run
from tests.explorer.access import SOFTMAX, AccessTestCase
from tests.explorer.test_upload_bundles import exported_with_external_data, zipped
from workers import tasks

API = reverse("api-runs")
FORM = reverse("explorer-index")


def big_hlo(size: int, seed: str = "") -> bytes:
    """softmax.hlo padded with comment lines to `size` bytes: an HLO file far past the size
    Django keeps uploads in memory (FILE_UPLOAD_MAX_MEMORY_SIZE) and the size the request
    imports (UPLOAD_INLINE_IMPORT_BYTES), so the request only sniffs it."""
    text = SOFTMAX.read_bytes() + f"// {seed}\n".encode()
    line = b"// " + b"x" * 60 + b"\n"
    return text + line * ((size - len(text)) // len(line) + 1)


def stored_path(data: bytes) -> Path:
    sha256 = hashlib.sha256(data).hexdigest()
    return Path(settings.GRAPH_STORE_DIR) / sha256[:2] / sha256[2:4] / sha256


def temporary_files() -> list[Path]:
    return list((Path(settings.GRAPH_STORE_DIR) / graph_store.TEMP_FOLDER).glob("*"))


def fail_whole_read(*args):
    raise AssertionError("the web request read a whole uploaded file into memory")


@mock.patch("explorer.runs.enqueue_compile")
class StreamedUploadTests(AccessTestCase):
    def setUp(self):
        self.client.force_login(self.owner)

    def api(self, *files, **fields):
        with self.captureOnCommitCallbacks(execute=True):
            return self.client.post(API, {
                "file": [SimpleUploadedFile(name, data) for name, data in files],
                "devices": "h100", "strategies": "xla", **fields})

    def form(self, name: str, data: bytes):
        return self.client.post(FORM, {
            "graph_file": SimpleUploadedFile(name, data), "devices": ["h100"],
            "strategies": ["xla"], "visibility": "private"})

    def assert_stored(self, run: Run, data: bytes):
        """The run's file is in the store under the SHA-256 of `data`, holding `data`."""
        path = stored_path(data)
        self.assertEqual(run.graph_id, path.name)
        self.assertEqual(path.read_bytes(), data)
        self.assertEqual(GraphBlob.objects.get(pk=path.name).size, len(data))
        self.assertEqual(temporary_files(), [])

    def test_a_big_form_upload_is_streamed_into_the_store_under_its_sha256(self, enqueue):
        data = big_hlo(settings.FILE_UPLOAD_MAX_MEMORY_SIZE + (1 << 20), "form")
        with mock.patch.object(StagedFile, "read", property(fail_whole_read)):
            response = self.form("big.hlo", data)

        run = Run.objects.get()
        self.assertRedirects(response, reverse("explorer-run", args=[run.pk]),
                             fetch_redirect_response=False)
        self.assert_stored(run, data)
        self.assertEqual(run.graph_sha256, hashlib.sha256(data).hexdigest())
        self.assertEqual(run.graph_bytes, data)

    def test_a_big_api_upload_is_streamed_into_the_store_under_its_sha256(self, enqueue):
        data = big_hlo(settings.FILE_UPLOAD_MAX_MEMORY_SIZE + (1 << 20), "api")
        with mock.patch.object(StagedFile, "read", property(fail_whole_read)):
            response = self.api(("big.hlo", data))

        self.assertEqual(response.status_code, 201, response.content)
        run = Run.objects.get(pk=response.json()["id"])
        self.assert_stored(run, data)
        enqueue.assert_called_once_with(run.pk)

    def test_an_upload_past_the_limit_is_refused_naming_it_and_nothing_is_stored(self, enqueue):
        data = big_hlo(3 << 20, "too big")
        with mock.patch.dict("os.environ", {"FUSION_EXPLORER_MAX_INPUT_BYTES": "2MiB"}):
            api = self.api(("big.hlo", data))
            form = self.form("big.hlo", data)

        self.assertEqual(api.status_code, 413)
        self.assertIn("the limit is 2 MiB (FUSION_EXPLORER_MAX_INPUT_BYTES)", api.json()["error"])
        self.assertEqual(form.status_code, 400)
        self.assertIn("the limit is 2 MiB", str(form.context["form"].errors["graph_file"]))
        self.assertFalse(Run.objects.exists() or GraphBlob.objects.exists())
        self.assertFalse(stored_path(data).exists())
        self.assertEqual(temporary_files(), [])

    def test_a_gzip_upload_past_the_limit_once_decompressed_is_refused(self, enqueue):
        bomb = gzip.compress(b"HloModule bomb\n" + b"\n" * (4 << 20))
        with mock.patch.dict("os.environ", {"FUSION_EXPLORER_MAX_INPUT_BYTES": "1MiB"}):
            response = self.api(("bomb.hlo.gz", bomb))

        self.assertEqual(response.status_code, 413)
        self.assertIn("decompressed size exceeds the limit", response.json()["error"])
        self.assertFalse(stored_path(bomb).exists())
        self.assertEqual(temporary_files(), [])

    def test_a_gzip_upload_is_stored_as_sent_and_is_the_same_graph_as_its_text(self, enqueue):
        text = big_hlo(3 << 20, "gzip")
        packed = gzip.compress(text)
        plain = Run.objects.get(pk=self.api(("big.hlo", text)).json()["id"])
        zipped_run = Run.objects.get(pk=self.api(("big.hlo.gz", packed)).json()["id"])

        self.assert_stored(zipped_run, packed)
        self.assertEqual(zipped_run.graph_sha256, hashlib.sha256(text).hexdigest())
        self.assertEqual(zipped_run.graph_sha256, plain.graph_sha256)
        self.assertNotEqual(zipped_run.pk, plain.pk)

    def test_the_same_bytes_uploaded_twice_are_one_file(self, enqueue):
        data = big_hlo(3 << 20, "twice")
        mine = self.api(("big.hlo", data))
        self.client.force_login(self.stranger)
        theirs = self.api(("copy.hlo", data))

        self.assertEqual((mine.status_code, theirs.status_code), (201, 201))
        self.assertEqual(Run.objects.count(), 2)
        self.assertEqual(GraphBlob.objects.count(), 1)
        self.assertEqual(list(stored_path(data).parent.glob("*")), [stored_path(data)])
        self.assertEqual(temporary_files(), [])

    def test_a_graph_deleted_as_it_is_uploaded_again_is_a_message_not_an_error_page(self,
                                                                                    enqueue):
        """PostgreSQL refuses the run's row when its graph's row went with another run deleted
        at that moment (an IntegrityError, and no run of that id to answer with)."""
        from django.db import IntegrityError

        with mock.patch.object(Run, "save", side_effect=IntegrityError("graph row gone")):
            response = self.api(("big.hlo", big_hlo(1 << 20, "race")))

        self.assertEqual(response.status_code, 400)
        self.assertIn("upload it again", response.json()["error"])
        self.assertEqual(Run.objects.count(), 0)

    def test_deleting_runs_removes_the_file_with_the_last_one(self, enqueue):
        data = big_hlo(1 << 20, "delete")
        first = Run.objects.get(pk=self.api(("big.hlo", data)).json()["id"])
        second = Run.objects.get(pk=self.api(("big.hlo", data), devices="a100").json()["id"])

        self.assertEqual(self.client.delete(reverse("api-run", args=[first.pk])).status_code,
                         204)
        self.assertTrue(stored_path(data).exists())
        second.delete_with_graph()
        self.assertFalse(stored_path(data).exists())
        self.assertFalse(GraphBlob.objects.exists())

    def test_an_onnx_model_is_stored_without_its_data_files(self, enqueue):
        folder = Path(self.enterContext(tempfile.TemporaryDirectory()))
        model, data = exported_with_external_data(folder)
        separate = self.api(("model.onnx", model), ("model.onnx.data", data))
        bundle = self.api(("export.zip", zipped({"model.onnx": model, "model.onnx.data": data})),
                          devices="a100")

        self.assertEqual((separate.status_code, bundle.status_code), (201, 201))
        for response in (separate, bundle):
            self.assert_stored(Run.objects.get(pk=response.json()["id"]), model)
        self.assertFalse(stored_path(data).exists())
        self.assertEqual(GraphBlob.objects.count(), 1)

    def test_an_upload_cut_off_mid_file_leaves_no_temporary_file(self, enqueue):
        boundary = "cut-off-boundary"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                "filename=\"big.hlo\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                ).encode() + big_hlo(2 << 20, "cut off")   # no closing boundary: cut off
        response = self.client.generic("POST", API, body,
                                       content_type=f"multipart/form-data; boundary={boundary}")

        self.assertEqual(response.status_code, 400)
        self.assertFalse(Run.objects.exists())
        self.assertEqual(temporary_files(), [])


@mock.patch("explorer.runs.enqueue_compile")
class MissingFileTests(AccessTestCase):
    """A run whose file the store lost (a folder restored without it) or holds damaged."""

    def compile_now(self, run: Run) -> str:
        token = Run.claim(run.pk, "worker", 60, 3)
        progress = tasks._ProgressRecorder(Run, run.pk, token, 60, tasks.RUN_STAGES)
        return tasks._work(Run, run.pk, token, progress, 600, lambda: tasks.compile_graph(
            run.graph_bytes, run.filename, ["h100"], ["xla"], progress=progress), 60, 3)

    def test_a_run_whose_file_is_missing_fails_saying_to_upload_again(self, enqueue):
        run = self.make_run()
        stored_path(SOFTMAX.read_bytes()).unlink()

        self.assertEqual(self.compile_now(run), Run.FAILED)
        run.refresh_from_db()
        self.assertEqual((run.status, run.error_stage), (Run.FAILED, "import"))
        self.assertIn("missing from the graph store", run.error)
        self.assertIn("upload the graph again", run.error)

    def test_a_damaged_file_is_not_compiled(self, enqueue):
        run = self.make_run()
        stored_path(SOFTMAX.read_bytes()).write_bytes(b"HloModule truncated")

        with self.assertRaisesMessage(GraphUnavailable, "is damaged"):
            Run.objects.get(pk=run.pk).graph_bytes
        self.assertEqual(self.compile_now(run), Run.FAILED)

    def test_uploading_the_bytes_again_puts_the_file_back(self, enqueue):
        self.make_run()
        path = stored_path(SOFTMAX.read_bytes())
        path.unlink()
        self.make_run("s" * 22)

        self.assertEqual(path.read_bytes(), SOFTMAX.read_bytes())

    def test_the_source_page_of_a_run_without_its_file_says_so(self, enqueue):
        run = self.make_done_run()
        stored_path(SOFTMAX.read_bytes()).unlink()
        self.client.force_login(self.owner)

        response = self.client.get(reverse("explorer-run-source", args=[run.pk]))
        self.assertContains(response, "missing from the graph store", status_code=400)


class StagedFileTests(AccessTestCase):
    def test_a_zip_bundle_is_kept_whole_past_the_limit_for_its_model_to_be_taken_out(self):
        with mock.patch.dict("os.environ", {"FUSION_EXPLORER_MAX_INPUT_BYTES": "1KiB"}):
            bundle = StagedFile("export.zip")
            plain = StagedFile("graph.hlo")
            for staged in (bundle, plain):
                staged.write(b"\0" * 4096)
                staged.finish()
        self.assertEqual((bundle.size, Path(bundle.path).stat().st_size), (4096, 4096))
        bundle.check()
        self.assertIsNone(plain.path)
        with self.assertRaisesMessage(Exception, "the limit is 1 KiB"):
            plain.check()
        bundle.close()
        plain.close()
        self.assertEqual(temporary_files(), [])

    def test_the_graph_digest_of_a_gzip_upload_does_not_depend_on_its_chunks(self):
        text = big_hlo(1 << 20, "chunks")
        packed = gzip.compress(text)
        staged = StagedFile("g.hlo.gz")
        for start in range(0, len(packed), 1000):
            staged.write(packed[start:start + 1000])
        staged.finish()

        self.assertEqual(staged.graph_sha256, hashlib.sha256(text).hexdigest())
        self.assertEqual(staged.sha256, hashlib.sha256(packed).hexdigest())
        staged.close()


class PruneTests(AccessTestCase):
    def test_it_removes_what_no_run_needs_and_nothing_younger_than_the_grace(self):
        kept = self.make_run()
        leaver = User.objects.create_user("leaver")
        orphaned = big_hlo(4096, "a deleted user's")
        Run.objects.create(id="o" * 22, owner=leaver, filename="g.hlo", graph_bytes=orphaned,
                           compiler_version="test")
        leaver.delete()                         # their runs go; their graph's row stays
        stray = stored_path(b"stored by a request that then failed")
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_bytes(b"stored by a request that then failed")
        temporary = Path(graph_store.temp_folder()) / "upload-cut-off.part"
        temporary.write_bytes(b"half an upload")
        fresh = Path(graph_store.temp_folder()) / "upload-in-progress.part"
        fresh.write_bytes(b"an upload being received")
        day_old = time.time() - 25 * 3600
        os.utime(temporary, (day_old, day_old))

        with mock.patch("sys.stdout"):
            call_command("prune_graphs", "--grace-hours", "0")

        self.assertFalse(GraphBlob.objects.filter(pk=stored_path(orphaned).name).exists())
        self.assertFalse(stored_path(orphaned).exists() or stray.exists()
                         or temporary.exists())
        self.assertTrue(fresh.exists())
        self.assertEqual(Run.objects.get(pk=kept.pk).graph_bytes, SOFTMAX.read_bytes())
        fresh.unlink()

    def test_a_file_younger_than_the_grace_is_left_alone(self):
        stray = stored_path(b"being stored right now")
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_bytes(b"being stored right now")

        self.assertEqual(graph_store.prune()["files"], 0)
        self.assertTrue(stray.exists())
        stray.unlink()


@override_settings(FAILED_RUN_UPLOADS_KEPT_S=7 * 24 * 3600)
class FailedRunUploadTests(AccessTestCase):
    """A failed run lets go of its upload FAILED_RUN_UPLOADS_KEPT_S after it failed: the run
    stays, the file goes with the last run that holds it."""

    def failed(self, run_id: str, days_ago: float, data: bytes | None = None) -> Run:
        run = Run.objects.create(id=run_id, owner=self.owner, status=Run.FAILED,
                                 error="ptxas died", error_stage="build", filename="g.hlo",
                                 graph_bytes=data or SOFTMAX.read_bytes(),
                                 compiler_version="test")
        Run.objects.filter(pk=run.pk).update(
            finished=timezone.now() - timedelta(days=days_ago))
        return run

    def test_a_run_failed_longer_ago_lets_go_of_its_upload_and_its_file_goes(self):
        data = big_hlo(4096, "failed long ago")
        run = self.failed("f" * 22, days_ago=8, data=data)

        self.assertEqual(graph_store.prune_failed_uploads(), [run.pk])

        run.refresh_from_db()
        self.assertEqual((run.status, run.graph_id), (Run.FAILED, None))
        self.assertIsNotNone(run.upload_removed)
        self.assertFalse(stored_path(data).exists())
        self.assertFalse(GraphBlob.objects.filter(pk=stored_path(data).name).exists())
        with self.assertRaisesMessage(GraphUnavailable, "the uploaded graph was removed on "):
            run.graph_bytes
        self.assertEqual(graph_store.prune_failed_uploads(), [])

    def test_a_file_another_run_holds_stays_with_it(self):
        done = self.make_done_run("d" * 22)
        failed = self.failed("f" * 22, days_ago=30)

        graph_store.prune_failed_uploads()

        failed.refresh_from_db()
        self.assertIsNone(failed.graph_id)
        self.assertTrue(stored_path(SOFTMAX.read_bytes()).exists())
        self.assertEqual(Run.objects.get(pk=done.pk).graph_bytes, SOFTMAX.read_bytes())

    def test_recent_failures_and_runs_that_did_not_fail_keep_their_uploads(self):
        recent = self.failed("f" * 22, days_ago=6)
        done = self.make_done_run("d" * 22)
        queued = self.make_run("q" * 22)
        Run.objects.filter(pk__in=[done.pk, queued.pk]).update(
            finished=timezone.now() - timedelta(days=300))

        self.assertEqual(graph_store.prune_failed_uploads(), [])
        self.assertEqual(Run.objects.filter(graph__isnull=True).count(), 0)
        self.assertEqual(Run.objects.get(pk=recent.pk).graph_bytes, SOFTMAX.read_bytes())

    def test_prune_graphs_does_it_too_and_says_how_many(self):
        self.failed("f" * 22, days_ago=8, data=big_hlo(4096, "pruned by the command"))
        output = io.StringIO()

        call_command("prune_graphs", stdout=output)

        self.assertIn("1 failed runs' uploads", output.getvalue())
        self.assertIsNone(Run.objects.get(pk="f" * 22).graph_id)
