"""Learned predictions on the run, panel, kernel and compare pages.

The runs' artifacts come from compiler.stages.pipeline.compile_graph with an untrained model file
for h100 only (its times are whatever random weights give: the pages show them, nothing checks
their accuracy), labelled synthetic or measured, and the run without any model that every
other view test uses.
"""
import re
import tempfile
from functools import cache
from pathlib import Path

from django.urls import reverse

from compiler.cost.learned.model import CostModel, ModelConfig
from compiler.cost.learned.train import save_model
from compiler.stages.pipeline import compile_graph
from compiler.target.launch import terms_for
from explorer.models import KernelSource, Measurement, Run
from explorer.templatetags.explorer_format import signed_percent, us
from tests.explorer.access import DEVICES, SOFTMAX, STRATEGIES, AccessTestCase
from tests.explorer.measurements import measurement_result
from tests.explorer.svg_bars import bars

SYNTHETIC_NOTE = "learned model trained on synthetic targets — not a GPU prediction"
KERNEL = ("h100", "cost", "stitch-regional.0")   # softmax.hlo's one stitched kernel


# A model trained on loop kernels alone: softmax's stitched kernel lies outside it.
LOOPS_ONLY = {"categories": ["kind_loop", "schedule_elementwise"], "element_types": ["float32"],
              "ops": ["add", "constant", "divide", "exponential", "maximum", "parameter",
                      "reduce", "subtract", "broadcast", "reshape"],
              "ranges": {}, "samples": 10}


