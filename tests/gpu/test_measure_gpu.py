"""compiler.stages.measure.measure_graph on a real GPU: what a GPU worker stores for a measurement.
Timings are reported (gpu_report), never asserted beyond being positive."""
import json
from pathlib import Path

import pytest

from compiler.stages.measure import gpu_matches_device, measure_graph
from compiler.stages.pipeline import compile_graph

SOFTMAX = Path(__file__).resolve().parents[1] / "data" / "hlo" / "softmax.hlo"
STRATEGIES = ["unfused", "xla", "cost"]


@pytest.mark.timeout(600)
def test_every_plan_is_checked_and_timed_with_the_eager_baseline(gpu_device, gpu_report):
    progress = []
    result = measure_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], STRATEGIES,
                           progress=lambda *event: progress.append(event))

    json.dumps(result)  # stored as JSON as it is
    assert result["gpu"] == gpu_device
    assert [stage for stage, _, _ in progress][-1] == "measure"
    measured = result["devices"]["h100"]
    assert measured["matches_gpu"] == gpu_matches_device(gpu_device, "h100")
    # The kernels measured are the kernels the run's pages show.
    artifact = compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], STRATEGIES)
    for strategy in STRATEGIES:
        plan = measured["strategies"][strategy]
        shown = artifact["devices"]["h100"]["strategies"][strategy]["kernels"]
        assert [k["name"] for k in plan["kernels"]] == [k["name"] for k in shown]
        for kernel in plan["kernels"]:
            assert kernel["mismatches"] == [], kernel
            assert kernel["measured_us"] is None or kernel["measured_us"] > 0
        if plan["end_to_end"]:
            gpu_report.append(f"softmax {strategy} on {gpu_device}: "
                              f"{plan['end_to_end']['median_us']:.2f} us back to back, "
                              f"{len(plan['kernels'])} kernels")
    eager = measured["eager"]
    assert eager["measured_us"] > 0, eager["not_measured"]
    gpu_report.append(f"softmax eager CuPy on {gpu_device}: {eager['measured_us']:.2f} us")



@pytest.mark.timeout(600)
def test_a_saved_plan_is_measured_beside_the_strategies_and_one_that_no_longer_applies_left_out(
        gpu_device, gpu_report):
    from compiler.fusion.explore import explore
    from compiler.importers import import_bytes
    from compiler.stages.whatif import WhatIf

    graph = import_bytes(SOFTMAX.read_bytes(), SOFTMAX.name)[0]
    unfused = explore(graph, "h100", ["unfused"])["unfused"].to_dict()
    session = WhatIf(graph, "h100", "graph", "unfused", unfused["kernels"])
    pair = [unfused["kernels"][0]["name"], unfused["kernels"][1]["name"]]
    assert session.replay([{"op": "merge", "kernels": pair}])["refused"] is None
    broken = {**session.plan_file("broken"), "kernels": session.plan_file()["kernels"][1:]}
    result = measure_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], ["xla"],
                           custom_plans=[{"device": "h100", "strategy": "custom:merged",
                                          "file": session.plan_file("merged"),
                                          "keep_kinds": True},
                                         {"device": "h100", "strategy": "custom:broken",
                                          "file": broken}])

    plans = result["devices"]["h100"]["strategies"]
    assert set(plans) == {"xla", "custom:merged"}
    merged = plans["custom:merged"]
    assert len(merged["kernels"]) == len(unfused["kernels"]) - 1
    for kernel in merged["kernels"]:
        assert kernel["mismatches"] == [], kernel
    if merged["end_to_end"]:
        gpu_report.append(f"softmax custom:merged on {gpu_device}: "
                          f"{merged['end_to_end']['median_us']:.2f} us back to back")


@pytest.mark.timeout(600)
def test_a_tunings_top_plans_are_measured_and_its_moves_priced_by_the_measurement(
        gpu_device, gpu_report):
    """The tuner's "then minutes on hardware": the tuned plan and the other plans chosen to
    measure timed with the run's plans, and what that says of the tuning."""
    from compiler.importers import import_bytes
    from compiler.stages.tune import candidate_plans, measured_tuning, merge_tunings, tune_stored

    path = SOFTMAX.parent / "layer_norm_bwd.hlo"
    graph = import_bytes(path.read_bytes(), path.name)[0]
    starts = ["xla", "stitch", "cost"]
    artifact = compile_graph(path.read_bytes(), path.name, ["h100"], starts)
    stored = {name: plan["kernels"]
              for name, plan in artifact["devices"]["h100"]["strategies"].items()}
    result, tuned_file, _ = merge_tunings(
        [tune_stored(graph, "h100", "graph", stored, "projected", "anneal", None, 300, 0, 3)], 3)
    plans = [{"device": "h100", "strategy": "tuned", "file": tuned_file, "keep_kinds": True}]
    plans += candidate_plans(result, "h100")
    measured = measure_graph(path.read_bytes(), path.name, ["h100"], starts,
                             custom_plans=plans)["devices"]["h100"]["strategies"]
    # Measured kernels carry their nodes: the run's stored kernels are not needed.
    found = measured_tuning(result, measured, {}, "h100")
    assert found is not None and found["fastest_rank"] is not None
    assert all(plan["measured_us"] > 0 for plan in found["plans"])
    gpu_report.append(
        f"layer_norm_bwd tuning on {gpu_device}: measured "
        + ", ".join(f"#{p['rank']} {p['measured_us']:.2f} us (score {p['score_us']:.2f})"
                    for p in found["plans"])
        + f"; regret {found['regret']}, tuned gain {found['gain_us']} us over "
          f"{found['start']}; moves measured "
        + str([move["measured_gain_us"] for move in found["moves"]]))
