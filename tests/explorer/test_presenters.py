"""explorer.presenters on an artifact the real compiler produced (attention_block.hlo)."""
import copy
import json
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from compiler.cost.outliers import OUTLIER_RATIO
from compiler.target.devices import get_device
from compiler.target.occupancy import occupancy
from explorer import presenters
from tests.explorer.svg_bars import bars
from tests.explorer.outliers import before_cost_models, with_outliers

ROOT = Path(__file__).resolve().parents[2]
GRAPH = ROOT / "tests" / "data" / "hlo" / "attention_block.hlo"
DEVICES = ("h100", "a100")


def compile_artifact() -> dict:
    """The ARTIFACT shape: one `codegen --json` object per device."""
    devices = {}
    for device in DEVICES:
        output = subprocess.run(
            [sys.executable, "-m", "compiler", "codegen", str(GRAPH), "--device", device,
             "--strategy", "all", "--json"],
            cwd=ROOT, check=True, capture_output=True, text=True).stdout
        devices[device] = json.loads(output)
    return {"compiler_version": "test", "graph": devices["h100"]["graph"], "devices": devices}


ARTIFACT: dict = {}

STREAMING = """
HloModule streaming_add
ENTRY main {
  a = f32[4096,4096] parameter(0)
  b = f32[4096,4096] parameter(1)
  ROOT c = f32[4096,4096] add(a, b)
}
"""