@cache
def learned_artifact(origin: str, support: str | None = None) -> dict:
    """softmax.hlo compiled for a100 and h100, h100 predicted by a `origin` model (trained,
    with `support` "loops", on loop kernels only)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "learned-h100-v3.pt"
        save_model(path, CostModel(ModelConfig(hidden=8, embedding=4, layers=1)),
                   extra={"device": "h100", "origin": origin, "version": 3,
                          **({"support": LOOPS_ONLY} if support == "loops" else {})})
        return compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, DEVICES, STRATEGIES,
                             learned_models={"h100": str(path)})


class LearnedColumnsTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.plain = cls.make_done_run("p" * 22)
        cls.synthetic = cls.make_learned_run("s" * 22, "synthetic")
        cls.measured = cls.make_learned_run("m" * 22, "measured")

    @classmethod
    def make_learned_run(cls, run_id: str, origin: str) -> Run:
        artifact = dict(learned_artifact(origin))
        sources = artifact.pop("sources")
        run = cls.make_run(run_id, Run.PRIVATE, Run.DONE, artifact=artifact, name="softmax")
        KernelSource.objects.bulk_create(KernelSource.from_artifact(run.pk, key, source)
                                         for key, source in sources.items())
        return run

    def get(self, name: str, *args):
        self.client.force_login(self.owner)
        return self.client.get(reverse(name, args=args))

    def plan(self, run: Run, device: str = "h100", strategy: str | None = "cost") -> dict:
        """One plan of the run, or every plan of the device when `strategy` is None."""
        strategies = run.artifact["devices"][device]["strategies"]
        return strategies if strategy is None else strategies[strategy]

    def test_the_run_page_names_the_model_and_shows_learned_totals_and_kernel_times(self):
        response = self.get("explorer-run", self.synthetic.pk)

        self.assertContains(response, "learned: predicted by learned-h100-v3")
        self.assertContains(response, SYNTHETIC_NOTE, count=1)   # a100 has no model
        self.assertContains(response, "learned: no model trained for a100")
        self.assertContains(response, '<td class="num comparison__learned"', count=4)
        for strategy in STRATEGIES:
            total = self.plan(self.synthetic, strategy=strategy)["total"]["learned_us"]
            self.assertIsNotNone(total)
            self.assertContains(response, us(total))
        # The panel that opens first, the fastest plan's (stitch and cost tie in projected
        # time on this graph, so which one it is is the page's choice, not the test's).
        opened = re.search(r'data-tab-panel="strategy-h100" data-tab="(\w+)"\s+data-decisions-url',
                           response.content.decode()).group(1)
        # Kernels show the learned device work (the plan's launch term has its own column).
        for kernel in self.plan(self.synthetic, strategy=opened)["kernels"]:
            self.assertContains(response, f'<td class="num kernels__learned">'
                                          f'{us(kernel["learned_device_us"])}</td>', html=True)

    def test_the_comparison_chart_has_a_learned_series_only_where_a_model_predicted(self):
        response = self.get("explorer-run", self.synthetic.pk)

        series = {bar["series"] for bar in bars(response.content.decode())}
        self.assertIn("learned", series)
        plain = self.get("explorer-run", self.plain.pk)
        self.assertNotIn("learned", {bar["series"] for bar in bars(plain.content.decode())})

    def test_a_model_trained_on_measured_times_has_no_synthetic_note(self):
        response = self.get("explorer-run", self.measured.pk)

        self.assertContains(response, "learned: predicted by learned-h100-v3")
        self.assertNotContains(response, SYNTHETIC_NOTE)

    def test_without_a_model_the_page_says_so_quietly_and_links_the_cost_models(self):
        response = self.get("explorer-run", self.plain.pk)

        for device in DEVICES:
            self.assertContains(response, f"learned: no model trained for {device}")
        self.assertContains(response, f'href="{reverse("explorer-cost-models")}"')
        self.assertNotContains(response, "kernels__learned")
        self.assertNotContains(response, "comparison__learned")
        self.assertNotContains(response, ">learned</th>")

    def test_a_model_that_could_not_be_used_is_named_with_the_reason(self):
        # The plain run's plans as compile_graph leaves them when the h100 model file fails.
        reason = "the learned model could not be loaded: learned-h100-v4.pt: truncated"
        devices = self.plain.artifact["devices"]
        failed = {name: {**plan, "learned_model": {"error": reason}}
                  for name, plan in self.plan(self.plain, strategy=None).items()}
        devices = {**devices, "h100": {**devices["h100"], "strategies": failed}}
        run = self.make_run("e" * 22, Run.PRIVATE, Run.DONE, name="softmax",
                            artifact={**self.plain.artifact, "devices": devices})

        response = self.get("explorer-run", run.pk)

        self.assertContains(response, f"learned: no prediction — {reason}")
        self.assertNotContains(response, "kernels__learned")

    def test_a_strategys_panel_has_the_learned_column(self):
        response = self.get("explorer-plan-panel", self.synthetic.pk, "h100", "unfused")

        self.assertContains(response, ">learned</th>")
        for kernel in self.plan(self.synthetic, strategy="unfused")["kernels"]:
            self.assertContains(response, f'<td class="num kernels__learned">'
                                          f'{us(kernel["learned_device_us"])}</td>', html=True)
        a100 = self.get("explorer-plan-panel", self.synthetic.pk, "a100", "unfused")
        self.assertNotContains(a100, ">learned</th>")

    def test_the_kernel_page_shows_the_learned_time_and_its_error_against_the_measurement(self):
        kernel = next(k for k in self.plan(self.synthetic)["kernels"]
                      if k["name"] == KERNEL[2])
        response = self.get("explorer-kernel", self.synthetic.pk, *KERNEL)
        self.assertContains(response, "learned (learned-h100-v3)")
        self.assertContains(response, us(kernel["learned_device_us"]))
        self.assertContains(response, SYNTHETIC_NOTE)

        # A kernel measured long enough for its device work to be told from its launch: the
        # learned error compares device work (the time alone less a lone launch's).
        result = measurement_result(self.synthetic.artifact)
        record = next(k for k in result["devices"]["h100"]["strategies"]["cost"]["kernels"]
                      if k["name"] == KERNEL[2])
        record["measured_us"] = 25.0
        record["timing"]["median_us"] = 25.0
        Measurement.objects.create(run=self.synthetic, status=Measurement.DONE, result=result)
        device_work = 25.0 - terms_for("h100").alone_us
        response = self.get("explorer-kernel", self.synthetic.pk, *KERNEL)
        rows = dict((label, value) for label, value, _ in response.context["measured"])
        error = (kernel["learned_device_us"] - device_work) / device_work
        self.assertAlmostEqual(rows["measured device work"], device_work)
        self.assertAlmostEqual(rows["model error (learned)"], error)
        self.assertContains(response, signed_percent(error))

    def test_a_kernel_outside_what_the_model_was_trained_on_says_so_and_is_projected(self):
        artifact = dict(learned_artifact("measured", "loops"))
        artifact.pop("sources")
        run = self.make_run("o" * 22, Run.PRIVATE, Run.DONE, artifact=artifact, name="softmax")
        plan = self.plan(run)
        kernel = next(k for k in plan["kernels"] if k["name"] == KERNEL[2])
        assert kernel["learned_us"] is None
        why = ("outside its training (schedule row-reduce-multirow: none in its training; "
               "kind stitch-regional: none in its training)")
        self.assertEqual(kernel["learned_skipped"], why)
        # The plan's learned total counts it at its projected time, and says how many it left.
        self.assertEqual(plan["total"]["learned_outside"],
                         sum(k["learned_us"] is None for k in plan["kernels"]))

        response = self.get("explorer-kernel", run.pk, *KERNEL)
        self.assertContains(response, f"no prediction: {why}; the projected time stands in")
        page = self.get("explorer-run", run.pk).content.decode()
        self.assertRegex(page, rf"\({plan['total']['learned_outside']} of\s+them outside what "
                               rf"it was trained on\)")
        # The plan's kernel table keeps the learned column, each cell it left saying why.
        panel = self.get("explorer-plan-panel", run.pk, "h100", "cost")
        self.assertContains(panel, ">learned</th>")
        self.assertContains(panel, f'title="no prediction: {why}"')

    def test_the_kernel_page_of_a_run_without_a_model_has_no_learned_time(self):
        response = self.get("explorer-kernel", self.plain.pk, *KERNEL)

        self.assertNotContains(response, "learned (")
        self.assertNotContains(response, SYNTHETIC_NOTE)

    def test_compare_adds_a_learned_total_only_when_a_side_has_one(self):
        self.client.force_login(self.owner)
        url = reverse("explorer-compare")
        response = self.client.get(url, {"a": f"{self.synthetic.pk}:h100:xla",
                                         "b": f"{self.plain.pk}:h100:xla"})
        totals = {(row["key"], row["runtime"]): row for row in response.context["totals"]}
        for runtime, figures in self.plan(self.synthetic, strategy="xla")["total"][
                "runtimes"].items():
            self.assertEqual(totals["learned_us", runtime]["a"], figures["learned_us"])
            self.assertIsNone(totals["learned_us", runtime]["b"])
        self.assertContains(response, SYNTHETIC_NOTE, count=1)
        self.assertContains(response, "learned by learned-h100-v3")

        response = self.client.get(url, {"a": f"{self.plain.pk}:h100:xla",
                                         "b": f"{self.plain.pk}:h100:cost"})
        self.assertNotIn("learned_us", {row["key"] for row in response.context["totals"]})
