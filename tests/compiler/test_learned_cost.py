"""The learned cost model's pipeline: features of real kernels, learning a known function,
save/load, every readout.

No kernel has been measured on a GPU yet, so the learnability tests train on a synthetic
target: a known nonlinear function of each sample's projected time, block size and node count,
with 5 % log-normal noise. They show that the pipeline (features, batching, model, losses,
split by program) can learn such a function and generalise to held-out programs; they say
nothing about accuracy on real GPUs.
"""

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from compiler.codegen.schedules import enumerate_plans
from compiler.cost.learned.features import (FEATURE_LAUNCH_US, KERNEL_FEATURES, NODE_FEATURES,
                                            OPCODES, kernel_sample, opcode_id)
from compiler.cost.learned.model import READOUTS, CostModel, ModelConfig, predict_us
from compiler.cost.learned.train import (TrainConfig, evaluate, load_model, metrics,
                                         pairwise_rank_loss, save_model, split_by_program, train)
from compiler.cost.projected import rank_plans
from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.stages.pipeline import import_graph
from compiler.target.devices import get_device

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo"
PROGRAMS = ("attention_block", "layer_norm_fwd", "layer_norm_bwd", "softmax", "adam",
            "cross_entropy", "cross_entropy_grad", "rms_norm", "bias_gelu_tanh",
            "bias_gelu_erf", "lstm_cell")
DEVICE = get_device("h100")
SMALL = ModelConfig(hidden=32, embedding=8, layers=2)


def _graph(name: str):
    path = HLO / f"{name}.hlo"
    return import_graph(path.read_bytes(), str(path))


def _samples(name: str, strategies=("xla", "cost")) -> list:
    """Every kernel of every strategy's plan under every candidate plan the projected model
    ranks (as codegen's emit_code ranks them)."""
    graph = _graph(name)
    out = []
    for strategy, plan in explore(graph, "h100", list(strategies)).items():
        for kernel in plan.kernels:
            for codegen_plan, breakdown in rank_plans(graph, kernel,
                                                      enumerate_plans(graph, kernel), DEVICE):
                sample = kernel_sample(graph, kernel, codegen_plan, DEVICE, breakdown)
                sample.program = name
                sample.group = f"{name}/{strategy}/{kernel.name}"
                sample.extra["launch_us"] = FEATURE_LAUNCH_US
                out.append(sample)
    return out


def _known_function(sample) -> float:
    """The synthetic runtime: nonlinear in the projected time above launch, the block size
    (best at 256 threads) and the kernel's node count."""
    block = dict(zip(KERNEL_FEATURES, sample.kernel_features))["log2_block_size"]
    busy = sample.projected_us - sample.extra["launch_us"]
    return 1.0 + 4.0 * busy * (1.0 + 0.3 * (block - 8.0) ** 2) * \
        math.sqrt(1.0 + 0.05 * len(sample.opcodes))


@pytest.fixture(scope="module")
def dataset():
    rng = np.random.default_rng(0)
    samples = [s for name in PROGRAMS for s in _samples(name)]
    for s in samples:
        s.target_us = _known_function(s) * math.exp(0.05 * rng.standard_normal())
    return split_by_program(samples, test_fraction=0.3, seed=0)


# -- features ---------------------------------------------------------------------------------


def test_softmax_sample_has_a_node_per_kernel_value_and_the_graphs_edges():
    graph = _graph("softmax")
    plan = explore(graph, "h100", ["cost"])["cost"]
    kernel = next(k for k in plan.kernels if k.kind != "library")
    ranked = rank_plans(graph, kernel, enumerate_plans(graph, kernel), DEVICE)
    assert len(ranked) > 1
    for codegen_plan, breakdown in ranked:
        sample = kernel_sample(graph, kernel, codegen_plan, DEVICE, breakdown)
        expected_nodes = list(dict.fromkeys(kernel.computed + kernel.inputs))
        assert sample.node_names == expected_nodes
        assert sample.opcodes.tolist() == [opcode_id(graph.nodes[n].op) for n in expected_nodes]
        assert 0 not in sample.opcodes.tolist()           # every softmax op is in the table
        assert sample.node_features.shape == (len(expected_nodes), len(NODE_FEATURES))
        assert sample.kernel_features.shape == (len(KERNEL_FEATURES),)
        assert np.isfinite(sample.node_features).all()
        assert np.isfinite(sample.kernel_features).all()
        edges = {(sample.node_names[a], sample.node_names[b])
                 for a, b in sample.edge_index.T.tolist()}
        assert edges == {(operand, name) for name in kernel.computed
                         for operand in graph.nodes[name].operands if operand in expected_nodes}
        assert sample.edge_index.shape[1] == len(edges)   # no duplicates
        for name in kernel.inputs:                          # every input feeds the kernel
            assert any(a == name for a, _ in edges)
        column = dict(zip(KERNEL_FEATURES, sample.kernel_features))
        assert column[f"schedule_{codegen_plan.schedule}"] == 1.0
        assert column["log2_block_size"] == math.log2(codegen_plan.block_size)
        # The time features are of the kernel timed alone: its device work and the launch
        # term every dataset so far was made with.
        assert column["log2_projected_us"] == pytest.approx(
            math.log2(1 + breakdown.projected_us + FEATURE_LAUNCH_US), rel=1e-6)
        assert column["log2_launch_us"] == pytest.approx(math.log2(1 + FEATURE_LAUNCH_US))
        assert sample.projected_us == pytest.approx(breakdown.projected_us + FEATURE_LAUNCH_US)
        is_input = sample.node_features[:, NODE_FEATURES.index("is_input")]
        assert is_input.sum() == len(kernel.inputs)


