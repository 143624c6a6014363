"""Asking for a measurement (explorer-run-measure, POST) and what the pages show of one."""
from django.urls import reverse

from compiler.target.launch import terms_for
from explorer import runs
from explorer.templatetags.explorer_format import us
from explorer.models import Measurement, Run
from tests.explorer.access import AccessTestCase
from tests.explorer.measurements import GPU, measurement_result


class MeasureViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("explorer-run-measure", args=[cls.done.pk])
        cls.page = reverse("explorer-run", args=[cls.done.pk])

    def setUp(self):
        self.enqueued = []
        original = runs.enqueue_measure
        runs.enqueue_measure = self.enqueued.append
        self.addCleanup(setattr, runs, "enqueue_measure", original)

    def post(self, user, url=None):
        self.client.force_login(user)
        with self.captureOnCommitCallbacks(execute=True):
            return self.client.post(url or self.url)

    def finished_measurement(self, **options) -> Measurement:
        return Measurement.objects.create(
            run=self.done, status=Measurement.DONE, gpu=GPU,
            result=measurement_result(self.done.artifact, **options))

    def test_the_owner_queues_one_job_on_the_gpu_queue(self):
        response = self.post(self.owner)

        self.assertRedirects(response, self.page, fetch_redirect_response=False)
        measurement = Measurement.objects.get(run=self.done)
        self.assertEqual(measurement.status, Measurement.QUEUED)
        self.assertEqual(measurement.requested_by, self.owner)
        self.assertEqual(self.enqueued, [measurement.pk])

    def test_asking_again_while_one_waits_does_not_queue_another(self):
        self.post(self.owner)
        self.post(self.teammate)

        self.assertEqual(Measurement.objects.filter(run=self.done).count(), 1)
        self.assertEqual(len(self.enqueued), 1)

    def test_a_queued_measurement_says_it_waits_for_a_gpu_worker(self):
        self.post(self.owner)
        response = self.client.get(self.page)

        self.assertContains(response, "queued: waits until a GPU worker comes online")
        self.assertContains(response, 'data-state="queued"')

    def test_a_teammate_may_ask(self):
        self.assertEqual(self.post(self.teammate).status_code, 302)
        self.assertEqual(len(self.enqueued), 1)

    def test_a_stranger_gets_a_404_and_nothing_is_queued(self):
        self.assertEqual(self.post(self.stranger).status_code, 404)
        self.assertEqual(self.enqueued, [])

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        self.assertEqual(self.client.post(self.url).status_code, 302)
        self.assertFalse(Measurement.objects.exists())

    def test_a_run_still_compiling_cannot_be_measured(self):
        queued = self.make_run("q" * 22)

        response = self.post(self.owner, reverse("explorer-run-measure", args=[queued.pk]))
        self.assertEqual(response.status_code, 400)
        self.assertEqual(self.enqueued, [])

    def test_a_get_is_refused(self):
        self.client.force_login(self.owner)
        self.assertEqual(self.client.get(self.url).status_code, 405)

    def test_a_finished_measurement_fills_the_measured_columns(self):
        self.finished_measurement()
        self.client.force_login(self.owner)
        response = self.client.get(self.page)

        self.assertContains(response, f"measured on {GPU}")
        self.assertContains(response, f"Measured on {GPU}")
        # the plan's measured total is its back-to-back time: here the sum of 1, 2, ... µs
        kernels = len(self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"])
        total = kernels * (kernels + 1) / 2
        self.assertContains(response, f"{total:.2f} µs")
        self.assertContains(response, "eager (CuPy)")
        self.assertContains(response, "50.00 µs")

    def test_a_measurement_by_another_compiler_says_its_kernels_may_differ(self):
        Measurement.objects.create(run=self.done, status=Measurement.DONE, gpu=GPU,
                                   compiler_version="0123abcd",
                                   result=measurement_result(self.done.artifact))
        self.client.force_login(self.owner)
        response = self.client.get(self.page)

        self.assertContains(response, "by compiler 0123abcd, not the run")
        self.assertContains(response, "its kernels may differ from the ones shown")

    def test_a_kernel_page_shows_measured_against_predicted(self):
        self.finished_measurement(mismatched={"fusion.0"})
        kernel = self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        url = reverse("explorer-kernel", args=[self.done.pk, "h100", "cost", kernel["name"]])
        self.client.force_login(self.owner)
        response = self.client.get(url)

        self.assertContains(response, "Measured vs predicted")
        self.assertContains(response, "1.00 µs")  # the first kernel's median
        rows = {label: value for label, value, _ in response.context["measured"]}
        # 1 µs timed alone is less than a lone launch takes: no device work to speak of, so
        # no error is given for it (its device work is within the timing's noise).
        self.assertEqual(rows["measured device work"], 0.0)
        self.assertIsNone(rows["model error (projected)"])

    def test_a_kernel_page_gives_the_error_on_device_work(self):
        result = measurement_result(self.done.artifact)
        record = result["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        record["measured_us"] = 40.0
        Measurement.objects.create(run=self.done, status=Measurement.DONE, gpu=GPU,
                                   compiler_version=self.done.compiler_version, result=result)
        kernel = self.done.artifact["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        url = reverse("explorer-kernel", args=[self.done.pk, "h100", "cost", kernel["name"]])
        self.client.force_login(self.owner)
        response = self.client.get(url)

        device_work = 40.0 - terms_for("h100").alone_us
        error = (kernel["device_us"] - device_work) / device_work
        self.assertContains(response, f"{100 * error:+.1f} %")
        self.assertContains(response, us(device_work))

    def test_a_failed_measurement_shows_its_error_and_may_be_asked_again(self):
        Measurement.objects.create(run=self.done, status=Measurement.FAILED, error_stage="gpu",
                                   error="The GPU worker w1 cannot measure: no CUDA device.")
        self.client.force_login(self.owner)
        response = self.client.get(self.page)

        self.assertContains(response, "the last measurement failed (gpu): The GPU worker w1")
        self.assertContains(response, "Measure on a GPU")
