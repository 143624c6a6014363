"""Every page escapes what users name: a graph whose node and module names, and a run whose name,
file name and tags, are markup that would run script if a template printed them raw. Each page
that shows them must show them (escaped), and must not hold the markup itself."""
import json
from functools import cache
from pathlib import Path

from django.urls import reverse

from compiler.stages.pipeline import compile_graph
from explorer.models import KernelSource, Run
from tests.explorer.access import AccessTestCase

SOFTMAX_JSON = Path(__file__).resolve().parents[1] / "data" / "json" / "softmax.json"
# Breaks out of an element, of a double- and a single-quoted attribute, and of a script block.
PAYLOAD = """x"'><script>alert(1)</script><img src=x onerror=alert(2)>"""
MARKUP = ("<script>alert(1)</script>", "<img src=x onerror=alert(2)>")
DEVICES, STRATEGIES = ["h100"], ["xla", "stitch", "cost"]


def hostile_graph() -> bytes:
    """softmax.json with the payload in its module's and every node's and parameter's name."""
    graph = json.loads(SOFTMAX_JSON.read_text())
    renamed = {}
    for entry in graph["parameters"] + graph["nodes"]:
        renamed[entry["name"]] = f"{entry['name']}{PAYLOAD}"
        entry["name"] = renamed[entry["name"]]
    for node in graph["nodes"]:
        node["operands"] = [renamed.get(name, name) for name in node.get("operands", [])]
    if "outputs" in graph:
        graph["outputs"] = [renamed.get(name, name) for name in graph["outputs"]]
    graph["name"] = f"softmax{PAYLOAD}"
    return json.dumps(graph).encode()


@cache
def hostile_artifact() -> dict:
    return compile_graph(hostile_graph(), f"soft{PAYLOAD}.json", DEVICES, STRATEGIES)


class EscapingTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        artifact = dict(hostile_artifact())
        sources = artifact.pop("sources")
        cls.hostile = Run.objects.create(
            id="x" * 22, owner=cls.owner, visibility=Run.PUBLIC, status=Run.DONE,
            filename=f"soft{PAYLOAD}.json", graph_bytes=hostile_graph(), devices=DEVICES,
            strategies=STRATEGIES, compiler_version="test", artifact=artifact,
            name=f"run{PAYLOAD}", tags=[f"tag{PAYLOAD}"])
        KernelSource.objects.bulk_create(KernelSource.from_artifact(cls.hostile.pk, key, source)
                                         for key, source in sources.items())

    def assert_escaped(self, url: str, shows_names: bool = True):
        response = self.client.get(url)
        self.assertEqual(response.status_code, 200, url)
        html = response.content.decode()
        for markup in MARKUP:
            self.assertNotIn(markup, html, f"{url} prints {markup!r} unescaped")
        if shows_names:   # the names are there, escaped: the test looks at the right page
            self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", html, url)

    def test_every_page_that_shows_the_names_escapes_them(self):
        run = self.hostile
        self.client.force_login(self.owner)
        pages = [reverse("explorer-run", args=[run.pk]),
                 reverse("explorer-run-source", args=[run.pk]),
                 reverse("explorer-run-delete", args=[run.pk]),
                 reverse("explorer-history"),
                 f"{reverse('explorer-compare')}?a={run.pk}:h100:xla&b={run.pk}:h100:cost"]
        generated = KernelSource.objects.filter(run=run).exclude(source="")
        xla, cost = (generated.filter(strategy=strategy).first().kernel
                     for strategy in ("xla", "cost"))
        pages.append(f"{reverse('explorer-compare-cuda')}?a={run.pk}:h100:xla&ka={xla}"
                     f"&b={run.pk}:h100:cost&kb={cost}")
        pages += [reverse("explorer-plan-panel", args=[run.pk, "h100", strategy])
                  for strategy in STRATEGIES]
        kernels = KernelSource.objects.filter(run=run).values_list("strategy", "kernel")
        self.assertTrue(kernels)
        pages += [reverse("explorer-kernel", args=[run.pk, "h100", strategy, kernel])
                  for strategy, kernel in kernels]
        for url in pages:
            with self.subTest(url=url):
                self.assert_escaped(url, shows_names="compare/cuda" not in url)

    def test_an_anonymous_visitor_sees_the_public_run_escaped_too(self):
        self.assert_escaped(reverse("explorer-run", args=[self.hostile.pk]))