def test_the_vocabulary_is_sorted_with_unknown_first():
    assert OPCODES[0] == "<unknown>" and list(OPCODES[1:]) == sorted(OPCODES[1:])
    assert opcode_id("no-such-op") == 0 and OPCODES[opcode_id("reduce")] == "reduce"


def test_split_by_program_never_splits_a_program(dataset):
    train_set, test_set = dataset
    assert train_set and test_set
    assert not {s.program for s in train_set} & {s.program for s in test_set}
    assert len({s.program for s in test_set}) == 3     # 30 % of 11 programs


# -- losses -----------------------------------------------------------------------------------


def test_rank_loss_prefers_the_true_order_within_groups_only():
    target = torch.tensor([1.0, 2.0, 3.0, 0.0])
    groups = torch.tensor([0, 0, 0, 1])
    right = pairwise_rank_loss(torch.tensor([1.0, 2.0, 3.0, 9.0]), target, groups)
    wrong = pairwise_rank_loss(torch.tensor([3.0, 2.0, 1.0, -9.0]), target, groups)
    assert right < wrong
    hinge = pairwise_rank_loss(torch.tensor([1.0, 2.0, 3.0, 0.0]), target, groups, "hinge")
    assert float(hinge) == 0.0                          # every gap exceeds the margin
    alone = pairwise_rank_loss(torch.tensor([5.0, 1.0]), target[:2], torch.tensor([0, 1]))
    assert float(alone) == 0.0


# -- learning ---------------------------------------------------------------------------------


def test_the_model_learns_a_known_function_on_held_out_programs(dataset):
    train_set, test_set = dataset
    # 200 epochs: at 100, two seeds in four stop at 29 % MAPE (still converging), two reach
    # 17 %; at 200 all four reach 18-19 %, so the verdict does not hang on the seed.
    model, history = train(train_set, SMALL, TrainConfig(epochs=200, seed=0))
    assert history[-1] < 0.2 * history[0]
    learned = evaluate(model, test_set)
    constant = metrics(np.full(len(test_set), np.median([s.target_us for s in train_set])),
                       test_set)
    print("learned", learned, "\nconstant", constant)
    assert learned["mape"] < 0.4 * constant["mape"]
    assert learned["mean_kendall_tau"] > 0.5            # random order: 0
    assert learned["groups_ranked"] >= 15


def test_the_ranking_loss_alone_learns_the_order_of_plans(dataset):
    train_set, test_set = dataset
    model, _ = train(train_set, SMALL, TrainConfig(epochs=60, loss="rank", seed=0))
    ranked = evaluate(model, test_set)
    print("rank only", ranked)
    assert ranked["mean_kendall_tau"] > 0.5
    assert ranked["mean_top1_regret_percent"] < 15.0


def test_training_is_deterministic_for_a_seed(dataset):
    train_set, test_set = dataset
    small = [s for s in train_set if s.program == "softmax"]
    config = TrainConfig(epochs=3, seed=7)
    first, _ = train(small, SMALL, config)
    second, _ = train(small, SMALL, config)
    assert np.array_equal(predict_us(first, test_set), predict_us(second, test_set))


@pytest.mark.parametrize("readout", READOUTS)
def test_every_readout_trains_and_predicts_a_batch(dataset, readout):
    train_set, test_set = dataset
    small = [s for s in train_set if s.program in ("softmax", "rms_norm")]
    config = ModelConfig(hidden=16, embedding=4, layers=2, readout=readout, heads=2,
                         bidirectional=readout == "sum")
    model, history = train(small, config, TrainConfig(epochs=3, seed=0))
    predicted = predict_us(model, test_set)
    assert predicted.shape == (len(test_set),) and np.isfinite(predicted).all()
    assert np.isfinite(history).all()


