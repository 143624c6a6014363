"""What happens to a run besides compiling: its graph stored once by content, an upload too big
to import in the request imported by the worker instead, a failed run retried and a run
deleted by its owner (pages and API), and a job stopped by a transient error queued again."""
import gzip
from datetime import timedelta
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from compiler.stages.pipeline import import_graph
from explorer.models import GraphBlob, KernelSource, Measurement, Run
from tests.explorer.access import SOFTMAX, AccessTestCase
from workers import tasks

BAD_HLO = (b"HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
           b"  ROOT r = f32[4] frobnicate(p)\n}\n")


class GraphStorageTests(AccessTestCase):
    def test_runs_of_the_same_bytes_share_one_blob_and_read_them_back(self):
        first = self.make_run("a" * 22)
        second = self.make_run("b" * 22, visibility=Run.PUBLIC)

        self.assertEqual(GraphBlob.objects.count(), 1)
        self.assertEqual(first.graph_id, second.graph_id)
        self.assertEqual(Run.objects.get(pk=second.pk).graph_bytes, SOFTMAX.read_bytes())
        self.assertEqual(GraphBlob.objects.get().size, len(SOFTMAX.read_bytes()))

    def test_the_runs_table_holds_no_graph_bytes(self):
        columns = {field.column for field in Run._meta.concrete_fields}

        self.assertNotIn("graph_bytes", columns)
        self.assertIn("graph_id", columns)

    def test_a_gzipped_upload_hashes_as_its_text_but_is_stored_as_sent(self):
        packed = gzip.compress(SOFTMAX.read_bytes())
        run = Run.objects.create(id="g" * 22, owner=self.owner, filename="softmax.hlo.gz",
                                 graph_bytes=packed, devices=["h100"], strategies=["xla"],
                                 compiler_version="test")
        plain = self.make_run("p" * 22)

        self.assertEqual(Run.objects.get(pk=run.pk).graph_bytes, packed)
        self.assertEqual(run.graph_sha256, plain.graph_sha256)
        self.assertNotEqual(run.graph_id, plain.graph_id)

    def test_deleting_a_run_keeps_a_shared_blob_and_drops_the_last_one(self):
        first = self.make_done_run("a" * 22)
        second = self.make_run("b" * 22)

        first.delete_with_graph()
        self.assertTrue(GraphBlob.objects.filter(pk=second.graph_id).exists())
        self.assertFalse(KernelSource.objects.filter(run_id=first.pk).exists())
        second.delete_with_graph()
        self.assertFalse(GraphBlob.objects.exists())


@mock.patch("explorer.runs.enqueue_compile")
class DeferredImportTests(AccessTestCase):
    """Above UPLOAD_INLINE_IMPORT_BYTES the request only sniffs the file; the worker imports it."""

    def upload(self, data: bytes, filename: str):
        self.client.force_login(self.owner)
        with self.captureOnCommitCallbacks(execute=True):
            return self.client.post(reverse("api-runs"), {
                "file": SimpleUploadedFile(filename, data), "devices": "h100",
                "strategies": "xla"})

    def test_a_small_bad_file_is_refused_in_the_request(self, enqueue):
        response = self.upload(BAD_HLO, "bad.hlo")

        self.assertEqual(response.status_code, 400)
        self.assertIn("bad.hlo:5:", response.json()["error"])
        self.assertFalse(Run.objects.exists())
        self.assertFalse(GraphBlob.objects.exists())

    @override_settings(UPLOAD_INLINE_IMPORT_BYTES=16)
    def test_a_big_bad_file_is_queued_and_fails_at_import_with_the_same_message(self, enqueue):
        with mock.patch("explorer.runs.import_graph", wraps=import_graph) as imported:
            response = self.upload(BAD_HLO, "bad.hlo")
        self.assertEqual(response.status_code, 201)
        imported.assert_not_called()     # the request never imported it
        run = Run.objects.get()
        enqueue.assert_called_once_with(run.pk)

        token = Run.claim(run.pk, "worker", 60, 3)
        progress = tasks._ProgressRecorder(Run, run.pk, token, 60, tasks.RUN_STAGES)
        outcome = tasks._work(Run, run.pk, token, progress, 600, lambda: tasks.compile_graph(
            run.graph_bytes, run.filename, ["h100"], ["xla"], progress=progress), 60, 3)

        run.refresh_from_db()
        self.assertEqual(outcome, Run.FAILED)
        self.assertEqual((run.status, run.error_stage), (Run.FAILED, "import"))
        self.assertIn("bad.hlo:5:", run.error)
        self.assertIn("frobnicate", run.error)

    @override_settings(UPLOAD_INLINE_IMPORT_BYTES=16)
    def test_a_big_file_of_no_known_format_is_still_refused_in_the_request(self, enqueue):
        response = self.upload(b"PK\x03\x04" + b"\0" * 4096, "model.bin")

        self.assertEqual(response.status_code, 400)
        self.assertIn("a zip archive", response.json()["error"])
        self.assertFalse(Run.objects.exists())

    @override_settings(UPLOAD_INLINE_IMPORT_BYTES=16)
    def test_corrupt_gzip_is_refused_in_the_request(self, enqueue):
        response = self.upload(b"\x1f\x8b\x08\x00" + b"\xff" * 64, "graph.hlo.gz")

        self.assertEqual(response.status_code, 400)
        self.assertIn("corrupt gzip", response.json()["error"])

    @override_settings(UPLOAD_INLINE_IMPORT_BYTES=1024)
    def test_a_gzip_bomb_within_the_limit_is_not_imported_by_the_request(self, enqueue):
        # 64 MiB of newlines after a header: a few kB packed, and far past the inline size.
        # The request inflates it as it streams in, a chunk at a time, only to hash it.
        bomb = gzip.compress(b"HloModule bomb\n" + b"\n" * (64 << 20))
        with mock.patch("explorer.runs.import_graph") as imported:
            response = self.upload(bomb, "bomb.hlo.gz")

        self.assertEqual(response.status_code, 201)
        imported.assert_not_called()


