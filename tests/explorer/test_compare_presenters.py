"""Matching two plans' kernels by their nodes, their deltas and what changed in the grouping:
on hand-built plans, and on the real compiler's plans of softmax.hlo."""
import unittest

from compiler.kernels.matching import match_kernels, plan_changes
from explorer import presenters
from tests.explorer.svg_bars import bars
from tests.explorer.access import softmax_artifact


def kernel(name, nodes, proj_us=1.0, sol_us=None):
    return {"name": name, "nodes": list(nodes), "proj_us": proj_us,
            "sol_us": proj_us / 2 if sol_us is None else sol_us}


def plan(*kernels, total_proj=None):
    total_proj = sum(k["proj_us"] for k in kernels) if total_proj is None else total_proj
    return {"kernels": list(kernels),
            "total": {"proj_us": total_proj, "sol_us": total_proj / 2, "dram_bytes": 100,
                      "measured_us": None}}


class MatchKernelsTests(unittest.TestCase):
    def test_kernels_owning_the_same_nodes_match_whatever_their_names(self):
        rows = match_kernels([kernel("loop.0", "ab", 2.0)],
                                        [kernel("fusion.7", "ab", 1.5)])

        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["a"]["name"], rows[0]["b"]["name"]), ("loop.0", "fusion.7"))
        self.assertEqual(rows[0]["overlap"], 1.0)
        self.assertEqual(rows[0]["proj_delta"], -0.5)
        self.assertEqual(rows[0]["status"], "matched")

    def test_the_most_similar_pair_is_matched_first_and_each_kernel_only_once(self):
        a = [kernel("a0", "abcd"), kernel("a1", "ef")]
        b = [kernel("b0", "ab"), kernel("b1", "abc"), kernel("b2", "xyz")]

        rows = match_kernels(a, b)
        pairs = {(row["a"] and row["a"]["name"], row["b"] and row["b"]["name"]) for row in rows}

        self.assertEqual(pairs, {("a0", "b1"), ("a1", None), (None, "b0"), (None, "b2")})
        match = next(row for row in rows if row["status"] == "matched")
        self.assertAlmostEqual(match["overlap"], 3 / 4)

    def test_a_lone_kernel_counts_its_whole_time_as_the_delta(self):
        rows = match_kernels([kernel("a0", "a", 3.0)], [kernel("b0", "b", 2.0)])
        by_status = {row["status"]: row for row in rows}

        self.assertEqual(by_status["only in A"]["proj_delta"], -3.0)
        self.assertEqual(by_status["only in B"]["proj_delta"], 2.0)
        self.assertIsNone(by_status["only in A"]["b_proj_us"])

    def test_rows_come_largest_absolute_projected_delta_first(self):
        a = [kernel("small", "a", 1.0), kernel("big", "b", 10.0), kernel("gone", "c", 4.0)]
        b = [kernel("small", "a", 1.5), kernel("big", "b", 2.0)]

        deltas = [row["proj_delta"] for row in match_kernels(a, b)]

        self.assertEqual(deltas, [-8.0, -4.0, 0.5])


class PlanChangesTests(unittest.TestCase):
    def test_a_kernel_spread_over_several_kernels_is_split_and_the_reverse_merged(self):
        a = [kernel("a0", "abcd"), kernel("a1", "e"), kernel("a2", "f")]
        b = [kernel("b0", "ab"), kernel("b1", "cd"), kernel("b2", "ef")]

        changes = plan_changes(a, b)

        self.assertEqual(changes["split"], [{"kernel": "a0", "parts": [
            {"kernel": "b0", "nodes": ["a", "b"]}, {"kernel": "b1", "nodes": ["c", "d"]}]}])
        self.assertEqual([change["kernel"] for change in changes["merged"]], ["b2"])

    def test_nodes_only_one_plan_has_do_not_make_a_split(self):
        changes = plan_changes([kernel("a0", "abz")], [kernel("b0", "ab")])

        self.assertEqual(changes, {"split": [], "merged": []})


