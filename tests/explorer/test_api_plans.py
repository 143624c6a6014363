"""What-if and saved plans through the JSON API (explorer/api.py: whatIf, savePlan,
listSavedPlans, deleteSavedPlan, getPlanFile, and submitRun's "plans"), each answer checked
against the OpenAPI document."""
import json
from unittest import mock

from django.urls import reverse

from explorer.models import ApiToken, Run, SavedPlan
from tests.explorer.access import SOFTMAX, AccessTestCase
from tests.explorer.test_api_schema import DOCUMENT, problems
from tests.explorer.test_whatif_view import FreshSessions


@mock.patch("explorer.runs.enqueue_saved_plan")
@mock.patch("explorer.runs.enqueue_compile")
class PlanApiTests(FreshSessions, AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.shown = cls.make_done_run("a" * 22, Run.PUBLIC)
        cls.unfused = cls.shown.artifact["devices"]["h100"]["strategies"]["unfused"]["kernels"]
        cls.key = ApiToken.create_for(cls.owner, "test", scope=ApiToken.SUBMIT)[1]
        cls.read_key = ApiToken.create_for(cls.owner, "read", scope=ApiToken.READ)[1]

    def call(self, method, name, args, body=None, key=None):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {key or self.key}"} if key is not False else {}
        return getattr(self.client, method)(
            reverse(name, args=args), json.dumps(body) if body is not None else None,
            content_type="application/json", **headers)

    def check(self, response, path, method):
        operation = DOCUMENT["paths"][path][method]
        schema = operation["responses"][str(response.status_code)]["content"][
            "application/json"]["schema"]
        self.assertEqual(problems(response.json(), schema), [])

    def pair(self):
        owner = {n: k["name"] for k in self.unfused for n in k["nodes"]}
        for kernel in self.unfused:
            for value in kernel["inputs"]:
                if owner.get(value) not in (None, kernel["name"]):
                    return [owner[value], kernel["name"]]

    def test_what_if_answers_the_edited_plan_and_its_graph(self, *_):
        response = self.call("post", "api-run-whatif", [self.shown.pk], {
            "device": "h100", "strategy": "unfused", "graph": True,
            "edits": [{"op": "merge", "kernels": self.pair()}]})

        self.assertEqual(response.status_code, 200, response.content)
        self.check(response, "/runs/{run_id}/whatif", "post")
        body = response.json()
        self.assertEqual(body["now"]["kernels"], len(self.unfused) - 1)
        self.assertEqual(len(body["graph"]["kernels"]), len(self.unfused) - 1)
        self.assertTrue(body["graph"]["edited"])

    def test_what_if_refuses_a_bad_edit_naming_it_and_an_unknown_plan(self, *_):
        response = self.call("post", "api-run-whatif", [self.shown.pk], {
            "device": "h100", "strategy": "unfused", "edits": [{"op": "merge"}]})
        self.assertEqual(response.status_code, 400)
        self.assertIn("edit 1", response.json()["error"])
        self.check(response, "/runs/{run_id}/whatif", "post")
        response = self.call("post", "api-run-whatif", [self.shown.pk], {
            "device": "h100", "strategy": "custom:none", "edits": []})
        self.assertEqual(response.status_code, 400)
        self.assertIn("no h100/custom:none plan", response.json()["error"])

    def test_anyone_may_ask_what_if_of_a_public_run(self, *_):
        response = self.call("post", "api-run-whatif", [self.shown.pk], {
            "device": "h100", "strategy": "xla", "edits": []}, key=False)
        self.assertEqual(response.status_code, 200)

    def test_a_plan_is_saved_listed_exported_and_deleted(self, *_):
        with self.captureOnCommitCallbacks(execute=True):
            response = self.call("post", "api-run-plans", [self.shown.pk], {
                "name": "merged", "device": "h100", "strategy": "unfused",
                "edits": [{"op": "merge", "kernels": self.pair()}]})
        self.assertEqual(response.status_code, 201, response.content)
        self.check(response, "/runs/{run_id}/plans", "post")
        self.assertTrue(response.json()["url"].endswith(f"/r/{self.shown.pk}#h100/custom:merged"))

        listed = self.call("get", "api-run-plans", [self.shown.pk])
        self.check(listed, "/runs/{run_id}/plans", "get")
        self.assertEqual([p["strategy"] for p in listed.json()["plans"]], ["custom:merged"])

        exported = self.call("get", "api-run-plan-file", [self.shown.pk, "h100", "xla"])
        self.assertEqual(exported.status_code, 200)
        self.assertEqual(exported.json()["format"], "fusion-explorer-plan")

        again = self.call("post", "api-run-plans", [self.shown.pk], {
            "name": "merged", "plan": exported.json()})
        self.assertEqual(again.status_code, 409)

        saved = SavedPlan.objects.get(run=self.shown)
        deleted = self.client.delete(f"/api/v1/runs/{self.shown.pk}/plans/{saved.pk}",
                                     HTTP_AUTHORIZATION=f"Bearer {self.key}")
        self.assertEqual(deleted.status_code, 204)
        self.assertFalse(SavedPlan.objects.exists())

    def test_a_read_only_key_may_not_save(self, *_):
        response = self.call("post", "api-run-plans", [self.shown.pk], {
            "name": "x", "device": "h100", "strategy": "xla", "edits": []}, key=self.read_key)
        self.assertEqual(response.status_code, 403)
        self.assertIn("read-only", response.json()["error"])

    def test_plan_files_submitted_with_a_run_become_its_plans_or_say_why_not(self, *_):
        exported = self.call("get", "api-run-plan-file", [self.shown.pk, "h100", "xla"]).json()
        other = {**exported, "name": "other",
                 "graph": {**exported["graph"], "digest": "0" * 64, "name": "jit_else"}}
        response = self.call("post", "api-runs", [], {
            "filename": "softmax.hlo", "text": SOFTMAX.read_text(), "devices": ["h100"],
            "strategies": ["xla"], "plans": [{**exported, "name": "mine"}, other]})

        self.assertEqual(response.status_code, 201, response.content)
        plans = response.json()["plans"]
        self.assertEqual(plans[0]["strategy"], "custom:mine")
        self.assertEqual(plans[0]["status"], "queued")
        self.assertIn("the plan is for jit_else", plans[1]["error"])
        run = Run.objects.get(pk=response.json()["id"])
        self.assertEqual([p.name for p in run.saved_plans.all()], ["mine"])
