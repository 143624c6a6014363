"""An ONNX model uploaded with its external data files, as `torch.onnx.export` writes a real
model: several files in one upload, or one zip of them, through the form and the API. The model
file is the graph (its weights kept outside become parameters, and the run's notes say so);
bundles that hold no model, or several, or a zip past the limits, are refused saying why."""
import io
import tempfile
import zipfile
from pathlib import Path
from unittest import mock

import onnx
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import SimpleTestCase
from django.urls import reverse

from compiler.stages.pipeline import import_graph
from explorer.models import Run
from explorer.uploads import upload_file_name
from tests.explorer.access import AccessTestCase

MLP = Path(__file__).resolve().parents[1] / "data" / "onnx" / "mlp_layernorm.dynamo.onnx"


def exported_with_external_data(folder: Path) -> tuple[bytes, bytes]:
    """The MLP saved as an export of a big model is: model.onnx and model.onnx.data."""
    model = onnx.load(str(MLP))
    onnx.save_model(model, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    return (folder / "model.onnx").read_bytes(), (folder / "model.onnx.data").read_bytes()


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@mock.patch("explorer.runs.enqueue_compile")
class UploadBundleTests(AccessTestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.model, self.data = exported_with_external_data(Path(folder.name))
        self.assertLess(len(self.model), MLP.stat().st_size - len(self.data) // 2)
        self.client.force_login(self.owner)

    def api(self, *files):
        return self.client.post(reverse("api-runs"), {
            "file": [SimpleUploadedFile(name, data) for name, data in files],
            "devices": "h100", "strategies": "xla"})

    def test_the_form_takes_the_model_and_its_data_file(self, enqueue):
        response = self.client.post(reverse("explorer-index"), {
            "graph_file": [SimpleUploadedFile("model.onnx.data", self.data),
                           SimpleUploadedFile("model.onnx", self.model)],
            "devices": ["h100"], "strategies": ["xla"], "visibility": "private"})

        run = Run.objects.get()
        self.assertRedirects(response, reverse("explorer-run", args=[run.pk]),
                             fetch_redirect_response=False)
        self.assertEqual((run.filename, run.graph_bytes), ("model.onnx", self.model))
        graph = import_graph(run.graph_bytes, run.filename)
        self.assertTrue(any("outside" in note for note in graph.notes), graph.notes)

    def test_the_api_takes_them_too_and_a_zip_of_them(self, enqueue):
        first = self.api(("model.onnx", self.model), ("model.onnx.data", self.data))
        self.assertEqual(first.status_code, 201, first.content)
        archive = zipped({"export/model.onnx": self.model, "export/model.onnx.data": self.data})
        second = self.api(("export.zip", archive))

        self.assertEqual(second.status_code, 200)            # the same model: the same run
        self.assertEqual(second.json()["id"], first.json()["id"])
        self.assertEqual(Run.objects.get().filename, "model.onnx")

    def test_bundles_without_exactly_one_model_are_refused_saying_why(self, enqueue):
        two_graphs = self.api(("a.hlo", b"HloModule a"), ("b.hlo", b"HloModule b"))
        no_model = self.api(("weights.zip", zipped({"model.onnx.data": self.data})))
        two_models = self.api(("m.onnx", self.model), ("n.onnx", self.model))

        self.assertEqual(two_graphs.status_code, 400)
        self.assertIn("exactly one .onnx file (it holds 0)", two_graphs.json()["error"])
        self.assertEqual(no_model.status_code, 400)
        self.assertIn("exactly one ONNX model", no_model.json()["error"])
        self.assertIn("it holds 2", two_models.json()["error"])
        self.assertFalse(Run.objects.exists())

    def test_a_zip_whose_model_inflates_past_the_limit_is_refused_unread(self, enqueue):
        bomb = zipped({"model.onnx": b"\0" * (8 << 20)})
        with mock.patch.dict("os.environ", {"FUSION_EXPLORER_MAX_INPUT_BYTES": str(1 << 20)}):
            response = self.api(("bomb.zip", bomb))

        self.assertEqual(response.status_code, 413)
        self.assertIn("FUSION_EXPLORER_MAX_INPUT_BYTES", response.json()["error"])

    def test_a_zipped_models_name_keeps_no_folder_control_character_or_excess(self, enqueue):
        # A zip's member names are the archive's, not the browser's: nothing cleaned them.
        name = "..\\..\\exports\\\x1b[31m" + "m" * 300 + ".onnx"
        response = self.client.post(reverse("explorer-index"), {
            "graph_file": SimpleUploadedFile("export.zip", zipped({name: self.model})),
            "devices": ["h100"], "strategies": ["xla"], "visibility": "private"})

        run = Run.objects.get()
        self.assertEqual(response.status_code, 302)
        self.assertEqual(run.filename, "[31m" + "m" * 246 + ".onnx")
        self.assertEqual(len(run.filename), 255)

    def test_the_form_names_the_problem_at_the_file_field(self, enqueue):
        response = self.client.post(reverse("explorer-index"), {
            "graph_file": [SimpleUploadedFile("a.hlo", b"x"), SimpleUploadedFile("b.hlo", b"y")],
            "devices": ["h100"], "strategies": ["xla"], "visibility": "private"})

        self.assertEqual(response.status_code, 400)
        self.assertIn("exactly one .onnx file", str(response.context["form"].errors["graph_file"]))


class UploadFileNameTests(SimpleTestCase):
    """One rule for an upload's name whichever way it comes in (explorer/uploads.py)."""

    def test_it_keeps_the_last_path_component_of_either_separator(self):
        self.assertEqual(upload_file_name("../../etc/passwd"), "passwd")
        self.assertEqual(upload_file_name("C:\\models\\m.onnx"), "m.onnx")

    def test_it_drops_control_and_direction_characters(self):
        self.assertEqual(upload_file_name("a\x00b\x1b[1m\u202ec.hlo\n"), "ab[1mc.hlo")

    def test_a_long_name_is_cut_to_255_characters_before_its_suffixes(self):
        kept = upload_file_name("x" * 300 + ".onnx.gz")

        self.assertEqual((len(kept), kept[-10:]), (255, "xx.onnx.gz"))
        self.assertEqual(upload_file_name(kept), kept)
        self.assertEqual(upload_file_name("y" * 300), "y" * 255)

    def test_a_name_with_nothing_left_is_upload(self):
        for name in ("", "..", "dir/", "\x07"):
            with self.subTest(name=name):
                self.assertEqual(upload_file_name(name), "upload")
