"""Learned predictions in the compiler (compiler/cost/learned/predict.py,
compiler/stages/pipeline.py).

A tiny model is trained on the synthetic target (compiler/cost/learned/synthetic.py): the
times it predicts mean nothing on a GPU; these tests check which kernels get a prediction, that
they are the model's own output for the kernel's features, batched one forward per plan, and
how they land in the JSON.
"""

from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.schedules import enumerate_plans
from compiler.cost.learned import synthetic
from compiler.cost.learned.features import kernel_sample
from compiler.cost.learned.model import ModelConfig, predict_us
from compiler.cost.learned.predict import LearnedPredictor, attach_learned
from compiler.cost.learned.train import TrainConfig, save_model, train
from compiler.cost.projected import rank_plans
from compiler.errors import InputError
from compiler.fusion.explore import exploration_to_dict, explore
from compiler.ir.summary import summarize
from compiler.stages.codegen import generate
from compiler.stages.learned.samples import program_samples
from compiler.stages.pipeline import compile_graph, import_graph
from compiler.target.devices import get_device
from compiler.target.launch import launch_for, terms_for

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo"
DEVICE = get_device("h100")
HEADER = {"device": "h100", "origin": "synthetic", "version": 1}


def _graph(name: str):
    path = HLO / f"{name}.hlo"
    return import_graph(path.read_bytes(), str(path))


@pytest.fixture(scope="module")
def model():
    samples = [s for name in ("softmax", "layer_norm_fwd")
               for s in program_samples(_graph(name), name, "h100", ("xla", "cost"), top_k=4)]
    synthetic.label(samples, seed=0)
    trained, _ = train(samples, ModelConfig(hidden=16, embedding=4, layers=2),
                       TrainConfig(epochs=3, seed=0))
    return trained