def streaming_kernels() -> list[dict]:
    """The generated kernels of a 64 MB elementwise sum, as `codegen --json` gives them."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "streaming_add.hlo"
        path.write_text(STREAMING)
        output = subprocess.run(
            [sys.executable, "-m", "compiler", "codegen", str(path), "--device", "h100",
             "--strategy", "cost", "--json"], cwd=ROOT, check=True, capture_output=True,
            text=True).stdout
    kernels = json.loads(output)["strategies"]["cost"]["kernels"]
    return [kernel for kernel in kernels if kernel["function"] and kernel["projected"]]


def setUpModule():
    ARTIFACT.update(compile_artifact())


def generated_kernels(strategy="cost", device="h100"):
    kernels = ARTIFACT["devices"][device]["strategies"][strategy]["kernels"]
    return [kernel for kernel in kernels if kernel["function"] and kernel["projected"]]


class ComparisonTests(unittest.TestCase):
    def test_it_lists_every_strategy_in_the_usual_order(self):
        rows = presenters.comparison_rows(ARTIFACT["devices"]["h100"])

        self.assertEqual([row["strategy"] for row in rows], ["unfused", "xla", "stitch", "cost"])

    def test_a_strategy_that_made_no_plan_is_listed_with_why_and_is_never_fastest(self):
        """xla-gpu where XLA's CUDA plugin is missing: no kernels, null totals, a reason."""
        result = copy.deepcopy(ARTIFACT["devices"]["h100"])
        result["strategies"]["xla-gpu"] = {
            **result["strategies"]["xla"], "kernels": [], "kernel_count": 0,
            "decisions": [], "unavailable": "XLA:GPU cannot compile here without a GPU",
            "total": {"sol_us": None, "proj_us": None, "measured_us": None,
                      "dram_bytes": None, "learned_us": None, "learned_kernels": None}}
        rows = presenters.comparison_rows(result)

        self.assertEqual([row["strategy"] for row in rows],
                         ["unfused", "xla", "stitch", "cost", "xla-gpu"])
        last = rows[-1]
        self.assertEqual(last["unavailable"], "XLA:GPU cannot compile here without a GPU")
        self.assertFalse(last["fastest"])
        self.assertIsNone(last["speedup_vs_xla"])
        self.assertTrue(all(row["unavailable"] is None for row in rows[:-1]))
        self.assertEqual(presenters.default_plan({"devices": {"h100": result}}, "h100")[1],
                         min(rows[:-1], key=lambda row: row["proj_us"])["strategy"])
        presenters.comparison_charts(rows)   # draws the others, skips the empty one

    def test_its_figures_are_the_artifacts_totals(self):
        result = ARTIFACT["devices"]["a100"]
        for row in presenters.comparison_rows(result):
            strategy = result["strategies"][row["strategy"]]
            self.assertEqual(row["kernels"], len(strategy["kernels"]))
            self.assertEqual(row["dram_bytes"], strategy["total"]["dram_bytes"])
            self.assertEqual(row["sol_us"], strategy["total"]["sol_us"])
            self.assertEqual(row["proj_us"], strategy["total"]["proj_us"])

    def test_the_strategies_with_the_lowest_projected_total_are_marked_fastest(self):
        rows = presenters.comparison_rows(ARTIFACT["devices"]["h100"])
        lowest = min(row["proj_us"] for row in rows)

        self.assertEqual([row["fastest"] for row in rows],
                         [row["proj_us"] == lowest for row in rows])
        self.assertTrue(any(row["fastest"] for row in rows))

    def test_speedups_are_the_baselines_total_over_the_strategys(self):
        result = ARTIFACT["devices"]["h100"]
        totals = {name: s["total"]["proj_us"] for name, s in result["strategies"].items()}
        for row in presenters.comparison_rows(result):
            total = totals[row["strategy"]]
            self.assertAlmostEqual(row["speedup_vs_unfused"], totals["unfused"] / total)
            self.assertAlmostEqual(row["speedup_vs_xla"], totals["xla"] / total)
        by_name = {row["strategy"]: row for row in presenters.comparison_rows(result)}
        self.assertEqual(by_name["unfused"]["speedup_vs_unfused"], 1.0)
        self.assertGreater(by_name["cost"]["speedup_vs_unfused"], 1.0)

    def test_unmeasured_runs_have_no_measured_figures_and_no_measured_bars(self):
        result = ARTIFACT["devices"]["h100"]
        rows = presenters.comparison_rows(result)
        charts = dict(presenters.comparison_charts(rows))

        self.assertEqual(list(charts), ["graph", "stream"])
        self.assertTrue(all(row["measured_us"] is None for row in rows))
        self.assertTrue(all(row["measured_speedup_vs_unfused"] is None for row in rows))
        for runtime, chart in charts.items():
            drawn = bars(chart)
            self.assertEqual({bar["series"] for bar in drawn}, {"SOL", "projected"})
            # One bar per strategy and series, as tall as its total under the runtime (the
            # artifact's), heights in proportion.
            expected = {(row["strategy"], "SOL"): row["sol_us"] for row in rows} | \
                {(name, "projected"): s["total"]["runtimes"][runtime]["proj_us"]
                 for name, s in result["strategies"].items()}
            self.assertEqual({(b["category"], b["series"]): b["value"] for b in drawn},
                             expected)
            scale = max(drawn, key=lambda b: b["value"])
            scale = scale["height"] / scale["value"]
            for bar in drawn:
                self.assertAlmostEqual(bar["height"], bar["value"] * scale, delta=0.15)

    def test_measured_totals_give_measured_speedups_and_bars(self):
        result = copy.deepcopy(ARTIFACT["devices"]["h100"])
        result["strategies"]["unfused"]["total"]["measured_us"] = 120.0
        result["strategies"]["cost"]["total"]["measured_us"] = 40.0
        rows = {row["strategy"]: row for row in presenters.comparison_rows(result)}
        charts = dict(presenters.comparison_charts(list(rows.values())))

        self.assertAlmostEqual(rows["cost"]["measured_speedup_vs_unfused"], 3.0)
        self.assertIsNone(rows["cost"]["measured_speedup_vs_xla"])
        # The runner times plans launched in a stream: the stream figures have them, a CUDA
        # graph's do not.
        stream = dict(rows["cost"]["by_runtime"])["stream"]
        self.assertAlmostEqual(stream["measured_speedup_vs_unfused"], 3.0)
        self.assertIsNone(dict(rows["cost"]["by_runtime"])["graph"]["measured_us"])
        measured = [(b["category"], b["value"]) for b in bars(charts["stream"])
                    if b["series"] == "measured"]
        self.assertEqual(measured, [("unfused", 120.0), ("cost", 40.0)])
        self.assertFalse([b for b in bars(charts["graph"]) if b["series"] == "measured"])


