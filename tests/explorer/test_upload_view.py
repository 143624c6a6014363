"""The landing page and upload form at / (explorer-index)."""
from unittest import mock

from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse

from explorer.models import Run
from tests.explorer.access import SOFTMAX, AccessTestCase

BAD_HLO = (b"HloModule m\n\nENTRY e {\n  p = f32[4] parameter(0)\n"
           b"  ROOT r = f32[4] frobnicate(p)\n}\n")
URL = reverse("explorer-index")


# Nothing is sent to Celery: the compile job is what tests/workers check.
@mock.patch("explorer.runs.enqueue_compile")
class UploadViewTests(AccessTestCase):
    def post(self, user, **fields):
        self.client.force_login(user)
        data = {"devices": ["h100"], "strategies": ["xla", "cost"], "visibility": "private",
                **fields}
        return self.client.post(URL, data)

    def test_it_names_the_product_and_what_it_does(self, enqueue):
        response = self.client.get(URL)

        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "explorer/index.html")
        self.assertContains(response, "<h1>Fusion Explorer</h1>", html=True)
        self.assertContains(response, "operator")
        self.assertContains(response, "explorer/index.css")

    def test_an_anonymous_visitor_sees_the_samples_and_a_login_link_but_no_form(self, enqueue):
        response = self.client.get(URL)

        self.assertContains(response, f"{reverse('login')}?next=/")
        self.assertContains(response, "attention block")
        self.assertNotContains(response, 'id="upload-form"')
        self.assertNotContains(response, "test suite")   # where the samples come from is ours

    def test_a_logged_in_user_gets_the_form_with_devices_strategies_and_samples(self, enqueue):
        self.client.force_login(self.owner)
        response = self.client.get(URL)

        self.assertContains(response, 'id="upload-form"')
        self.assertContains(response, 'type="file"')
        self.assertContains(response, "NVIDIA H100")
        self.assertContains(response, 'value="stitch"')
        self.assertContains(response, 'data-sample="hlo/softmax.hlo"')
        self.assertContains(response, 'data-sample="onnx/mlp_layernorm.dynamo.onnx"')

    def test_an_upload_creates_a_queued_run_and_opens_its_page(self, enqueue):
        graph = SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes())
        response = self.post(self.owner, graph_file=graph, name="my softmax")

        run = Run.objects.get()
        self.assertRedirects(response, reverse("explorer-run", args=[run.pk]),
                             fetch_redirect_response=False)
        self.assertEqual((run.owner, run.status, run.name), (self.owner, "queued", "my softmax"))
        self.assertEqual(run.filename, "softmax.hlo")
        self.assertEqual(run.strategies, ["xla", "cost"])
        self.assertEqual(run.graph_bytes, SOFTMAX.read_bytes())
        # Kernel launches: a CUDA graph unless the form says otherwise.
        self.assertEqual(run.runtime, "graph")

    def test_the_runtime_chosen_is_the_runs_and_a_new_run_of_the_same_graph(self, enqueue):
        self.client.force_login(self.owner)
        self.assertContains(self.client.get(URL), 'value="stream"')
        graph = SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes())
        self.post(self.owner, graph_file=graph)
        graph = SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes())
        self.post(self.owner, graph_file=graph, runtime="stream")

        self.assertEqual(sorted(Run.objects.values_list("runtime", flat=True)),
                         ["graph", "stream"])
        response = self.post(self.owner, sample="hlo/softmax.hlo", runtime="eager")
        self.assertEqual(response.status_code, 400)
        self.assertContains(response, "eager is not one of the available choices", status_code=400)

    def test_pasted_hlo_text_is_a_graph_too(self, enqueue):
        self.post(self.owner, graph_text=SOFTMAX.read_text())

        self.assertEqual(Run.objects.get().filename, "pasted.hlo")

    def test_a_sample_compiles_in_one_click(self, enqueue):
        self.post(self.owner, sample="hlo/softmax.hlo")

        self.assertEqual(bytes(Run.objects.get().graph_bytes), SOFTMAX.read_bytes())

    def test_it_rejects_malformed_hlo_with_the_importers_message_on_the_form(self, enqueue):
        graph = SimpleUploadedFile("bad.hlo", BAD_HLO)
        response = self.post(self.owner, graph_file=graph)

        self.assertEqual(response.status_code, 400)
        self.assertContains(response, "bad.hlo:5:19: unknown opcode &#x27;frobnicate&#x27;",
                            status_code=400)
        self.assertNotContains(response, "Traceback", status_code=400)
        self.assertFalse(Run.objects.exists())

    def test_random_bytes_are_not_a_format_it_reads_and_it_says_which_it_reads(self, enqueue):
        graph = SimpleUploadedFile("noise.bin", bytes(range(256)) * 8)
        response = self.post(self.owner, graph_file=graph)

        self.assertContains(response, "noise.bin: not a format we read: the file is binary data, "
                                      "but not an ONNX model", status_code=400)
        self.assertContains(response, "(.mlir, or .mlirbc bytecode)", status_code=400)
        self.assertNotContains(response, "not a valid ONNX model", status_code=400)

    def test_a_truncated_onnx_model_gets_the_onnx_error(self, enqueue):
        model = (SOFTMAX.parents[1] / "onnx" / "mlp_layernorm.dynamo.onnx").read_bytes()
        response = self.post(self.owner, graph_file=SimpleUploadedFile("model.bin", model[:3000]))

        self.assertContains(response, "model.bin: not a valid ONNX model", status_code=400)
        self.assertFalse(Run.objects.exists())

    def test_it_asks_for_exactly_one_graph(self, enqueue):
        response = self.post(self.owner, graph_text="HloModule m", sample="hlo/softmax.hlo")

        self.assertContains(response, "Give one graph", status_code=400)
        self.assertFalse(Run.objects.exists())

    def test_an_empty_file_gets_one_message_that_names_it_as_empty(self, enqueue):
        response = self.post(self.owner, graph_file=SimpleUploadedFile("blank.hlo", b""))

        form = response.context["form"]
        self.assertEqual(form.errors, {"graph_file": [
            "blank.hlo is empty (0 bytes): choose the file that holds the graph."]})
        self.assertNotContains(response, "choose a file, paste", status_code=400)
        self.assertFalse(Run.objects.exists())

    def test_a_team_run_goes_to_one_of_the_owners_teams(self, enqueue):
        self.post(self.owner, sample="hlo/softmax.hlo", visibility="team", team=self.team.pk)

        run = Run.objects.get()
        self.assertEqual((run.visibility, run.team), ("team", self.team))

    def test_a_stranger_cannot_share_with_a_team_they_are_not_in(self, enqueue):
        response = self.post(self.stranger, sample="hlo/softmax.hlo", visibility="team",
                             team=self.team.pk)

        self.assertEqual(response.status_code, 400)
        self.assertFalse(Run.objects.exists())

    def test_a_file_name_keeps_neither_folders_nor_more_than_255_characters(self, enqueue):
        for sent, kept in (("../../etc/passwd", "passwd"),
                           ("s" * 296 + ".hlo", "s" * 251 + ".hlo")):
            with self.subTest(sent=sent[:20]):
                Run.objects.all().delete()
                self.post(self.owner, graph_file=SimpleUploadedFile(sent, SOFTMAX.read_bytes()))

                self.assertEqual(Run.objects.get().filename, kept)

    def test_a_name_too_long_is_refused_next_to_the_name(self, enqueue):
        response = self.post(self.owner, sample="hlo/softmax.hlo", name="n" * 201)

        self.assertEqual(response.context["form"].errors, {"name": [
            "Ensure this value has at most 200 characters (it has 201)."]})
        self.assertContains(response, "at most 200 characters (it has 201)", status_code=400)
        self.assertFalse(Run.objects.exists())

    def test_an_unknown_visibility_is_refused_next_to_the_visibility(self, enqueue):
        response = self.post(self.owner, sample="hlo/softmax.hlo", visibility="everyone")

        self.assertContains(response, "everyone is not one of the available choices",
                            status_code=400)
        self.assertFalse(Run.objects.exists())

    def test_an_unknown_sample_is_refused_saying_so(self, enqueue):
        response = self.post(self.owner, sample="hlo/nothing.hlo")

        self.assertContains(response, "Sample: Select a valid choice. hlo/nothing.hlo",
                            status_code=400)

    def test_a_team_of_others_or_an_id_past_64_bits_is_not_one_of_yours(self, enqueue):
        for user, team in ((self.stranger, self.team.pk), (self.owner, 99999999999999999999)):
            with self.subTest(user=user.username, team=team):
                response = self.post(user, sample="hlo/softmax.hlo", visibility="team",
                                     team=team)

                self.assertContains(response, "Choose one of your teams: you are not a member "
                                               "of that one.", status_code=400)
        self.assertFalse(Run.objects.exists())

    @override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=10_000)
    def test_pasted_text_past_the_forms_limit_gets_the_form_again_with_the_limit(self, enqueue):
        # Django refuses the request as it parses it, in the CSRF check before any view: the
        # upload page answers with the limit, and nothing is stored.
        client = Client(enforce_csrf_checks=True)
        client.force_login(self.owner)
        token = client.get(URL).context["csrf_token"]
        text = SOFTMAX.read_text() + "\n// padding" * 2_000
        response = client.post(URL, {"csrfmiddlewaretoken": token, "graph_text": text,
                                     "devices": ["h100"], "strategies": ["xla"],
                                     "visibility": "private"})

        self.assertEqual(response.status_code, 413)
        self.assertTemplateUsed(response, "explorer/index.html")
        self.assertContains(response, 'id="upload-form"', status_code=413)
        self.assertContains(response, "Graph text: the form&#x27;s text fields hold more than "
                                      "9.8\xa0KB (10,000 bytes, DATA_UPLOAD_MAX_MEMORY_SIZE)",
                            status_code=413)
        self.assertContains(response, "choose the file instead", status_code=413)
        self.assertFalse(Run.objects.exists())

    def test_an_upload_past_the_storage_quota_is_refused_with_the_usage_and_what_to_do(
            self, enqueue):
        graph = SimpleUploadedFile("softmax.hlo", SOFTMAX.read_bytes())
        with self.settings(STORAGE_QUOTA_BYTES=100):
            response = self.post(self.owner, graph_file=graph)

        self.assertEqual(response.status_code, 413)
        self.assertContains(response, "softmax.hlo: storage quota: your runs&#x27; uploads take "
                                      "0 bytes of your 100 bytes (STORAGE_QUOTA_BYTES)",
                            status_code=413)
        self.assertContains(response, "Delete runs you no longer need", status_code=413)
        self.assertFalse(Run.objects.exists())

    def test_the_form_says_how_much_text_may_be_pasted(self, enqueue):
        self.client.force_login(self.owner)

        self.assertContains(self.client.get(URL), "Up to 2.5\xa0MB (2,621,440 bytes, "
                                                  "DATA_UPLOAD_MAX_MEMORY_SIZE)")

    def test_an_anonymous_upload_is_sent_to_log_in(self, enqueue):
        response = self.client.post(URL, {"sample": "hlo/softmax.hlo", "devices": ["h100"],
                                          "strategies": ["cost"], "visibility": "private"})

        self.assertRedirects(response, f"{reverse('login')}?next=/",
                             fetch_redirect_response=False)
        self.assertFalse(Run.objects.exists())

    def test_it_refuses_a_put(self, enqueue):
        self.assertEqual(self.client.put(URL).status_code, 405)


