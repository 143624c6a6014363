"""The compare page at /compare?a=<run>[:device[:strategy]]&b=... (explorer-compare)."""
from django.urls import reverse

from compiler.kernels.matching import match_kernels
from explorer.models import GraphBlob, KernelSource, Run
from tests.explorer.access import DEVICES, STRATEGIES, AccessTestCase, softmax_artifact
from tests.explorer.outliers import before_cost_models
from tests.explorer.svg_bars import bars, chart


class CompareViewTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.team_run = cls.make_done_run("t" * 22, Run.TEAM)
        cls.private_run = cls.make_done_run("p" * 22, Run.PRIVATE)
        cls.url = reverse("explorer-compare")

    def get(self, user, a, b):
        if user is not None:
            self.client.force_login(user)
        return self.client.get(self.url, {"a": a, "b": b})

    def strategies(self, a="xla", b="stitch"):
        run = self.team_run.pk
        return f"{run}:h100:{a}", f"{run}:h100:{b}"

    def test_it_shows_two_strategies_totals_side_by_side(self):
        response = self.get(self.owner, *self.strategies())

        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "explorer/compare.html")
        totals = {(row["key"], row["runtime"]): row for row in response.context["totals"]}
        strategies = self.team_run.artifact["devices"]["h100"]["strategies"]
        for runtime in ("graph", "stream"):
            for side, strategy in (("a", "xla"), ("b", "stitch")):
                total = strategies[strategy]["total"]
                self.assertEqual(totals["proj_us", runtime][side],
                                 total["runtimes"][runtime]["proj_us"])
                self.assertEqual(totals["launch_us", runtime][side],
                                 total["runtimes"][runtime]["launch_us"])
        self.assertEqual(totals["device_us", None]["a"], strategies["xla"]["total"]["device_us"])
        self.assertContains(response, "Δ (B − A)")

    def test_two_runs_of_the_same_graph_show_no_warning(self):
        response = self.get(self.owner, f"{self.team_run.pk}:h100:xla",
                            f"{self.private_run.pk}:h100:xla")

        self.assertFalse(response.context["different_graphs"])
        self.assertNotContains(response, 'id="different-graphs"')

    def test_runs_of_different_graphs_are_said_to_be(self):
        other = self.make_done_run("w" * 22, Run.PRIVATE)
        Run.objects.filter(pk=other.pk).update(graph_id=GraphBlob.store(b"HloModule other\n"),
                                               graph_sha256="")
        response = self.get(self.owner, f"{self.team_run.pk}:h100:xla", f"{other.pk}:h100:xla")

        self.assertTrue(response.context["different_graphs"])
        self.assertContains(response, 'id="different-graphs"')

    def test_each_side_says_what_decided_its_fusions(self):
        response = self.get(self.owner, *self.strategies("xla", "cost"))
        text = " ".join(response.content.decode().split())

        self.assertIn("fusions decided by <strong>rules</strong> (XLA&#x27;s fusion rules)", text)
        self.assertIn("fusions decided by the <strong>projected model</strong>", text)
        self.assertLess(text.index("(XLA&#x27;s fusion rules)"), text.index("projected model"))

    def test_a_run_stored_before_cost_models_were_recorded_names_no_decider(self):
        old = self.make_done_run("o" * 22, Run.TEAM, before_cost_models(softmax_artifact()))
        response = self.get(self.owner, f"{old.pk}:h100:xla", f"{self.team_run.pk}:h100:cost")
        text = " ".join(response.content.decode().split())

        self.assertEqual(text.count("fusions decided by"), 1)
        self.assertIn("fusions decided by the <strong>projected model</strong>", text)

    def test_a_measured_run_compares_its_measured_totals(self):
        from explorer.models import Measurement
        from tests.explorer.measurements import measurement_result

        result = measurement_result(self.team_run.artifact)
        Measurement.objects.create(run=self.team_run, status=Measurement.DONE, result=result)
        response = self.get(self.owner, *self.strategies())

        totals = {row["key"]: row for row in response.context["totals"]}
        measured = result["devices"]["h100"]["strategies"]
        self.assertEqual(totals["measured_us"]["a"], measured["xla"]["end_to_end"]["median_us"])
        self.assertEqual(totals["measured_us"]["b"],
                         measured["stitch"]["end_to_end"]["median_us"])

    def test_every_kernel_links_to_its_page_on_its_side(self):
        response = self.get(self.owner, *self.strategies())

        for strategy in ("xla", "stitch"):
            kernels = self.team_run.artifact["devices"]["h100"]["strategies"][strategy]["kernels"]
            for kernel in kernels:
                url = reverse("explorer-kernel",
                              args=[self.team_run.pk, "h100", strategy, kernel["name"]])
                self.assertContains(response, f'href="{url}"')

    def test_it_lists_the_merges_and_embeds_the_delta_chart(self):
        response = self.get(self.owner, *self.strategies())

        self.assertEqual(len(response.context["changes"]["merged"]), 1)
        self.assertContains(response, "Merged (1)")
        self.assertContains(response, 'data-chart="deltas"')
        self.assertTrue(bars(chart(response.content.decode(), "deltas")))
        self.assertNotContains(response, "plotly")      # the chart is inline SVG

    def test_kernel_rows_are_the_compilers_matching(self):
        response = self.get(self.owner, *self.strategies())
        strategies = self.team_run.artifact["devices"]["h100"]["strategies"]
        expected = match_kernels(strategies["xla"]["kernels"], strategies["stitch"]["kernels"])

        self.assertEqual(response.context["rows"], expected)

    def test_a_side_naming_only_a_run_takes_the_other_sides_device_and_strategy(self):
        response = self.get(self.owner, f"{self.team_run.pk}:h100:xla", self.private_run.pk)

        b = response.context["b"]
        self.assertEqual((b["run"], b["device"], b["strategy"]),
                         (self.private_run, "h100", "xla"))

    def test_two_ticked_runs_from_the_history_are_compared(self):
        self.client.force_login(self.owner)
        response = self.client.get(self.url, {"run": [self.team_run.pk, self.private_run.pk]})

        self.assertEqual(response.status_code, 200)
        self.assertEqual(response.context["b"]["run"], self.private_run)

    def test_without_two_runs_it_says_what_to_give(self):
        self.client.force_login(self.owner)
        response = self.client.get(self.url, {"a": self.team_run.pk})

        self.assertContains(response, "Choose two runs", status_code=400)

    def test_an_unknown_strategy_or_device_is_a_404(self):
        run = self.team_run.pk
        self.assertEqual(self.get(self.owner, f"{run}:h100:nope", run).status_code, 404)
        self.assertEqual(self.get(self.owner, f"{run}:v100", run).status_code, 404)

    def test_a_run_without_results_is_a_404(self):
        queued = self.make_run("q" * 22)

        self.assertEqual(self.get(self.owner, queued.pk, self.team_run.pk).status_code, 404)

    def test_a_teammate_compares_team_runs(self):
        self.assertEqual(self.get(self.teammate, *self.strategies()).status_code, 200)

    def test_a_teammate_gets_a_404_when_one_run_is_private(self):
        response = self.get(self.teammate, self.team_run.pk, self.private_run.pk)

        self.assertEqual(response.status_code, 404)

    def test_a_stranger_gets_a_404_for_runs_they_cannot_see(self):
        self.assertEqual(self.get(self.stranger, *self.strategies()).status_code, 404)
        response = self.get(self.stranger, self.private_run.pk, self.private_run.pk)
        self.assertEqual(response.status_code, 404)

    def test_an_anonymous_visitor_is_sent_to_log_in(self):
        response = self.get(None, *self.strategies())

        self.assertEqual(response.status_code, 302)
        self.assertTrue(response["Location"].startswith(reverse("login")))

    def test_the_swap_link_exchanges_the_sides(self):
        a, b = self.strategies()
        response = self.get(self.owner, a, b)

        self.assertContains(response, f'href="?a={b}&amp;b={a}"')