class MeasuredGraphReplayTests(unittest.TestCase):
    """A GPU worker times every plan back to back in a stream and replayed as one CUDA graph
    (compiler/runtime/gpu.py): each runtime's measured column shows its own timing, and a
    missing one says why."""

    def measured(self, cost_run: dict) -> dict:
        measurement = {"gpu": "NVIDIA H100 80GB HBM3", "devices": {"h100": {
            "matches_gpu": True, "eager": None,
            "strategies": {"cost": {"kernels": [], "total_us": 50.0, **cost_run}}}}}
        merged = presenters.apply_measurement(ARTIFACT["devices"], measurement)["h100"]
        rows = {row["strategy"]: row for row in presenters.comparison_rows(merged)}
        return dict(rows["cost"]["by_runtime"])

    def test_the_graph_runtime_shows_the_replay_and_the_stream_runtime_the_back_to_back_run(self):
        figures = self.measured({"end_to_end": {"median_us": 48.0},
                                 "graph_replay": {"median_us": 31.0},
                                 "graph_not_measured": None, "not_measured": None})
        self.assertEqual(figures["stream"]["measured_us"], 48.0)
        self.assertEqual(figures["graph"]["measured_us"], 31.0)
        self.assertIsNone(figures["graph"]["not_measured"])

    def test_a_failed_capture_keeps_the_stream_time_and_says_why_the_graph_has_none(self):
        why = "not measured as a CUDA graph replay: the capture failed: RuntimeError: ..."
        figures = self.measured({"end_to_end": {"median_us": 48.0}, "graph_replay": None,
                                 "graph_not_measured": why, "not_measured": None})
        self.assertEqual(figures["stream"]["measured_us"], 48.0)
        self.assertIsNone(figures["graph"]["measured_us"])
        self.assertEqual(figures["graph"]["not_measured"], why)

    def test_a_measurement_made_before_graph_replays_says_it_timed_a_stream_only(self):
        figures = self.measured({"end_to_end": {"median_us": 48.0}, "not_measured": None})
        self.assertEqual(figures["stream"]["measured_us"], 48.0)
        self.assertIsNone(figures["graph"]["measured_us"])
        self.assertEqual(figures["graph"]["not_measured"], presenters.GRAPH_NOT_TIMED)

    def test_a_library_calls_kernel_page_shows_its_replay_and_its_stream_time(self):
        kernel = {"name": "library.0", "device_us": 8.0, "sol_us": 6.0, "measured_device_us":
                  None, "measured": {"measured_us": 10.0, "clock": "graph replay",
                                     "timing": {"median_us": 42.0, "min_us": 40.0},
                                     "replay": {"median_us": 10.0, "min_us": 9.5, "runs": 20},
                                     "mismatches": []}}
        rows = {label: value for label, value, _ in presenters.measured_rows(kernel)}
        self.assertEqual(rows["replayed alone as a CUDA graph (median)"], 10.0)
        self.assertEqual(rows["launched on the stream (median)"], 42.0)
        self.assertEqual(rows["fastest run"], 9.5)
        self.assertNotIn("timed alone (median)", rows)


class DecidedByTests(unittest.TestCase):
    def test_the_cost_strategy_is_decided_by_its_cost_model_and_the_others_by_rules(self):
        rows = {row["strategy"]: row["decided_by"]
                for row in presenters.comparison_rows(ARTIFACT["devices"]["h100"])}

        self.assertEqual(rows["cost"]["model"], "projected")
        self.assertEqual(rows["cost"]["label"], "projected model")
        self.assertIn("projected time of its best CodeGen plan", rows["cost"]["detail"])
        self.assertEqual({name: (row["label"], row["detail"]) for name, row in rows.items()
                          if name != "cost"},
                         {"unfused": ("rules", "one kernel per op"),
                          "xla": ("rules", "XLA's fusion rules"),
                          "stitch": ("rules", "AStitch's stitching rules")})

    def test_each_cost_model_has_its_own_name(self):
        labels = {model: presenters.decided_by("cost", {"cost_model": model})["label"]
                  for model in ("projected", "sol", "learned", "measured")}

        self.assertEqual(labels, {"projected": "projected model", "sol": "SOL model",
                                  "learned": "learned model", "measured": "measured model"})

    def test_a_plan_stored_before_cost_models_were_recorded_names_no_decider(self):
        old = before_cost_models(ARTIFACT)["devices"]["h100"]

        self.assertEqual([row["decided_by"] for row in presenters.comparison_rows(old)],
                         [None] * 4)


def flagged_plan(ratios: list[float]) -> dict:
    """The h100 unfused plan with its first kernels flagged at these ratios."""
    return with_outliers(ARTIFACT, "h100", "unfused", ratios)["devices"]["h100"][
        "strategies"]["unfused"]