@mock.patch("explorer.runs.enqueue_compile")
class RetryAndDeleteTests(AccessTestCase):
    def failed_run(self, visibility=Run.TEAM) -> Run:
        run = self.make_run("f" * 22, visibility=visibility, status=Run.FAILED, attempts=3,
                            error="Every one of the 3 attempts ...", error_stage="build")
        return run

    def test_the_owner_retries_a_failed_run_from_its_page(self, enqueue):
        run = self.failed_run()
        self.client.force_login(self.owner)
        page = self.client.get(reverse("explorer-run", args=[run.pk]))
        self.assertContains(page, 'id="retry-form"')

        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post(reverse("explorer-run-retry", args=[run.pk]))

        self.assertRedirects(response, reverse("explorer-run", args=[run.pk]),
                             fetch_redirect_response=False)
        run.refresh_from_db()
        self.assertEqual((run.status, run.error, run.attempts), (Run.QUEUED, "", 0))
        enqueue.assert_called_once_with(run.pk)

    def test_a_failed_run_whose_upload_was_removed_says_so_and_cannot_be_retried(
            self, enqueue):
        run = self.failed_run()
        Run.objects.filter(pk=run.pk).update(finished=timezone.now() - timedelta(days=8))
        with self.settings(FAILED_RUN_UPLOADS_KEPT_S=7 * 24 * 3600):
            Run.remove_failed_uploads(timezone.now() - timedelta(days=7))
            self.client.force_login(self.owner)
            page = self.client.get(reverse("explorer-run", args=[run.pk]))
            source = self.client.get(reverse("explorer-run-source", args=[run.pk]))
            retried = self.client.post(reverse("explorer-run-retry", args=[run.pk]),
                                       follow=True)

        removed = (f"The uploaded graph\n      was removed on {timezone.now():%Y-%m-%d}: a "
                   "failed run keeps its upload for 7 days (FAILED_RUN_UPLOADS_KEPT_S)")
        self.assertContains(page, removed)
        self.assertContains(page, "upload the graph again to compile it")
        self.assertNotContains(page, 'id="retry-form"')
        self.assertContains(source, "The uploaded graph was removed on")
        self.assertContains(retried, "This run cannot be compiled again: the uploaded graph was "
                                     "removed on")
        self.assertEqual(Run.objects.get(pk=run.pk).status, Run.FAILED)
        enqueue.assert_not_called()

    def test_a_teammate_may_not_retry_and_sees_no_button(self, enqueue):
        run = self.failed_run()
        self.client.force_login(self.teammate)
        self.assertNotContains(self.client.get(reverse("explorer-run", args=[run.pk])),
                               'id="retry-form"')

        response = self.client.post(reverse("explorer-run-retry", args=[run.pk]))

        self.assertEqual(response.status_code, 403)
        self.assertEqual(Run.objects.get(pk=run.pk).status, Run.FAILED)
        enqueue.assert_not_called()

    def test_the_api_retries_a_failed_run_and_refuses_one_that_is_not(self, enqueue):
        run = self.failed_run()
        self.client.force_login(self.owner)
        url = reverse("api-run-retry", args=[run.pk])
        with self.captureOnCommitCallbacks(execute=True):
            response = self.client.post(url)

        self.assertEqual(response.status_code, 202)
        self.assertEqual(response.json()["status"], Run.QUEUED)
        enqueue.assert_called_once_with(run.pk)
        again = self.client.post(url)
        self.assertEqual(again.status_code, 409)
        self.assertIn("only a failed run", again.json()["error"])

    def test_the_owner_deletes_a_run_after_a_confirmation_page(self, enqueue):
        run = self.make_done_run("d" * 22)
        Measurement.objects.create(run=run, status=Measurement.DONE, result={})
        self.client.force_login(self.owner)
        url = reverse("explorer-run-delete", args=[run.pk])

        confirm = self.client.get(url)
        self.assertContains(confirm, "cannot be undone")
        self.assertTrue(Run.objects.filter(pk=run.pk).exists())
        response = self.client.post(url, follow=True)

        self.assertRedirects(response, reverse("explorer-history"))
        self.assertContains(response, "Deleted the run softmax")
        self.assertFalse(Run.objects.filter(pk=run.pk).exists())
        self.assertFalse(Measurement.objects.exists() or KernelSource.objects.exists()
                         or GraphBlob.objects.exists())
        self.assertEqual(self.client.get(reverse("explorer-run", args=[run.pk])).status_code,
                         404)

    def test_only_the_owner_deletes_through_the_api(self, enqueue):
        run = self.make_done_run("d" * 22, visibility=Run.PUBLIC)
        url = reverse("api-run", args=[run.pk])
        self.client.force_login(self.stranger)
        self.assertEqual(self.client.delete(url).status_code, 403)
        self.assertTrue(Run.objects.filter(pk=run.pk).exists())

        self.client.force_login(self.owner)
        self.assertEqual(self.client.delete(url).status_code, 204)
        self.assertEqual(self.client.get(url).status_code, 404)

    def test_a_run_one_may_not_see_cannot_be_deleted_or_retried_and_does_not_leak(self, enqueue):
        run = self.failed_run(visibility=Run.PRIVATE)
        self.client.force_login(self.stranger)

        for url in (reverse("explorer-run-delete", args=[run.pk]),
                    reverse("explorer-run-retry", args=[run.pk])):
            self.assertEqual(self.client.post(url).status_code, 404)
        self.assertEqual(self.client.delete(reverse("api-run", args=[run.pk])).status_code, 404)
        self.assertEqual(Run.objects.get(pk=run.pk).status, Run.FAILED)


