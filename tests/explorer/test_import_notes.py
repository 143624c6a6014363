"""The importer's notes (what it changed or left out: weights kept outside an ONNX file become
parameters, ops imported as the identity) are shown on the run page, not only in the API."""
from django.urls import reverse

from tests.explorer.access import AccessTestCase, softmax_artifact

NOTE = "initializer 'w1' keeps its data outside the model file (w1.bin): imported as a parameter"


class ImportNotesTests(AccessTestCase):
    def test_a_runs_notes_are_on_its_page(self):
        artifact = {**softmax_artifact(),
                    "graph": {**softmax_artifact()["graph"], "notes": [NOTE, "<b>bold</b>"]}}
        run = self.make_done_run(artifact=artifact)
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-run", args=[run.pk]))

        self.assertContains(response, 'id="import-notes"')
        self.assertContains(response, "(2)")
        self.assertContains(response, "keeps its data outside the model file (w1.bin)")
        self.assertContains(response, "&lt;b&gt;bold&lt;/b&gt;")

    def test_a_run_without_notes_shows_no_section(self):
        run = self.make_done_run()
        self.assertEqual(softmax_artifact()["graph"]["notes"], [])
        self.client.force_login(self.owner)

        self.assertNotContains(self.client.get(reverse("explorer-run", args=[run.pk])),
                               'id="import-notes"')
