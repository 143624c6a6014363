"""The uploaded source page (r/<id>/source): the text with line numbers, each line that
defines an op marked with the kernel of the chosen plan that computes it."""
import gzip

from django.urls import reverse

from compiler.importers import load_graph
from explorer.models import GraphBlob, Run
from tests.explorer.access import DATA, SOFTMAX, AccessTestCase, softmax_artifact


class SourceTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run("s" * 22, Run.TEAM)
        cls.url = reverse("explorer-run-source", args=[cls.done.pk])

    def get(self, user, query=""):
        self.client.force_login(user)
        return self.client.get(self.url + query)

    def test_every_line_of_the_upload_is_shown_with_its_number_and_anchor(self):
        response = self.get(self.owner)

        self.assertEqual(response.status_code, 200)
        lines = SOFTMAX.read_text().splitlines()
        self.assertEqual(len(response.context["text_lines"]), len(lines))
        self.assertContains(response, f'id="L{len(lines)}"')
        self.assertEqual([line["text"] for line in response.context["text_lines"]], lines)

    def test_a_line_that_defines_an_op_links_the_kernel_of_the_plan_that_computes_it(self):
        response = self.get(self.owner, "?device=h100&strategy=xla")

        graph = load_graph(SOFTMAX)
        plan = softmax_artifact()["devices"]["h100"]["strategies"]["xla"]
        owner = {name: kernel["name"] for kernel in plan["kernels"] for name in kernel["nodes"]}
        checked = 0
        for node in graph:
            if node.name not in owner or node.loc is None or not node.loc.line:
                continue
            line = response.context["text_lines"][node.loc.line - 1]
            self.assertIn(node.name, line["text"])  # the op is defined on that line
            self.assertEqual(line["kernel"], owner[node.name])
            url = reverse("explorer-kernel", args=[self.done.pk, "h100", "xla", owner[node.name]])
            self.assertContains(response, f'href="{url}"')
            checked += 1
        self.assertGreater(checked, 3)
        parameters = [line for line in response.context["text_lines"] if "parameter(" in line["text"]]
        self.assertTrue(parameters)
        self.assertTrue(all(line["kernel"] is None for line in parameters))

    def test_the_same_kernel_has_the_same_colour_on_every_line(self):
        hues = {}
        for line in self.get(self.owner, "?device=h100&strategy=cost").context["text_lines"]:
            if line["kernel"]:
                self.assertEqual(hues.setdefault(line["kernel"], line["hue"]), line["hue"])
        self.assertTrue(hues)

    def test_an_unknown_plan_is_a_400_that_names_the_choices(self):
        response = self.get(self.owner, "?device=v100")

        self.assertEqual(response.status_code, 400)
        self.assertContains(response, "device &#x27;v100&#x27; is not one of this run&#x27;s: "
                                      "a100, h100", status_code=400)

    def test_a_gzipped_upload_is_shown_as_text(self):
        run = self.make_done_run("z" * 22)
        packed = GraphBlob.store(gzip.compress(SOFTMAX.read_bytes()))
        Run.objects.filter(pk=run.pk).update(graph_id=packed, filename="softmax.hlo.gz")
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-run-source", args=[run.pk]))

        self.assertEqual(response.status_code, 200)
        self.assertEqual(len(response.context["text_lines"]),
                         len(SOFTMAX.read_text().splitlines()))

    def test_an_onnx_upload_is_shown_as_onnxs_printable_text(self):
        import onnx
        import onnx.printer

        path = DATA / "onnx" / "mlp_layernorm.dynamo.onnx"
        response = self.source_of_upload(path)

        self.assertEqual(response.status_code, 200)
        self.assertNotContains(response, 'id="no-text"')
        texts = [line["text"] for line in response.context["text_lines"]]
        for node in onnx.load(str(path)).graph.node:     # each node printed by ONNX's printer
            self.assertIn(onnx.printer.to_text(node).strip(), [text.strip() for text in texts])
        self.assertLess(max(map(len, texts)), 300)       # the weights' values left out

    def test_another_binary_upload_says_there_is_no_text(self):
        response = self.source_of_upload(DATA / "stablehlo" / "softmax_of_matmul.mlirbc")

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, 'id="no-text"')

    def source_of_upload(self, path):
        run = self.make_run(path.stem[:8].ljust(22, "o"))
        Run.objects.filter(pk=run.pk).update(graph_id=GraphBlob.store(path.read_bytes()),
                                             filename=path.name)
        self.client.force_login(self.owner)
        return self.client.get(reverse("explorer-run-source", args=[run.pk]))

    def test_a_stranger_gets_a_404_and_the_run_page_links_the_source(self):
        self.assertEqual(self.get(self.stranger).status_code, 404)
        self.client.force_login(self.owner)
        page = self.client.get(reverse("explorer-run", args=[self.done.pk]))
        self.assertContains(page, f'href="{self.url}"')