class ComparePickerTests(AccessTestCase):
    """Each side's picker: the plans of the runs shown and of every other run of the same
    graph the user may see."""

    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.mine = cls.make_done_run("m" * 22, Run.PRIVATE)
        cls.theirs = cls.make_done_run("s" * 22, Run.PUBLIC)
        cls.hidden = cls.make_done_run("h" * 22, Run.PRIVATE)
        Run.objects.filter(pk__in=[cls.theirs.pk, cls.hidden.pk]).update(owner=cls.stranger)
        cls.elsewhere = cls.make_done_run("e" * 22, Run.PUBLIC)
        other_graph = GraphBlob.store(b"HloModule other\n")
        Run.objects.filter(pk=cls.elsewhere.pk).update(graph_id=other_graph,
                                                       graph_sha256="0" * 64)

    def picked(self, a, b):
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-compare"), {"a": a, "b": b})
        self.assertEqual(response.status_code, 200)
        return response

    def test_either_side_may_pick_a_plan_of_any_visible_run_of_the_same_graph(self):
        response = self.picked(f"{self.mine.pk}:h100:xla", f"{self.mine.pk}:h100:cost")
        offered = {plan["value"] for group in response.context["pick_groups"]
                   for plan in group["plans"]}
        for run in (self.mine, self.theirs):
            for device in DEVICES:
                for strategy in STRATEGIES:
                    self.assertIn(f"{run.pk}:{device}:{strategy}", offered)
        # A stranger's private run and a run of another graph are not offered.
        self.assertFalse(any(value.startswith((self.hidden.pk, self.elsewhere.pk))
                             for value in offered))
        # Each side's select has its own plan selected.
        page = response.content.decode()
        for side, spec in (("a", f"{self.mine.pk}:h100:xla"), ("b", f"{self.mine.pk}:h100:cost")):
            select = page[page.index(f'<select name="{side}"'):]
            select = select[:select.index("</select>")]
            self.assertIn(f'value="{spec}" selected', select)

    def test_the_run_page_offers_a_public_run_of_the_same_graph_to_compare_with(self):
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-run", args=[self.mine.pk]))
        groups = dict(response.context["other_runs"])
        self.assertIn(self.theirs, groups["same graph"])
        self.assertNotIn(self.hidden, groups["same graph"])
        self.assertContains(response, "stranger,")      # whose run it is


class CudaDiffTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.compiled = cls.make_done_run("c" * 22, Run.PRIVATE)

    def diff(self, kernel_a, kernel_b, a="xla", b="unfused", user=None):
        self.client.force_login(user or self.owner)
        return self.client.get(reverse("explorer-compare-cuda"), {
            "a": f"{self.compiled.pk}:h100:{a}", "ka": kernel_a,
            "b": f"{self.compiled.pk}:h100:{b}", "kb": kernel_b})

    def generated(self, strategy):
        return [k for k in self.compiled.artifact["devices"]["h100"]["strategies"][strategy]["kernels"]
                if k.get("function")]

    def test_the_diff_rebuilds_both_sources(self):
        a, b = self.generated("xla")[0], self.generated("unfused")[-1]
        response = self.diff(a["name"], b["name"])
        self.assertEqual(response.status_code, 200)
        diff = response.context["diff"]
        sources = {}
        for side, kernel, strategy in (("a", a, "xla"), ("b", b, "unfused")):
            stored = KernelSource.objects.get(run=self.compiled, device="h100", strategy=strategy,
                                              kernel=kernel["name"])
            sources[side] = stored.source.replace(stored.function, "KERNEL").splitlines()
        self.assertFalse(diff["same_source"])
        for side, kinds in (("a", ("same", "removed")), ("b", ("same", "added"))):
            rows = [row for row in diff["rows"] if row["kind"] in kinds]
            numbers = [row[side] for row in rows]
            self.assertEqual(numbers, sorted(numbers))
            for row in rows:     # every line shown is that side's line of that number
                self.assertEqual(row["text"], sources[side][row[side] - 1])
        self.assertEqual(diff["removed"], sum(r["kind"] == "removed" for r in diff["rows"]))
        self.assertEqual(diff["added"], sum(r["kind"] == "added" for r in diff["rows"]))
        self.assertGreater(diff["added"] + diff["removed"], 0)
        self.assertContains(response, 'class="diff__added"')

    def test_a_kernel_against_itself_differs_in_nothing(self):
        name = self.generated("xla")[0]["name"]
        response = self.diff(name, name, b="xla")
        self.assertTrue(response.context["diff"]["same_source"])
        self.assertEqual(response.context["diff"]["rows"], [])
        self.assertContains(response, "the same but for the function")

    def test_a_library_kernel_or_an_unknown_one_is_a_404_that_says_why(self):
        library = [k for k in self.compiled.artifact["devices"]["h100"]["strategies"]["xla"]["kernels"]
                   if not k.get("function")]
        name = library[0]["name"] if library else "no-such-kernel"
        response = self.diff(self.generated("xla")[0]["name"], name, b="xla")
        self.assertEqual(response.status_code, 404)
        self.assertEqual(self.diff("x", "y").status_code, 404)

    def test_a_stranger_gets_a_404_and_a_half_query_a_400(self):
        name = self.generated("xla")[0]["name"]
        self.assertEqual(self.diff(name, name, user=self.stranger).status_code, 404)
        self.client.force_login(self.owner)
        self.assertEqual(self.client.get(reverse("explorer-compare-cuda"),
                                         {"a": f"{self.compiled.pk}:h100:xla"}).status_code, 400)

    def test_the_compare_page_links_matched_generated_kernels_to_their_diff(self):
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-compare"), {
            "a": f"{self.compiled.pk}:h100:xla", "b": f"{self.compiled.pk}:h100:unfused"})
        self.assertContains(response, 'class="compare__diff"')
        after = response.content.decode().split('class="compare__diff"', 1)[1]
        href = after.split('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        self.assertTrue(href.startswith("/compare/cuda?a="), href)
        self.client.force_login(self.owner)
        self.assertEqual(self.client.get(href).status_code, 200)     # the link works
