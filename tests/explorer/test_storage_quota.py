"""Storage quotas (explorer/runs.py check_quota): what a user's runs, and a team's, may hold in
the graph store; each file counted once per user (and per team), a run whose upload was removed
holding none. The upload form's, the settings form's and the API keys page's sides are in
their views' tests; the JSON API's answer (413) is here, since the API only passes the error on.
"""
from datetime import timedelta
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from explorer.models import ApiToken, GraphBlob, Run
from explorer.runs import QuotaExceeded, check_quota, storage_used, submit, team_storage_used
from tests.explorer.access import SOFTMAX, AccessTestCase
from tests.explorer.test_graph_store import big_hlo, stored_path

SIZE = len(SOFTMAX.read_bytes())


@mock.patch("explorer.runs.enqueue_compile")
class StorageQuotaTests(AccessTestCase):
    def submit(self, data: bytes, strategies=("xla",), owner=None, **labels):
        return submit(owner or self.owner, data, "graph.hlo", ["h100"], list(strategies),
                      **labels)

    def test_a_file_counts_once_per_user_however_many_runs_use_it(self, enqueue):
        self.submit(SOFTMAX.read_bytes(), ("xla",))
        self.submit(SOFTMAX.read_bytes(), ("cost",))
        self.submit(SOFTMAX.read_bytes(), ("xla",), owner=self.teammate)

        self.assertEqual(Run.objects.count(), 3)
        self.assertEqual((storage_used(self.owner), storage_used(self.teammate)), (SIZE, SIZE))
        self.assertEqual(storage_used(self.stranger), 0)

    @override_settings(STORAGE_QUOTA_BYTES=SIZE)
    def test_an_upload_past_the_users_quota_is_refused_and_nothing_is_stored(self, enqueue):
        self.submit(SOFTMAX.read_bytes())
        other = big_hlo(4096, "past the quota")

        with self.assertRaises(QuotaExceeded) as refused:
            self.submit(other)
        self.assertIn(f"your runs' uploads take 1.5 KB ({SIZE:,} bytes) of your 1.5 KB",
                      str(refused.exception))
        self.assertIn("STORAGE_QUOTA_BYTES", str(refused.exception))
        self.assertIn("and this file is 4.0 KB (4,", str(refused.exception))
        self.assertTrue(str(refused.exception).startswith("graph.hlo: storage quota: "))
        self.assertFalse(stored_path(other).exists())
        self.assertEqual(Run.objects.count(), 1)
        # The same bytes again, for another run, take no more room.
        self.submit(SOFTMAX.read_bytes(), ("cost",))

    def test_a_file_another_user_stored_counts_for_this_one_too(self, enqueue):
        self.submit(big_hlo(4096, "the teammate's"), owner=self.teammate)

        with self.settings(STORAGE_QUOTA_BYTES=SIZE):
            self.submit(SOFTMAX.read_bytes())
            with self.assertRaises(QuotaExceeded):
                self.submit(big_hlo(4096, "the teammate's"))

    @override_settings(TEAM_STORAGE_QUOTA_BYTES=SIZE)
    def test_runs_shared_with_a_team_count_for_the_team_too(self, enqueue):
        self.submit(SOFTMAX.read_bytes(), visibility=Run.TEAM, team=self.team)
        self.submit(big_hlo(4096, "kept private"), visibility=Run.PRIVATE, team=self.team)
        self.assertEqual(team_storage_used(self.team), SIZE)   # the private run is not the team's

        with self.assertRaises(QuotaExceeded) as refused:
            self.submit(big_hlo(4096, "for the team"), owner=self.teammate,
                        visibility=Run.PUBLIC, team=self.team)
        self.assertIn("the runs shared with the team kernels take", str(refused.exception))
        self.assertIn("TEAM_STORAGE_QUOTA_BYTES", str(refused.exception))
        self.submit(big_hlo(4096, "for the team"), owner=self.teammate)   # not shared: fits

    @override_settings(STORAGE_QUOTA_BYTES=SIZE)
    def test_a_run_whose_upload_was_removed_holds_none(self, enqueue):
        run = self.make_run(status=Run.FAILED)
        Run.objects.filter(pk=run.pk).update(finished=timezone.now() - timedelta(days=30))
        self.assertEqual(storage_used(self.owner), SIZE)
        with self.assertRaises(QuotaExceeded):
            check_quota(self.owner, "f" * 64, SIZE, "graph.hlo")

        Run.remove_failed_uploads(timezone.now())
        self.assertEqual(storage_used(self.owner), 0)
        check_quota(self.owner, "f" * 64, SIZE, "graph.hlo")

    @override_settings(STORAGE_QUOTA_BYTES=SIZE - 1)
    def test_the_api_answers_413_with_the_quotas_message(self, enqueue):
        key = ApiToken.create_for(self.owner, "ci", ApiToken.SUBMIT)[1]
        response = self.client.post(
            reverse("api-runs"), {"file": SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes()),
                                  "devices": "h100", "strategies": "xla"},
            headers={"Authorization": f"Bearer {key}"})

        self.assertEqual(response.status_code, 413)
        self.assertIn("softmax.hlo: storage quota: your runs' uploads take 0 bytes",
                      response.json()["error"])
        self.assertFalse(Run.objects.exists() or GraphBlob.objects.exists())
