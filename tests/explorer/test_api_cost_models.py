"""GET /api/v1/cost-models: the learned cost models per device, as /cost-models shows them.

The two models are tiny, trained for 2 epochs on synthetic targets (tests/explorer/learned.py);
version 1 is saved as if measured so that which model is active can be tested."""
import shutil
import tempfile
from pathlib import Path

from django.test import override_settings
from django.urls import reverse

from compiler.cost.learned.registry import SHIPPED
from compiler.cost.learned.train import read_header
from tests.explorer.access import AccessTestCase
from tests.explorer.learned import train_fixture_models
from tests.explorer.test_api_schema import DOCUMENT, problems


class CostModelsApiTests(AccessTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.model_dir = Path(tempfile.mkdtemp())
        cls.addClassCleanup(shutil.rmtree, cls.model_dir)
        cls.measured, cls.synthetic = train_fixture_models(cls.model_dir)
        (cls.model_dir / "learned-h100-v7.pt").write_bytes(b"not a model")
        cls.url = reverse("api-cost-models")

    def get(self, allow_synthetic=False, model_dir=None, user=None, shipped=None):
        if user is not None:
            self.client.force_login(user)
        with override_settings(LEARNED_MODEL_DIR=str(model_dir or self.model_dir),
                               LEARNED_SHIPPED_MODEL_DIR=shipped,
                               LEARNED_ALLOW_SYNTHETIC=allow_synthetic):
            return self.client.get(self.url)

    def check_schema(self, response):
        schema = DOCUMENT["paths"]["/cost-models"]["get"]["responses"]["200"]["content"][
            "application/json"]["schema"]
        self.assertEqual(problems(response.json(), schema), [])

    def test_it_lists_the_models_newest_first_with_the_measured_one_active(self):
        response = self.get(user=self.stranger)

        self.assertEqual(response.status_code, 200)
        self.check_schema(response)
        body = response.json()
        self.assertFalse(body["allow_synthetic"])
        models = body["devices"]["h100"]
        self.assertEqual([(m["label"], m["origin"], m["active"]) for m in models],
                         [("learned-h100-v2", "synthetic", False),
                          ("learned-h100-v1", "measured", True)])
        self.assertIn("LEARNED_ALLOW_SYNTHETIC", models[0]["why_not"])
        self.assertIsNone(models[1]["why_not"])
        self.assertFalse(any(m["stale"] for m in models))

    def test_each_model_carries_its_headers_evaluation(self):
        models = self.get(user=self.owner).json()["devices"]["h100"]
        for model, saved in zip(models, (self.synthetic, self.measured)):
            header = read_header(saved.path)
            self.assertEqual(model["evaluation"], header["evaluation"])
            self.assertEqual(model["datasets"], header["datasets"])
            self.assertEqual(model["readout_winner"], header["readout_winner"])
        self.assertEqual(set(models[0]["readouts"]), {"mean", "max", "sum", "transformer"})

    def test_with_synthetic_models_allowed_the_newest_is_active(self):
        models = self.get(allow_synthetic=True, user=self.owner).json()["devices"]["h100"]
        self.assertEqual([m["active"] for m in models], [True, False])
        self.assertEqual(models[1]["why_not"], "older than learned-h100-v2")

    def test_an_empty_directory_lists_no_device(self):
        with tempfile.TemporaryDirectory() as empty:
            response = self.get(model_dir=empty, user=self.owner)
        self.assertEqual(response.json(), {"allow_synthetic": False, "devices": {}})

    def test_the_shipped_measured_model_is_listed_and_active_beside_an_empty_directory(self):
        with tempfile.TemporaryDirectory() as empty:
            response = self.get(model_dir=empty, user=self.owner, shipped=SHIPPED)
        self.check_schema(response)
        (model,) = response.json()["devices"]["h200"]
        self.assertEqual((model["label"], model["origin"], model["active"]),
                         ("learned-h200-v2", "measured", True))

    def test_it_needs_authentication(self):
        response = self.get()
        self.assertEqual(response.status_code, 401)
