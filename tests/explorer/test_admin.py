"""The Django admin for staff: its run and measurement lists open for staff, and only for them;
log-in locks lifted there (axes' access attempts)."""
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from explorer.models import Measurement, Run
from tests.explorer.access import AccessTestCase


class AdminTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.staff = User.objects.create_superuser("root", password="root-password")
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.measurement = Measurement.objects.create(run=cls.done, status=Measurement.FAILED,
                                                     error="no CUDA device", error_stage="gpu")

    def test_staff_see_runs_and_measurements_with_their_state(self):
        self.client.force_login(self.staff)
        runs = self.client.get(reverse("admin:explorer_run_changelist"))
        measurements = self.client.get(reverse("admin:explorer_measurement_changelist"))
        one = self.client.get(reverse("admin:explorer_measurement_change",
                                      args=[self.measurement.pk]))

        self.assertContains(runs, self.done.pk)
        self.assertContains(measurements, "failed")
        self.assertContains(one, "no CUDA device")

    def test_the_owner_who_is_not_staff_is_sent_to_the_admin_login(self):
        self.client.force_login(self.owner)
        response = self.client.get(reverse("admin:explorer_measurement_changelist"))

        self.assertEqual(response.status_code, 302)
        self.assertIn(reverse("admin:login"), response["Location"])

    def test_staff_lift_a_log_in_lock_by_deleting_its_access_attempts(self):
        def log_in(password: str) -> bool:
            client = Client(REMOTE_ADDR="203.0.113.7")
            client.post(reverse("login"), {"username": "owner", "password": password})
            return "_auth_user_id" in client.session

        for _ in range(settings.LOGIN_FAILURES_ALLOWED):
            log_in("guess")
        self.assertFalse(log_in("owner-password"))
        self.client.force_login(self.staff)
        listing = reverse("admin:axes_accessattempt_changelist")
        self.assertContains(self.client.get(listing), "203.0.113.7")

        self.client.post(listing, {"action": "delete_selected", "post": "yes",
                                   "_selected_action": [AccessAttempt.objects.get().pk]})

        self.assertFalse(AccessAttempt.objects.exists())
        self.assertTrue(log_in("owner-password"))