class OutlierTests(unittest.TestCase):
    def test_the_compilers_plans_of_the_test_graph_have_no_outliers(self):
        for plan in ARTIFACT["devices"]["h100"]["strategies"].values():
            self.assertIsNone(presenters.outlier_summary(plan))

    def test_outliers_come_highest_ratio_first_with_their_reasons_and_links(self):
        plan = flagged_plan([25.0, 220.0, 40.0])
        summary = presenters.outlier_summary(plan)

        kernels = plan["kernels"]
        self.assertEqual(summary["count"], 3)
        self.assertEqual(summary["threshold"], OUTLIER_RATIO)
        self.assertEqual([row["name"] for row in summary["listed"]],
                         [kernels[1]["name"], kernels[2]["name"], kernels[0]["name"]])
        self.assertEqual([row["reason"] for row in summary["listed"]],
                         [kernels[i]["outlier_reason"] for i in (1, 2, 0)])
        self.assertEqual(summary["listed"][0]["proj_over_sol"], 220.0)
        self.assertEqual(summary["more"], 0)

    def test_the_list_stops_at_ten_and_counts_the_rest(self):
        ratios = [20.0 + i for i in range(14)]
        summary = presenters.outlier_summary(flagged_plan(ratios))

        self.assertEqual(summary["count"], 14)
        self.assertEqual(len(summary["listed"]), presenters.OUTLIERS_LISTED)
        self.assertEqual(summary["more"], 4)
        self.assertEqual([row["proj_over_sol"] for row in summary["listed"]],
                         sorted(ratios, reverse=True)[:10])

    def test_equal_ratios_put_the_longer_kernel_first(self):
        plan = flagged_plan([30.0, 30.0])
        plan["kernels"][1]["proj_us"] += 1.0
        names = [row["name"] for row in presenters.outlier_summary(plan)["listed"]]

        self.assertEqual(names, [plan["kernels"][1]["name"], plan["kernels"][0]["name"]])

    def test_kernel_rows_carry_the_ratio_and_the_outliers_reason(self):
        plan = flagged_plan([220.0])
        rows = presenters.kernel_rows(plan)

        self.assertEqual(rows[0]["proj_over_sol"], 220.0)
        self.assertTrue(rows[0]["outlier_reason"].startswith("projected "))
        self.assertEqual([row["proj_over_sol"] for row in rows[1:]],
                         [kernel["proj_over_sol"] for kernel in plan["kernels"][1:]])
        self.assertTrue(all(row["outlier_reason"] is None for row in rows[1:]))

    def test_a_plan_stored_before_the_flag_has_no_ratios_and_no_outliers(self):
        plan = before_cost_models(ARTIFACT)["devices"]["h100"]["strategies"]["cost"]
        rows = presenters.kernel_rows(plan)

        self.assertIsNone(presenters.outlier_summary(plan))
        self.assertTrue(all(row["proj_over_sol"] is None and row["outlier_reason"] is None
                            for row in rows))

    def test_ratios_read_with_one_decimal_until_they_are_large(self):
        cases = {1.44: "1.4×", 1.0: "1.0×", 9.94: "9.9×", 9.96: "10×", 23.4: "23×",
                 220.0: "220×", 1250.4: "1,250×", None: "–"}

        self.assertEqual({value: presenters.sol_ratio(value) for value in cases}, cases)


class KernelTableTests(unittest.TestCase):
    def test_it_has_one_row_per_kernel_with_the_artifacts_numbers(self):
        strategy = ARTIFACT["devices"]["h100"]["strategies"]["stitch"]
        rows = presenters.kernel_rows(strategy)

        self.assertEqual(len(rows), len(strategy["kernels"]))
        for row, kernel in zip(rows, strategy["kernels"]):
            self.assertEqual(row["name"], kernel["name"])
            self.assertEqual(row["node_count"], len(kernel["nodes"]))
            self.assertEqual(row["proj_us"], kernel["proj_us"])
            self.assertEqual(row["occupancy"], kernel["occupancy"])
            self.assertIsNone(row["model_error"])

    def test_the_model_error_is_relative_to_the_measurement(self):
        self.assertAlmostEqual(presenters.model_error(3.3, 3.0), 0.1)
        self.assertIsNone(presenters.model_error(3.3, None))

    def test_decisions_keep_their_reasons(self):
        strategy = ARTIFACT["devices"]["h100"]["strategies"]["xla"]
        rows = presenters.decision_rows(strategy)

        self.assertEqual(len(rows), len(strategy["decisions"]))
        self.assertTrue(all(row["reason"] for row in rows))
        self.assertIn("fuse", presenters.decision_actions(rows))

    def test_a_decision_names_the_kernels_that_hold_the_nodes_of_its_subject(self):
        strategy = {"kernels": [{"name": "loop.3", "nodes": ["exp.1", "div.2"]},
                                {"name": "input.7", "nodes": ["reduce.4"]},
                                {"name": "loop.8", "nodes": ["exp.1", "neg.9"]}],
                    "decisions": [
                        {"action": "fuse", "subject": "exp.1 -> div.2", "reason": "r"},
                        {"action": "refuse", "subject": "div.2 + reduce.4 (both read p.0)",
                         "reason": "r"},
                        {"action": "refuse", "subject": "seed from the xla plan", "reason": "r"}]}

        self.assertEqual([row["kernels"] for row in presenters.decision_rows(strategy)],
                         [["loop.3", "loop.8"], ["loop.3", "input.7"], []])


