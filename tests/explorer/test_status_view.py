"""The run status endpoint at /r/<id>/status.json (explorer-run-status)."""
from django.urls import reverse

from explorer.models import Run
from tests.explorer.access import AccessTestCase


class StatusViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.team_run = cls.make_run("s" * 22, Run.TEAM, Run.RUNNING, stage="codegen",
                               progress_done=3, progress_total=7)
        cls.url = reverse("explorer-run-status", args=[cls.team_run.pk])

    def test_it_gives_the_owner_the_runs_progress_as_json(self):
        self.client.force_login(self.owner)
        response = self.client.get(self.url)

        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "application/json")
        self.assertEqual(response.json(), {**self.team_run.status_dict(), "measurement": None,
                                           "saved_plans": [], "tuning": None})
        self.assertEqual(response.json()["stage"], "codegen")
        self.assertEqual(response.json()["progress_done"], 3)

    def test_a_teammate_sees_a_team_runs_progress(self):
        self.client.force_login(self.teammate)

        self.assertEqual(self.client.get(self.url).json()["progress_total"], 7)

    def test_a_stranger_gets_a_404(self):
        self.client.force_login(self.stranger)

        self.assertEqual(self.client.get(self.url).status_code, 404)

    def test_a_stranger_cannot_tell_a_hidden_run_from_a_missing_one(self):
        self.client.force_login(self.stranger)
        missing = self.client.get(reverse("explorer-run-status", args=["x" * 22]))

        self.assertEqual(missing.status_code, 404)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.client.get(self.url)

        self.assertRedirects(response, f"{reverse('login')}?next={self.url}",
                             fetch_redirect_response=False)

    def test_a_failed_run_reports_its_error_and_stage(self):
        run = self.make_run("f" * 22, status=Run.FAILED, error="softmax.hlo:3:7: bad shape",
                            error_stage="import")
        self.client.force_login(self.owner)
        status = self.client.get(reverse("explorer-run-status", args=[run.pk])).json()

        self.assertEqual(status["status"], "failed")
        self.assertEqual(status["error"], "softmax.hlo:3:7: bad shape")
        self.assertEqual(status["error_stage"], "import")

    def test_it_refuses_a_post(self):
        self.client.force_login(self.owner)

        self.assertEqual(self.client.post(self.url).status_code, 405)
