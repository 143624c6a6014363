"""A plan's timeline (compiler/stages/timeline.py): its end is the plan's total under each
runtime and model (as FusionPlan.projected_totals and the learned model's attach_learned add
them up), outputs are ready when their writer ends, and the critical path follows the kernels'
dependencies; and which outputs are a training step's gradients (compiler/ir/training.py),
checked against the step JAX wrote (tests/data/gen_hlo.py: loss, logits, updated params)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.cost.learned.predict import attach_learned
from compiler.fusion.explore import exploration_to_dict, explore
from compiler.importers import load_graph
from compiler.ir.summary import summarize
from compiler.ir.training import training_outputs
from compiler.stages.timeline import plan_timeline
from compiler.target.launch import RUNTIMES, launch_for

DATA = Path(__file__).parents[2] / "tests" / "data"
STEP = DATA / "hlo" / "transformer_step_bf16.hlo"


@pytest.fixture(scope="module")
def step():
    graph = load_graph(str(STEP))
    explored = {runtime: (explore(graph, "h100", ["unfused", "xla", "stitch", "cost"],
                                  runtime=runtime)) for runtime in RUNTIMES}
    return graph, explored


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_timeline_ends_at_the_plans_total_under_each_runtime(step, runtime):
    graph, explored = step
    summary = summarize(graph)
    result = exploration_to_dict(summary, "h100", explored[runtime])
    for name, plan in explored[runtime].items():
        timeline = plan_timeline(result["strategies"][name], "h100", runtime,
                                 summary["outputs"])
        totals = plan.projected_totals()
        # Kernel entries hold device work rounded to 4 decimals: half a unit each at most.
        rounding = 5e-5 * len(plan.kernels) + 1e-4
        for other in RUNTIMES:     # and under the other runtime, from the same entries
            drawn = plan_timeline(result["strategies"][name], "h100", other, summary["outputs"])
            assert drawn["total_us"]["projected"] == pytest.approx(
                totals["runtimes"][other]["proj_us"], abs=rounding), (name, other)
        assert timeline["models"] == ["projected"]
        starts = [k["start_us"]["projected"] for k in timeline["kernels"]]
        ends = [k["end_us"]["projected"] for k in timeline["kernels"]]
        assert all(start < end or start == end for start, end in zip(starts, ends))
        assert all(earlier <= later for earlier, later in zip(ends, starts[1:]))


class _EveryOtherKernel:
    """A stand-in learned model: predicts every other kernel's time alone as 7 us."""

    def predictions(self, graph, plan, codes):
        return [(7.0, None) if index % 2 == 0 else (None, "not this one")
                for index in range(len(plan.kernels))]

    def info(self):
        return {"label": "stand-in"}


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_the_learned_timeline_ends_at_the_learned_total(step, runtime):
    graph, explored = step
    summary = summarize(graph)
    plan = explored[runtime]["stitch"]
    entry = exploration_to_dict(summary, "h100", {"stitch": plan})["strategies"]["stitch"]
    attach_learned(entry, graph, plan, None, _EveryOtherKernel())
    timeline = plan_timeline(entry, "h100", runtime, summary["outputs"])
    assert timeline["models"] == ["projected", "learned"]
    assert timeline["total_us"]["learned"] == pytest.approx(
        entry["total"]["learned_us"], abs=5e-5 * len(plan.kernels) + 1e-4)


def test_measured_kernels_are_drawn_as_their_device_work():
    kernels = [{"name": f"k{i}", "kind": "loop", "nodes": [f"n{i}"], "inputs": [],
                "outputs": [f"n{i}"], "device_us": 1.0, "measured_us": 3.12 + 2.0 * i}
               for i in range(3)]
    timeline = plan_timeline({"kernels": kernels}, "h200", "graph",
                             [{"name": "n1", "bytes": 4}])
    gap = launch_for("h200", "graph").gap_us
    # H200: a lone launch adds 3.12 us, so the device work is 0, 2 and 4 us.
    assert timeline["total_us"]["measured"] == pytest.approx(3 * gap + 0 + 2 + 4)
    assert timeline["outputs"][0]["ready_us"]["measured"] == pytest.approx(2 * gap + 2)


def test_an_output_is_ready_when_its_writer_ends_and_a_parameter_at_once():
    kernels = [{"name": "a", "kind": "loop", "nodes": ["x"], "inputs": ["p"], "outputs": ["x"],
                "device_us": 5.0},
               {"name": "b", "kind": "loop", "nodes": ["y"], "inputs": ["x"], "outputs": ["y"],
                "device_us": 3.0}]
    outputs = [{"name": "y", "bytes": 8}, {"name": "x", "bytes": 8}, {"name": "p", "bytes": 8}]
    timeline = plan_timeline({"kernels": kernels}, "h100", "stream", outputs)
    launch = launch_for("h100", "stream")
    first_end = launch.us(5.0) + 5.0
    ready = {row["name"]: (row["kernel"], row["ready_us"]["projected"])
             for row in timeline["outputs"]}
    assert ready["x"] == ("a", pytest.approx(first_end))
    assert ready["y"] == ("b", pytest.approx(first_end + launch.us(3.0) + 3.0))
    assert ready["p"] == (None, 0.0)


def test_the_critical_path_is_the_longest_dependent_chain():
    # a -> c and b alone: on one stream the plan takes all three, the critical path a and c.
    def entry(name, inputs, outputs, work):
        return {"name": name, "kind": "loop", "nodes": outputs, "inputs": inputs,
                "outputs": outputs, "device_us": work}

    kernels = [entry("a", [], ["x"], 10.0), entry("b", [], ["y"], 4.0),
               entry("c", ["x"], ["z"], 6.0)]
    timeline = plan_timeline({"kernels": kernels}, "h100", "graph", [])
    gap = launch_for("h100", "graph").gap_us
    path = timeline["critical_path"]["projected"]
    assert path["kernels"] == ["a", "c"]
    assert path["us"] == pytest.approx(10.0 + 6.0 + 2 * gap)
    assert timeline["total_us"]["projected"] == pytest.approx(20.0 + 3 * gap)


def test_a_plan_without_device_work_has_no_timeline():
    timeline = plan_timeline({"kernels": [{"name": "k", "nodes": [], "device_us": None}]},
                             "h100", "graph", [])
    assert timeline["unavailable"] and timeline["kernels"] == []


def test_the_training_steps_gradients_are_its_updated_parameters():
    graph = load_graph(str(STEP))
    outputs = graph.output_names()
    found = training_outputs(graph)
    # train_step returns (loss, logits, new_params): the loss first, then the logits, which
    # are not a gradient, then one updated parameter per parameter but the token ids.
    assert found["loss"] == outputs[:1]
    assert found["gradients"] == outputs[2:]
    assert found["reason"] is None


def test_a_graph_without_a_loss_is_not_a_training_step():
    found = training_outputs(load_graph(str(DATA / "json" / "softmax.json")))
    assert found["gradients"] == [] and "loss" in found["reason"]