class KernelPageTests(unittest.TestCase):
    def test_occupancy_curves_agree_with_the_calculator_and_the_artifact(self):
        device = get_device("h100")
        for kernel in generated_kernels():
            curves = presenters.occupancy_curves(kernel, device)
            current = curves["current"]
            self.assertEqual(current["occupancy"], kernel["occupancy"])
            launch = {key: current[key] for key in ("threads_per_block", "registers_per_thread",
                                                    "shared_static_bytes", "shared_dynamic_bytes")}
            self.assertEqual(occupancy(device, **launch).occupancy, current["occupancy"])
            for key in ("registers", "block_size", "shared"):
                curve = curves[key]
                at = curve["x"].index(curve["current_x"]) if curve["current_x"] in curve["x"] \
                    else None
                if at is not None:
                    self.assertEqual(curve["y"][at], current["occupancy"], key)

    def test_more_registers_never_raise_occupancy(self):
        kernel = generated_kernels()[0]
        curve = presenters.occupancy_curves(kernel, get_device("a100"))["registers"]
        values = [y for y in curve["y"] if y is not None]

        self.assertEqual(values, sorted(values, reverse=True))
        self.assertEqual(len(curve["x"]), 255)

    def test_a_library_call_has_no_occupancy_curves(self):
        kernels = ARTIFACT["devices"]["h100"]["strategies"]["cost"]["kernels"]
        library = next(kernel for kernel in kernels if kernel["kind"] == "library")

        self.assertIsNone(presenters.occupancy_curves(library, get_device("h100")))

    def test_the_roofline_point_is_flops_over_bytes_and_over_time(self):
        device = get_device("h100")
        kernel = generated_kernels()[0]
        point = presenters.roofline(kernel, device)
        breakdown = kernel["projected"]

        self.assertAlmostEqual(point["intensity"], breakdown["flops"] / breakdown["dram_bytes"])
        # Flops over the device work: the launch is not the kernel's time on the GPU.
        self.assertAlmostEqual(point["projected_flops"],
                               breakdown["flops"] / (kernel["device_us"] * 1e-6))
        self.assertEqual(point["peak_flops"], device.peak_fp32_flops)
        self.assertIsNone(point["measured_flops"])
        svg = str(presenters.roofline_chart(point))
        marker = re.search(r'<circle class="chart__point"[^>]*data-label="projected" '
                           r'data-x="([^"]+)" data-y="([^"]+)"', svg)
        self.assertAlmostEqual(float(marker[1]), point["intensity"])
        self.assertAlmostEqual(float(marker[2]) * 1e9, point["projected_flops"], delta=1)
        # Under the roof: at most the bandwidth times the intensity, at most the peak.
        self.assertLessEqual(float(marker[2]) * 1e9, min(
            device.peak_fp32_flops, point["intensity"] * device.dram_bytes_per_s) * 1.000001)

    def test_pipe_utilisation_marks_the_limiter(self):
        # attention_block's kernels are all latency-bound (a few KB each): a 64 MB sum is
        # DRAM-bound, so its chart has a bar to mark.
        kernel = next(k for k in streaming_kernels()
                      if k["limiter"] in k["projected"]["utilisation"])
        drawn = bars(presenters.pipe_utilisation_chart(kernel))
        colours = {bar["category"]: bar["fill"] for bar in drawn}

        self.assertEqual(colours.keys(), kernel["projected"]["utilisation"].keys())
        for bar in drawn:
            self.assertAlmostEqual(bar["value"], kernel["projected"]["utilisation"][bar["category"]])
        self.assertEqual(colours[kernel["limiter"]], presenters.HIGHLIGHT_COLOUR)
        self.assertEqual(list(colours.values()).count(presenters.HIGHLIGHT_COLOUR), 1)

    def test_the_breakdown_takes_units_out_of_its_labels(self):
        kernel = generated_kernels()[0]
        rows = {label: (value, unit) for label, value, unit in
                presenters.breakdown_rows(kernel)}

        self.assertEqual(rows["latency"], (kernel["projected"]["latency_us"], "µs"))
        self.assertEqual(rows["limiter"], (kernel["projected"]["limiter"], ""))
        # Sizes in binary units, occupancy in %, intensity in flop/byte, waves to 0.01.
        dram = kernel["projected"]["dram_bytes"]
        self.assertEqual(rows["dram"], (f"{dram / 1024:.1f} KiB" if dram >= 1024
                                        else f"{dram} B", ""))
        self.assertEqual(rows["occupancy"],
                         (f"{100 * kernel['projected']['occupancy']:.1f}", "%"))
        self.assertEqual(rows["waves"], (f"{kernel['projected']['waves']:.2f}", ""))
        self.assertEqual(rows["arithmetic intensity"][1], "flop/byte")

    def test_a_grid_that_leaves_sms_idle_says_how_many_it_uses(self):
        kernel = {"projected": {"sms_used": 8}}
        self.assertEqual(presenters.sms_used(kernel, 132), "8 of 132 SMs")
        self.assertIsNone(presenters.sms_used({"projected": {"sms_used": 132}}, 132))
        self.assertIsNone(presenters.sms_used({"projected": None}, 132))
        rows = presenters.kernel_rows({"kernels": [
            {**k, "projected": {**(k.get("projected") or {}), "sms_used": 3}}
            for k in generated_kernels()]}, 108)
        self.assertTrue(all(row["sms_used"] == "3 of 108 SMs" for row in rows))

    def test_sizes_are_written_in_binary_units(self):
        self.assertEqual([presenters.format_bytes(n) for n in
                          (None, 0, 1023, 1024, 856064, 3 * 1024 ** 2 // 2, 5 * 1024 ** 3)],
                         ["–", "0 B", "1023 B", "1.0 KiB", "836.0 KiB", "1.5 MiB", "5.0 GiB"])

    def test_candidate_plans_come_fastest_first_with_the_emitted_one_marked(self):
        for kernel in generated_kernels():
            rows = presenters.candidate_rows(kernel, kernel["candidate_plans"])
            times = [row["projected_us"] for row in rows]
            projected = [time for time in times if time is not None]
            self.assertEqual(len(rows), len(kernel["candidate_plans"]))
            # plans the model could not project come last
            self.assertEqual(times, sorted(projected) + [None] * (len(times) - len(projected)))
            chosen = [row for row in rows if row["chosen"]]
            self.assertEqual(len(chosen), 1)
            self.assertEqual(chosen[0]["block_size"], kernel["block_size"])

    def test_source_lines_and_node_lines_are_inverse_maps(self):
        line_nodes = {"2": ["add.1", "mul.2"], "4": ["add.1"]}
        lines = presenters.source_lines("a\nb\nc\nd", line_nodes)

        self.assertEqual([line["nodes"] for line in lines], [[], ["add.1", "mul.2"], [], ["add.1"]])
        self.assertEqual(presenters.node_lines(line_nodes), {"add.1": [2, 4], "mul.2": [2]})

    def test_find_kernel_looks_a_kernel_up_by_device_strategy_and_name(self):
        kernel = generated_kernels("xla", "a100")[0]

        self.assertIs(presenters.find_kernel(ARTIFACT, "a100", "xla", kernel["name"]), kernel)
        self.assertIsNone(presenters.find_kernel(ARTIFACT, "v100", "xla", kernel["name"]))


class RuntimeTests(unittest.TestCase):
    """Launch terms on the pages: both runtimes' totals, the verdicts, why the fastest plan is
    faster, and the labels that follow the numbers."""

    def result(self) -> dict:
        return copy.deepcopy(ARTIFACT["devices"]["h100"])

    def test_every_row_has_each_runtimes_totals_and_the_fastest_under_each(self):
        result = self.result()
        rows = presenters.comparison_rows(result)
        for runtime in ("graph", "stream"):
            totals = {name: s["total"]["runtimes"][runtime]
                      for name, s in result["strategies"].items()}
            lowest = min(t["proj_us"] for t in totals.values())
            for row in rows:
                figures = dict(row["by_runtime"])[runtime]
                self.assertEqual(figures["proj_us"], totals[row["strategy"]]["proj_us"])
                self.assertEqual(figures["launch_us"], totals[row["strategy"]]["launch_us"])
                self.assertEqual(runtime in row["fastest_in"], figures["proj_us"] == lowest)
                self.assertAlmostEqual(figures["speedup_vs_unfused"],
                                       totals["unfused"]["proj_us"] / figures["proj_us"])
            # Stream launches cost more than graph nodes: every plan is slower as a stream.
            for row in rows:
                self.assertGreater(dict(row["by_runtime"])["stream"]["proj_us"],
                                   dict(row["by_runtime"])["graph"]["proj_us"])

    def test_an_artifact_compiled_before_launch_terms_has_one_set_of_figures(self):
        result = self.result()
        for strategy in result["strategies"].values():
            strategy["total"].pop("runtimes")
            for kernel in strategy["kernels"]:
                for key in ("device_us", "launch", "launch_us", "device_limiter"):
                    kernel.pop(key)
        rows = presenters.comparison_rows(result)
        self.assertEqual([[runtime for runtime, _ in row["by_runtime"]] for row in rows],
                         [[None]] * len(rows))
        self.assertTrue(any(row["fastest_in"] == ["compiled"] for row in rows))
        kernel_row = presenters.kernel_rows(result["strategies"]["cost"])[0]
        self.assertEqual(kernel_row["launch"], [(None, None)])
        self.assertEqual(kernel_row["device_us"], result["strategies"]["cost"]["kernels"][0][
            "proj_us"])
        self.assertIsNone(presenters.why_faster(result, rows, "graph"))

    def test_the_verdict_says_when_the_models_pick_different_plans(self):
        result = self.result()
        names = list(result["strategies"])
        fastest = min(names, key=lambda n: result["strategies"][n]["total"]["runtimes"][
            "graph"]["proj_us"])
        other = next(n for n in names if n != fastest)
        # A learned model that ranks another plan first, with its held-out figures.
        for name, strategy in result["strategies"].items():
            for runtime, figures in strategy["total"]["runtimes"].items():
                figures["learned_us"] = 1.0 if name == other else 100.0
        learned = {"label": "learned-h100-v2", "origin": "measured", "device": "h100",
                   "evaluation": {"program": {
                       "learned": {"mape": 8.8, "mean_kendall_tau": 0.47},
                       "projected": {"mape": 12.8, "mean_kendall_tau": 0.24},
                       "sol": {"mape": 20.5, "mean_kendall_tau": None},
                       "test_programs": ["layer_norm_fwd"]}}}
        verdicts = {v["runtime"]: v for v in presenters.verdicts(
            presenters.comparison_rows(result), learned)}
        graph = verdicts["graph"]
        self.assertFalse(graph["agree"])
        self.assertEqual([(p["model"], p["strategy"]) for p in graph["picks"]],
                         [("projected", fastest), ("learned", other)])
        self.assertIn(f"projected picks {fastest}", graph["text"])
        self.assertIn(f"learned picks {other} (1.0 µs)", graph["text"])
        self.assertIn("learned: MAPE 8.8 %, ranking τ 0.47", graph["models"])
        self.assertIn("projected: MAPE 12.8 %, ranking τ 0.24", graph["models"])
        self.assertIn("layer_norm_fwd", graph["models"])

    def test_a_learned_model_without_a_total_for_every_plan_picks_none(self):
        result = self.result()
        names = list(result["strategies"])
        fastest = min(names, key=lambda n: result["strategies"][n]["total"]["runtimes"][
            "graph"]["proj_us"])
        other = next(n for n in names if n != fastest)
        # The model predicted none of the fastest plan's kernels (outside its training): its
        # cheapest total among the rest is no pick.
        for name, strategy in result["strategies"].items():
            for figures in strategy["total"]["runtimes"].values():
                figures["learned_us"] = (None if name == fastest
                                         else 1.0 if name == other else 100.0)
        graph = {v["runtime"]: v for v in presenters.verdicts(
            presenters.comparison_rows(result), None)}["graph"]
        self.assertEqual([p["model"] for p in graph["picks"]], ["projected"])
        self.assertTrue(graph["agree"])
        self.assertNotIn("learned", graph["text"])

    def test_the_verdict_agrees_quietly_and_says_when_no_model_checks_it(self):
        rows = presenters.comparison_rows(self.result())
        verdict = presenters.verdicts(rows, None)[0]
        self.assertTrue(verdict["agree"])
        self.assertIn("no other model to check it", verdict["text"])
        self.assertIn("no held-out figures", verdict["models"])

    def test_a_measurement_picks_a_plan_under_stream_launches_only(self):
        result = self.result()
        names = list(result["strategies"])
        for index, name in enumerate(names):
            result["strategies"][name]["total"]["measured_us"] = 10.0 + index
        verdicts = {v["runtime"]: v for v in presenters.verdicts(
            presenters.comparison_rows(result), None)}
        self.assertIn(("measured", names[0]),
                      [(p["model"], p["strategy"]) for p in verdicts["stream"]["picks"]])
        self.assertNotIn("measured", [p["model"] for p in verdicts["graph"]["picks"]])

    def test_why_faster_compares_the_fastest_plan_with_xla_and_adds_up(self):
        result = self.result()
        rows = presenters.comparison_rows(result)
        why = presenters.why_faster(result, rows, "graph")
        totals = {name: s["total"]["runtimes"] for name, s in result["strategies"].items()}
        self.assertEqual(why["a"], "xla")
        self.assertEqual(why["b"], min(totals, key=lambda n: totals[n]["graph"]["proj_us"]))
        for runtime, explanation in why["by_runtime"]:
            self.assertAlmostEqual(explanation["delta_us"], totals[why["b"]][runtime]["proj_us"]
                                   - totals["xla"][runtime]["proj_us"], places=2)
            self.assertIn(f"{why['b']} is", explanation["summary"])

    def test_a_kernel_whose_launch_outweighs_its_work_is_launch_bound(self):
        """The 24 KiB dot labelled "dram" at 8 GB/s, and the kernels "100 % fp32" at a twentieth
        of their roof, were kernels of a few nanoseconds of work behind a microsecond launch:
        their limiter is the launch, under each runtime where it outweighs the work."""
        strategy = ARTIFACT["devices"]["h100"]["strategies"]["unfused"]
        rows = presenters.kernel_rows(strategy, get_device("h100").sm_count)
        library = [(row, kernel) for row, kernel in zip(rows, strategy["kernels"])
                   if kernel["kind"] == "library"]
        self.assertTrue(library)
        for row, kernel in library:
            self.assertEqual(dict(row["limiters"]), {"graph": "launch", "stream": "launch"})
            self.assertEqual(kernel["limiter"], "launch")
            self.assertLess(kernel["device_us"], kernel["launch"]["graph"])
        for row, kernel in zip(rows, strategy["kernels"]):
            for runtime, limiter in row["limiters"]:
                launch_bound = kernel["launch"][runtime] > kernel["device_us"]
                self.assertEqual(limiter == "launch", launch_bound)

    def test_the_kernel_page_gives_one_occupancy_the_emitted_plans_beside_the_sms_used(self):
        device = get_device("h100")
        for kernel in generated_kernels():
            figures = presenters.kernel_figures(kernel, device)
            breakdown = kernel["projected"]
            self.assertEqual(figures["occupancy"], breakdown["occupancy"])
            self.assertEqual(figures["occupancy_source"], "ptxas' registers")
            self.assertEqual(figures["sms_used"], breakdown["sms_used"])
            self.assertEqual([launch for _, _, launch in figures["launches"]],
                             [kernel["launch"]["graph"], kernel["launch"]["stream"]])
            # The candidate table's emitted row shows the same registers and occupancy.
            rows = presenters.candidate_rows(kernel, kernel["candidate_plans"])
            (emitted,) = [row for row in rows if row["chosen"]]
            self.assertEqual((emitted["registers"], emitted["registers_source"]),
                             (kernel["registers"], "ptxas"))
            self.assertEqual(emitted["occupancy"], figures["occupancy"])
            self.assertEqual(emitted["projected_us"], kernel["device_us"])

    def test_candidate_rows_differ_in_what_they_show(self):
        for kernel in generated_kernels() + generated_kernels("stitch"):
            candidates = kernel["candidate_plans"]
            rows = presenters.candidate_rows(kernel, candidates + candidates[:3])
            shown = [tuple(row[field] for field in presenters.PLAN_FIELDS) for row in rows]
            self.assertEqual(len(shown), len(set(shown)))
            self.assertEqual(len(rows), len(candidates))