class TransientErrorTests(AccessTestCase):
    """A locked database or a reset connection queues the job again instead of failing it."""

    def work(self, run: Run, error: Exception):
        token = Run.claim(run.pk, "worker", 60, 3)
        progress = tasks._ProgressRecorder(Run, run.pk, token, 60, tasks.RUN_STAGES)
        progress("explore", 0, 1)

        def compute():
            raise error

        with mock.patch.object(tasks.compile_run, "apply_async") as send:
            outcome = tasks._work(Run, run.pk, token, progress, 600, compute, 60, 3)
        return outcome, send

    def test_a_locked_database_queues_the_job_again_with_a_wait(self):
        run = self.make_run()
        outcome, send = self.work(run, OperationalError("database is locked"))

        run.refresh_from_db()
        self.assertEqual(outcome, "retrying")
        self.assertEqual((run.status, run.error, run.claim_token), (Run.QUEUED, "", ""))
        status = run.status_dict()
        self.assertTrue(status["interrupted"])
        self.assertIn("database is locked", status["stage_detail"])
        self.assertIn("will be retried", status["stage_detail"])
        send.assert_called_once()
        self.assertEqual(send.call_args.args[0], (run.pk,))
        self.assertGreater(send.call_args.kwargs["countdown"], 0)

    def test_the_job_fails_saying_so_once_its_attempts_are_spent(self):
        run = self.make_run()
        Run.objects.filter(pk=run.pk).update(attempts=2)   # this claim is the third
        outcome, send = self.work(run, ConnectionResetError("connection reset by peer"))

        run.refresh_from_db()
        self.assertEqual((outcome, run.status), (Run.FAILED, Run.FAILED))
        self.assertIn("transient error", run.error)
        self.assertNotIn("This is a bug", run.error)
        send.assert_not_called()

    def test_a_compiler_bug_is_still_reported_as_one(self):
        run = self.make_run()
        outcome, send = self.work(run, KeyError("oops"))

        run.refresh_from_db()
        self.assertEqual(outcome, Run.FAILED)
        self.assertIn("This is a bug", run.error)
        send.assert_not_called()

    def test_a_preview_the_database_refuses_is_skipped_and_the_run_completes(self):
        run = self.make_run()
        refused = mock.patch.object(Run, "store_preview",
                                    side_effect=OperationalError("database is locked"))
        with refused as store, self.assertLogs("workers.tasks", "WARNING") as logs:
            tasks.compile_run.apply((run.pk,))

        run.refresh_from_db()
        self.assertEqual(run.status, Run.DONE, run.error)
        # One preview per plan, each refused.
        self.assertEqual(store.call_count, len(run.devices) * len(run.strategies))
        self.assertIn("could not store a preview", logs.output[0])

    def test_a_running_job_whose_lease_ran_out_reads_as_interrupted(self):
        run = self.make_run()
        Run.claim(run.pk, "worker", -1, 3)     # a lease that ran out at once: the worker died
        status = Run.objects.get(pk=run.pk).status_dict()

        self.assertTrue(status["interrupted"])
        self.assertIn("will be retried", status["stage_detail"])