@pytest.fixture(scope="module")
def model_file(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "learned-h100-v1.pt"
    save_model(path, model, TrainConfig(epochs=3), extra=HEADER)
    return path


@pytest.fixture(scope="module")
def attention():
    """The attention block's cost plan: generated kernels and cuBLAS dots."""
    graph = _graph("attention_block")
    plan = explore(graph, "h100", ["cost"])["cost"]
    kinds = {kernel.kind for kernel in plan.kernels}
    assert "library" in kinds and kinds - {"library"}
    return graph, plan


def _first_ranked_sample(graph, kernel):
    codegen_plan, breakdown = rank_plans(graph, kernel, enumerate_plans(graph, kernel),
                                         DEVICE)[0]
    return kernel_sample(graph, kernel, codegen_plan, DEVICE, breakdown)


def test_each_generated_kernel_gets_the_models_time_for_its_first_ranked_plan(model,
                                                                              attention):
    graph, plan = attention
    predictor = LearnedPredictor.from_model(model, HEADER)

    times = predictor.predict_plan(graph, plan)

    generated = [k for k in plan.kernels if k.kind != "library"]
    expected = predict_us(model, [_first_ranked_sample(graph, k) for k in generated])
    assert len(times) == len(plan.kernels)
    assert [t is None for t in times] == [k.kind == "library" for k in plan.kernels]
    assert [t for t in times if t is not None] == pytest.approx(expected.tolist(), rel=1e-6)
    assert predictor.label == "learned-h100-v1" and predictor.origin == "synthetic"


def test_with_codes_it_describes_the_emitted_plan_with_ptxas_resources(model, attention):
    graph, plan = attention
    codes = generate(graph, plan, DEVICE)
    predictor = LearnedPredictor.from_model(model, HEADER)

    times = predictor.predict_plan(graph, plan, codes)

    built = [c for c in codes if c.kernel.kind != "library"]
    assert all(c.breakdown.registers_source == "ptxas" for c in built)
    samples = [kernel_sample(graph, c.kernel, c.chosen, DEVICE, c.breakdown) for c in built]
    assert [t for t in times if t is not None] == pytest.approx(
        predict_us(model, samples).tolist(), rel=1e-6)
    assert [t is None for t in times] == [c.kernel.kind == "library" for c in codes]


def test_a_plan_is_predicted_in_one_forward_of_the_model(model, attention):
    graph, plan = attention
    batches = []
    hook = model.register_forward_hook(lambda module, args, output: batches.append(len(output)))
    try:
        LearnedPredictor.from_model(model, HEADER).predict_plan(graph, plan)
    finally:
        hook.remove()
    assert batches == [sum(k.kind != "library" for k in plan.kernels)]


def test_a_model_predicts_only_the_device_it_was_trained_for(model):
    graph = _graph("softmax")
    a100_plan = explore(graph, "a100", ["xla"])["xla"]
    predictor = LearnedPredictor.from_model(model, HEADER)
    with pytest.raises(InputError, match="h100.*a100"):
        predictor.predict_plan(graph, a100_plan)


def test_a_header_without_device_or_origin_is_refused(model):
    with pytest.raises(InputError, match="no device"):
        LearnedPredictor.from_model(model, {"origin": "measured"})
    with pytest.raises(InputError, match="origin"):
        LearnedPredictor.from_model(model, {"device": "h100", "origin": "guessed"})


def test_the_learned_total_adds_projected_times_where_the_model_predicts_none(model,
                                                                              attention):
    graph, plan = attention
    result = plan.to_dict()
    predictor = LearnedPredictor.from_model(model, HEADER)
    times = predictor.predict_plan(graph, plan)

    attach_learned(result, graph, plan, None, predictor)

    # The model predicts kernels timed alone: less a lone launch, that is their device work,
    # and in the plan they take the plan's launch term (a CUDA graph node's) on top.
    alone, launch = terms_for("h100").alone_us, launch_for("h100", "graph")
    devices = [None if t is None else max(0.0, t - alone) for t in times]
    library = [k["proj_us"] for k in result["kernels"] if k["kind"] == "library"]
    assert library and None not in library
    expected = sum(launch.kernel_us(d) for d in devices if d is not None) + sum(library)
    assert result["total"]["learned_us"] == pytest.approx(expected, abs=1e-3)
    assert result["total"]["learned_kernels"] == len(times) - len(library)
    assert [k["learned_device_us"] for k in result["kernels"]] == [
        None if d is None else pytest.approx(d, abs=1e-4) for d in devices]
    assert [k["learned_us"] for k in result["kernels"]] == [
        None if d is None else pytest.approx(launch.kernel_us(d), abs=1e-4) for d in devices]
    # Under stream launches too, with that runtime's launch terms.
    stream = launch_for("h100", "stream")
    stream_library = sum(k["device_us"] + k["launch"]["stream"] for k in result["kernels"]
                         if k["kind"] == "library")
    assert result["total"]["runtimes"]["stream"]["learned_us"] == pytest.approx(
        sum(stream.kernel_us(d) for d in devices if d is not None) + stream_library, abs=1e-3)
    assert result["learned_model"] == {"label": "learned-h100-v1", "origin": "synthetic",
                                       "device": "h100"}

    attach_learned(result, graph, plan, None, None)
    assert {k["learned_us"] for k in result["kernels"]} == {None}
    assert result["total"]["learned_us"] is None and result["learned_model"] is None


def _learned_fields(result: dict) -> list:
    """Every learned value of an explore / codegen result (fails on a missing key)."""
    values = []
    for strategy in result["strategies"].values():
        values += [strategy["learned_model"], strategy["total"]["learned_us"],
                   strategy["total"]["learned_kernels"]]
        values += [kernel["learned_us"] for kernel in strategy["kernels"]]
    return values


def test_without_a_model_explore_and_compile_results_have_null_learned_fields():
    graph = _graph("softmax")
    explored = exploration_to_dict(summarize(graph), "h100", explore(graph, "h100",
                                                                     ["unfused", "cost"]))
    assert set(_learned_fields(explored)) == {None}
    path = HLO / "softmax.hlo"
    artifact = compile_graph(path.read_bytes(), path.name, ["h100"], ["unfused", "cost"])
    assert set(_learned_fields(artifact["devices"]["h100"])) == {None}


def test_compile_graph_predicts_every_generated_kernel_with_the_devices_model(model,
                                                                              model_file):
    path = HLO / "attention_block.hlo"
    artifact = compile_graph(path.read_bytes(), path.name, ["a100", "h100"], ["cost"],
                             learned_models={"h100": str(model_file)})

    result = artifact["devices"]["h100"]["strategies"]["cost"]
    assert result["learned_model"] == {"label": "learned-h100-v1", "origin": "synthetic",
                                       "device": "h100"}
    graph = _graph("attention_block")
    plan = explore(graph, "h100", ["cost"])["cost"]
    codes = generate(graph, plan, DEVICE)
    built = [c for c in codes if c.kernel.kind != "library"]
    expected = predict_us(model, [kernel_sample(graph, c.kernel, c.chosen, DEVICE, c.breakdown)
                                  for c in built])
    learned = [k["learned_device_us"] for k in result["kernels"] if k["kind"] != "library"]
    alone = terms_for("h100").alone_us
    assert learned == pytest.approx([max(0.0, t - alone) for t in expected.tolist()], abs=1e-4)
    assert {k["learned_us"] for k in result["kernels"] if k["kind"] == "library"} == {None}
    assert result["total"]["learned_kernels"] == len(built)
    # The a100 plans had no model: nothing learned, nothing made up.
    assert set(_learned_fields(artifact["devices"]["a100"])) == {None}


def test_a_model_that_cannot_be_used_leaves_learned_times_null_and_says_why(model_file,
                                                                            tmp_path):
    corrupt = tmp_path / "learned-h100-v2.pt"
    corrupt.write_bytes(model_file.read_bytes()[:500])
    path = HLO / "softmax.hlo"

    artifact = compile_graph(path.read_bytes(), path.name, ["a100", "h100"], ["xla"],
                             learned_models={"h100": str(corrupt), "a100": str(model_file)})

    for device, reason in (("h100", f"could not be loaded: {corrupt}"),
                           ("a100", "predicts h100 kernels, not a100")):
        result = artifact["devices"][device]["strategies"]["xla"]
        assert reason in result["learned_model"]["error"]
        assert {k["learned_us"] for k in result["kernels"]} == {None}
        assert result["total"]["learned_us"] is None
        assert all(k["function"] for k in result["kernels"])    # the compile completed
    assert np.isfinite(artifact["devices"]["h100"]["strategies"]["xla"]["total"]["proj_us"])
