"""The learned cost models page at /cost-models (explorer-cost-models).

The models are trained once per test class (tests/explorer/learned.py train_fixture_models),
tiny and for 2 epochs, on synthetic targets. Version 1 is saved as if its data were measured,
only so that the page's choice between a measured and a synthetic model can be tested; its
figures mean nothing.
"""
import re
import shutil
import tempfile
from pathlib import Path

import torch
from django.test import override_settings
from django.urls import reverse

from compiler.cost.learned.train import read_header
from tests.explorer.access import AccessTestCase
from tests.explorer.learned import train_fixture_models

MISSING = "–"


def row_cells(html: str, split: str, model: str) -> list[str]:
    """The figures of one model's row of one split's metrics table."""
    table = html[html.index(f'data-split="{split}"'):]
    table = table[:table.index("</table>")]
    row = table[table.index(f'data-model="{model}"'):]
    row = row[:row.index("</tr>")]
    return re.findall(r'<td class="num">([^<]*)</td>', row)


def formatted(metrics: dict) -> list[str]:
    """A metrics dict as the page should print it: errors to 0.1 %, tau to 0.01."""
    def cell(key, digits):
        value = metrics[key]
        return MISSING if value is None else f"{value:.{digits}f}"
    return [cell("mape", 1), cell("median_ape_under_5us", 1), cell("median_ape_over_5us", 1),
            cell("mean_kendall_tau", 2), cell("mean_top1_regret_percent", 1),
            cell("mean_top5_regret_percent", 1)]


class CostModelsViewTests(AccessTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.model_dir = Path(tempfile.mkdtemp())
        cls.addClassCleanup(shutil.rmtree, cls.model_dir)
        cls.measured, cls.synthetic = train_fixture_models(cls.model_dir)
        cls.url = reverse("explorer-cost-models")

    def page(self, allow_synthetic=False, model_dir=None, shipped=None, **query):
        self.client.force_login(self.owner)
        with override_settings(LEARNED_MODEL_DIR=str(model_dir or self.model_dir),
                               LEARNED_SHIPPED_MODEL_DIR=shipped,
                               LEARNED_ALLOW_SYNTHETIC=allow_synthetic):
            return self.client.get(self.url, query)

    def test_the_fixture_models_are_one_measured_and_one_synthetic(self):
        self.assertEqual((self.measured.label, self.measured.origin),
                         ("learned-h100-v1", "measured"))
        self.assertEqual((self.synthetic.label, self.synthetic.origin),
                         ("learned-h100-v2", "synthetic"))

    def test_without_models_it_says_how_to_train_one(self):
        with tempfile.TemporaryDirectory() as empty:
            response = self.page(model_dir=empty)

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "No model trained yet")
        self.assertContains(response, "python -m compiler collect-costmodel-data")
        self.assertContains(response, "python manage.py train_costmodel --device h100")

    def test_the_newest_measured_model_is_active_when_synthetic_ones_are_not_allowed(self):
        response = self.page()

        rows = response.context["sections"][0]["rows"]
        self.assertEqual([(row.file.label, row.active) for row in rows],
                         [("learned-h100-v2", False), ("learned-h100-v1", True)])
        self.assertIn("LEARNED_ALLOW_SYNTHETIC", rows[0].why_not)
        self.assertContains(response, "not used: synthetic targets")
        self.assertEqual(response.context["sections"][0]["selected"].label, "learned-h100-v1")
        self.assertNotContains(response, "Synthetic targets — not a GPU prediction.")

    def test_with_synthetic_models_allowed_the_newest_is_active_and_bannered(self):
        response = self.page(allow_synthetic=True)

        rows = response.context["sections"][0]["rows"]
        self.assertEqual([row.active for row in rows], [True, False])
        self.assertEqual(rows[1].why_not, "older than learned-h100-v2")
        self.assertContains(response, "Synthetic targets — not a GPU prediction.")

    def test_it_shows_the_held_out_figures_of_the_selected_model(self):
        header = read_header(self.synthetic.path)
        html = self.page(model="learned-h100-v2").content.decode()

        self.assertIn("Synthetic targets — not a GPU prediction.", html)
        for split in ("program", "family"):
            for model in ("learned", "sol", "projected"):
                self.assertEqual(row_cells(html, split, model),
                                 formatted(header["evaluation"][split][model]))
        self.assertIn(f"{len(header['programs']['train'])} for training", html)
        self.assertIn(f"{len(header['programs']['test'])} held out", html)

    def test_it_shows_the_readout_comparison_and_the_winner(self):
        header = read_header(self.synthetic.path)
        html = self.page(model="learned-h100-v2").content.decode()

        winner = header["readout_winner"]
        self.assertIn(f"{winner} (chosen)", html)
        for readout, result in header["readouts"].items():
            self.assertIn(f"<th>{readout}", html)
            self.assertIn(f'<td class="num">{result["program"]["mape"]:.1f}</td>', html)

    def test_it_lists_the_datasets_with_their_digest(self):
        response = self.page(model="learned-h100-v2")

        self.assertContains(response, "synthetic.jsonl.gz</code>")
        self.assertContains(response, "0123456789ab")

    def test_it_shows_file_names_and_no_path_of_the_servers_disk(self):
        response = self.page(model="learned-h100-v2")

        self.assertContains(response, "<code>learned-h100-v2.pt</code>", html=True)
        html = response.content.decode()
        self.assertNotIn(str(self.model_dir), html)
        self.assertNotIn("tests/synthetic.jsonl.gz", html)  # the dataset's recorded path

    def test_it_speaks_in_a_users_terms_not_the_projects(self):
        for allow_synthetic in (False, True):
            text = " ".join(self.page(allow_synthetic=allow_synthetic).content.decode().split())
            for internal in ("issue", "campaign", "session", "TODO", ".py"):
                self.assertNotIn(internal, text)
        self.assertIn("The target row: what a model should reach on held-out programs", text)

    def test_an_unknown_model_is_not_found(self):
        self.assertEqual(self.page(model="learned-h100-v99").status_code, 404)

    def test_a_broken_file_in_the_directory_does_not_break_the_page(self):
        with tempfile.TemporaryDirectory() as directory:
            shutil.copy(self.measured.path, directory)
            Path(directory, "learned-h100-v7.pt").write_bytes(b"not a model")
            Path(directory, "learned-h100-v8.pt").write_bytes(b"")
            response = self.page(model_dir=directory)

        self.assertEqual(response.status_code, 200)
        labels = [row.file.label for row in response.context["sections"][0]["rows"]]
        self.assertEqual(labels, ["learned-h100-v1"])

    def test_a_model_header_without_its_evaluation_still_shows(self):
        with tempfile.TemporaryDirectory() as directory:
            saved = torch.load(self.measured.path, weights_only=True)
            saved["header"].update(evaluation=None, programs=None, datasets="?")
            del saved["header"]["readouts"]
            torch.save(saved, Path(directory, "learned-h100-v1.pt"))
            response = self.page(model_dir=directory)

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "Not evaluated: the data has a single program.")

    def test_any_logged_in_user_sees_it_and_the_nav_links_to_it(self):
        for user in (self.owner, self.teammate, self.stranger):
            self.client.force_login(user)
            with override_settings(LEARNED_MODEL_DIR=str(self.model_dir),
                                   LEARNED_ALLOW_SYNTHETIC=False):
                response = self.client.get(self.url)
            self.assertEqual(response.status_code, 200)
            self.assertContains(response, f'<a href="{self.url}">Cost models</a>', html=True)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.client.get(self.url)

        self.assertRedirects(response, f"{reverse('login')}?next={self.url}",
                             fetch_redirect_response=False)