@mock.patch("explorer.runs.enqueue_compile")
class UploadedBeforeTests(AccessTestCase):
    """Uploading a graph again with the same options finds the run it made; when the labels
    asked for differ, the page says so and offers to apply them, instead of opening the run
    with its old labels as if they were the new ones."""

    def upload(self, **fields):
        self.client.force_login(self.owner)
        return self.client.post(URL, {"graph_file": SimpleUploadedFile("softmax.hlo",
                                                                       SOFTMAX.read_bytes()),
                                      "devices": ["h100"], "strategies": ["xla"], **fields})

    def test_the_same_labels_open_the_run(self, enqueue):
        first = self.upload(name="mine", visibility="private")
        again = self.upload(name="mine", visibility="private")

        self.assertEqual(first["Location"], again["Location"])
        self.assertEqual(Run.objects.count(), 1)

    def test_other_labels_are_named_and_can_be_applied(self, enqueue):
        self.upload(name="mine", visibility="private")
        run = Run.objects.get()
        response = self.upload(name="for the team", visibility="team", team=self.team.pk)

        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.context["changed"], ["name", "visibility", "team"])
        self.assertContains(response, "You uploaded this graph before")
        self.assertContains(response, f'href="{reverse("explorer-run", args=[run.pk])}"')
        self.assertEqual(Run.objects.get().visibility, "private")     # nothing changed yet

        form = response.context["asked"]
        applied = self.client.post(reverse("explorer-run-settings", args=[run.pk]), {
            "name": form["name"], "tags": "", "visibility": form["visibility"],
            "team": form["team"].pk})
        self.assertEqual(applied.status_code, 302)
        run.refresh_from_db()
        self.assertEqual((run.name, run.visibility, run.team), ("for the team", "team",
                                                                 self.team))