def test_an_unknown_readout_is_refused():
    with pytest.raises(ValueError, match="readout"):
        CostModel(ModelConfig(readout="attention"))


# -- files ------------------------------------------------------------------------------------


def test_save_and_load_give_identical_predictions(dataset, tmp_path):
    train_set, test_set = dataset
    small = [s for s in train_set if s.program == "attention_block"]
    config = ModelConfig(hidden=16, embedding=4, layers=2, readout="transformer", heads=2)
    model, _ = train(small, config, TrainConfig(epochs=2, seed=0))
    path = tmp_path / "model.pt"
    save_model(path, model, TrainConfig(epochs=2), evaluate(model, test_set))
    loaded, header = load_model(path)
    assert np.array_equal(predict_us(model, test_set), predict_us(loaded, test_set))
    assert header["config"] == config.to_dict() and header["metrics"]["count"] == len(test_set)


def test_a_model_of_other_features_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    save_model(path, CostModel(SMALL))
    data = torch.load(path, weights_only=True)
    data["header"]["kernel_features"] = data["header"]["kernel_features"][:-1]
    torch.save(data, path)
    with pytest.raises(InputError, match="retrain"):
        load_model(path)
    (tmp_path / "junk.pt").write_bytes(b"not a model")
    with pytest.raises(InputError, match="not a learned cost model"):
        load_model(tmp_path / "junk.pt")


# -- batching ---------------------------------------------------------------------------------


def test_collate_lays_out_a_batch_as_torch_geometric_does(dataset):
    from torch_geometric.data import Batch, Data

    from compiler.cost.learned.model import collate

    train_set, _ = dataset
    picks = train_set[::37][:40]
    reference = Batch.from_data_list([
        Data(opcodes=torch.from_numpy(s.opcodes), x=torch.from_numpy(s.node_features),
             edge_index=torch.from_numpy(s.edge_index),
             x_kernel=torch.from_numpy(s.kernel_features).unsqueeze(0),
             num_nodes=len(s.opcodes)) for s in picks])
    batch = collate(picks)
    for key in ("opcodes", "x", "edge_index", "x_kernel", "batch", "ptr"):
        assert torch.equal(getattr(batch, key), getattr(reference, key)), key
    assert batch.num_graphs == len(picks)


def test_prediction_in_pieces_equals_one_batch(dataset, monkeypatch):
    import compiler.cost.learned.model as model_module

    train_set, test_set = dataset
    config = ModelConfig(hidden=16, embedding=4, layers=2, readout="transformer", heads=2)
    model, _ = train([s for s in train_set if s.program == "softmax"], config,
                     TrainConfig(epochs=1, seed=0))
    whole = predict_us(model, test_set)
    monkeypatch.setattr(model_module, "PREDICT_BATCH", 7)
    pieces = predict_us(model, test_set)
    assert np.allclose(pieces, whole, rtol=1e-5)
    assert predict_us(model, []).shape == (0,)


def test_predictions_stay_within_a_factor_of_100_of_the_projected_time(dataset):
    train_set, test_set = dataset
    small = [s for s in train_set if s.program == "softmax"]
    projected = KERNEL_FEATURES.index("log2_projected_us")
    strange = []
    for scale in (1e3, -1e3):                      # every other input far outside training
        sample = copy.deepcopy(test_set[0])
        keep = sample.kernel_features[projected]
        sample.kernel_features = sample.kernel_features * scale
        sample.kernel_features[projected] = keep
        sample.node_features = sample.node_features * scale
        strange.append(sample)
    timed, _ = train(small, SMALL, TrainConfig(epochs=2, seed=0))
    ratio = predict_us(timed, strange) / test_set[0].projected_us
    assert np.all((ratio <= 100 * (1 + 1e-4)) & (ratio >= 0.01 * (1 - 1e-4)))
    # A model trained for the order of plans only predicts no times: nothing is bounded.
    ranked, _ = train(small, SMALL, TrainConfig(epochs=2, seed=0, loss="rank"))
    with np.errstate(over="ignore"):                # far enough out, exp gives inf
        ratio = predict_us(ranked, strange) / test_set[0].projected_us
    assert np.any((ratio > 100) | (ratio < 0.01))


def test_training_leaves_the_process_torch_thread_count_as_it_was(dataset):
    train_set, _ = dataset
    small = [s for s in train_set if s.program == "softmax"]
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        train(small, SMALL, TrainConfig(epochs=1, threads=1))
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)