class TotalsAndSidesTests(unittest.TestCase):
    def test_total_rows_give_the_delta_and_ratio_of_b_over_a(self):
        rows = presenters.total_rows(presenters.plan_totals(plan(kernel("a", "a", 4.0))),
                                     presenters.plan_totals(plan(kernel("b", "a", 1.0))))
        projected = next(row for row in rows if row["key"] == "proj_us")

        self.assertEqual((projected["a"], projected["b"]), (4.0, 1.0))
        self.assertEqual(projected["delta"], -3.0)
        self.assertEqual(projected["ratio"], 0.25)
        measured = next(row for row in rows if row["key"] == "measured_us")
        self.assertIsNone(measured["delta"])
        self.assertIsNone(measured["ratio"])

    def test_parse_side_reads_run_device_and_strategy(self):
        self.assertEqual(presenters.parse_side("abc"), ("abc", None, None))
        self.assertEqual(presenters.parse_side("abc:h100"), ("abc", "h100", None))
        self.assertEqual(presenters.parse_side("abc:h100:cost"), ("abc", "h100", "cost"))

    def test_a_side_without_a_strategy_is_the_fastest_plan_of_the_first_device(self):
        artifact = softmax_artifact()
        device, strategy = presenters.default_plan(artifact)
        strategies = artifact["devices"]["a100"]["strategies"]
        fastest = min(result["total"]["proj_us"] for result in strategies.values())

        self.assertEqual(device, "a100")
        self.assertEqual(strategies[strategy]["total"]["proj_us"], fastest)
        self.assertIsNone(presenters.default_plan(artifact, "h100", "nonsense"))
        self.assertIsNone(presenters.default_plan(artifact, "v100"))


class RealPlanTests(unittest.TestCase):
    """xla against stitch on softmax: stitch gathers xla's kernels into one."""

    @classmethod
    def setUpClass(cls):
        strategies = softmax_artifact()["devices"]["h100"]["strategies"]
        cls.xla, cls.stitch = strategies["xla"]["kernels"], strategies["stitch"]["kernels"]

    def test_every_kernel_is_in_exactly_one_row(self):
        rows = match_kernels(self.xla, self.stitch)

        names_a = sorted(row["a"]["name"] for row in rows if row["a"])
        names_b = sorted(row["b"]["name"] for row in rows if row["b"])
        self.assertEqual(names_a, sorted(kernel["name"] for kernel in self.xla))
        self.assertEqual(names_b, sorted(kernel["name"] for kernel in self.stitch))

    def test_the_lone_deltas_and_matched_deltas_add_up_to_the_difference_in_totals(self):
        rows = match_kernels(self.xla, self.stitch)
        kernel_sum = sum(row["proj_delta"] for row in rows)
        expected = (sum(k["proj_us"] for k in self.stitch) - sum(k["proj_us"] for k in self.xla))

        self.assertAlmostEqual(kernel_sum, expected)

    def test_the_stitched_kernel_merges_xlas_kernels(self):
        changes = plan_changes(self.xla, self.stitch)

        self.assertEqual(changes["split"], [])
        merged = changes["merged"][0]
        self.assertEqual(merged["kernel"], self.stitch[0]["name"])
        self.assertEqual(len(merged["parts"]), len(self.xla))

    def test_the_delta_chart_is_horizontal_bars_green_where_b_is_faster(self):
        rows = match_kernels(self.xla, self.stitch)
        drawn = bars(presenters.kernel_delta_chart(rows))

        changed = [row for row in rows if row["proj_delta"]][:20]
        self.assertEqual([bar["value"] for bar in drawn], [row["proj_delta"] for row in changed])
        zero = next(bar["x"] + bar["width"] for bar in drawn if bar["value"] < 0) \
            if any(bar["value"] < 0 for bar in drawn) else None
        for bar in drawn:
            self.assertEqual(bar["fill"], presenters.FASTER_COLOUR if bar["value"] < 0
                             else presenters.SLOWER_COLOUR)
            if zero is not None and bar["value"] < 0:    # faster: to the left of zero
                self.assertAlmostEqual(bar["x"] + bar["width"], zero, delta=0.15)

    def test_two_identical_plans_have_no_chart_and_no_changes(self):
        rows = match_kernels(self.xla, self.xla)

        self.assertTrue(all(row["overlap"] == 1.0 for row in rows))
        self.assertIsNone(presenters.kernel_delta_chart(rows))
        self.assertEqual(plan_changes(self.xla, self.xla),
                         {"split": [], "merged": []})


class BestTotalsTests(unittest.TestCase):
    def test_it_gives_each_devices_lowest_projected_strategy(self):
        best = presenters.best_totals(softmax_artifact())

        self.assertEqual([entry["device"] for entry in best], ["a100", "h100"])
        for entry in best:
            strategies = softmax_artifact()["devices"][entry["device"]]["strategies"]
            lowest = min(result["total"]["proj_us"] for result in strategies.values())
            self.assertEqual(entry["proj_us"], lowest)

    def test_a_run_without_results_has_none(self):
        self.assertEqual(presenters.best_totals(None), [])
