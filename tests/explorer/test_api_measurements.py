"""A run's GPU measurements through the API: /api/v1/runs/<id>/measurements (GET lists, POST
asks for one) and .../measurements/<mid> (one, with its result); and the results endpoint with a
finished measurement's timings merged in."""
from unittest import mock

from django.urls import reverse

from explorer.models import Measurement, Run
from tests.explorer.access import AccessTestCase
from tests.explorer.measurements import GPU, measurement_result
from tests.explorer.test_api_schema import DOCUMENT, problems


@mock.patch("explorer.runs.enqueue_measure")
class MeasurementsApiTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("d" * 22, Run.TEAM)
        cls.url = reverse("api-run-measurements", args=[cls.done.pk])

    def as_user(self, user):
        self.client.force_login(user)
        return self.client

    def check(self, response, path: str, method: str = "get"):
        operation = DOCUMENT["paths"][path][method]
        schema = operation["responses"][str(response.status_code)]["content"][
            "application/json"]["schema"]
        self.assertEqual(problems(response.json(), schema), [])

    def test_a_post_queues_a_measurement_and_a_second_gets_the_same_one(self, enqueue):
        with self.captureOnCommitCallbacks(execute=True):
            first = self.as_user(self.owner).post(self.url)
        second = self.as_user(self.teammate).post(self.url)

        self.assertEqual(first.status_code, 202)
        self.assertEqual(second.status_code, 200)
        self.assertEqual(first.json()["id"], second.json()["id"])
        self.assertEqual(first.json()["status"], "queued")
        enqueue.assert_called_once_with(first.json()["id"])
        self.check(first, "/runs/{run_id}/measurements", "post")

    def test_the_list_says_whether_a_gpu_worker_is_online(self, enqueue):
        Measurement.objects.create(run=self.done)
        response = self.as_user(self.owner).get(self.url)

        self.assertEqual(response.status_code, 200)
        self.assertIs(response.json()["gpu_worker_online"], False)
        self.assertEqual([m["status"] for m in response.json()["results"]], ["queued"])
        self.check(response, "/runs/{run_id}/measurements")

    def test_a_finished_measurement_fills_the_results_measured_fields(self, enqueue):
        result = measurement_result(self.done.artifact)
        measurement = Measurement.objects.create(run=self.done, status=Measurement.DONE,
                                                 gpu=GPU, result=result)
        response = self.as_user(self.owner).get(reverse("api-run-results",
                                                        args=[self.done.pk]))

        body = response.json()
        self.assertEqual(body["measurement"]["id"], measurement.pk)
        cost = body["devices"]["h100"]["strategies"]["cost"]
        measured = result["devices"]["h100"]["strategies"]["cost"]
        self.assertEqual([k["measured_us"] for k in cost["kernels"]],
                         [k["measured_us"] for k in measured["kernels"]])
        self.assertEqual(cost["total"]["measured_us"], measured["end_to_end"]["median_us"])
        self.assertIsNone(body["devices"]["a100"]["strategies"]["cost"]["total"]["measured_us"])
        self.check(response, "/runs/{run_id}/results")

    def test_one_measurement_carries_its_result(self, enqueue):
        measurement = Measurement.objects.create(
            run=self.done, status=Measurement.DONE, gpu=GPU,
            result=measurement_result(self.done.artifact))
        url = reverse("api-run-measurement", args=[self.done.pk, measurement.pk])
        response = self.as_user(self.teammate).get(url)

        self.assertEqual(response.json()["result"]["gpu"], GPU)
        self.check(response, "/runs/{run_id}/measurements/{measurement_id}")

    def test_a_stranger_gets_a_404_and_nothing_is_queued(self, enqueue):
        self.assertEqual(self.as_user(self.stranger).post(self.url).status_code, 404)
        self.assertEqual(self.as_user(self.stranger).get(self.url).status_code, 404)
        enqueue.assert_not_called()

    def test_a_run_not_done_cannot_be_measured(self, enqueue):
        queued = self.make_run("q" * 22)
        url = reverse("api-run-measurements", args=[queued.pk])

        self.assertEqual(self.as_user(self.owner).post(url).status_code, 409)
        enqueue.assert_not_called()
