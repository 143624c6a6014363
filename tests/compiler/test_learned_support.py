"""A learned model predicts only kernels like those it was trained on
(compiler/cost/learned/support.py): the shipped H200 model's support against the campaign's
datasets it was trained on, kernels outside it left to the projected model, and why."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from compiler.cost.learned.dataset import read_dataset
from compiler.cost.learned.features import KERNEL_FEATURES
from compiler.cost.learned.predict import OUTSIDE, LearnedPredictor, attach_learned
from compiler.cost.learned.support import SIZE_MARGIN, TrainingSupport
from compiler.fusion.explore import explore
from compiler.stages.pipeline import import_graph

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "compiler" / "cost" / "learned" / "models" / "learned-h200-v2.pt"
DATASETS = ROOT / "compiler" / "cost" / "learned" / "datasets"


@pytest.fixture(scope="module")
def shipped() -> LearnedPredictor:
    return LearnedPredictor.load(SHIPPED)


def _samples(program: str):
    return read_dataset(DATASETS / f"h200-{program}.jsonl.gz")[1]


@pytest.fixture(scope="module")
def trained_on(shipped):
    return [s for program in shipped.header["programs"]["train"] for s in _samples(program)]


def test_the_shipped_models_support_is_that_of_the_samples_it_was_trained_on(shipped,
                                                                               trained_on):
    assert sorted(shipped.header["programs"]["train"]) == ["adam", "cross_entropy",
                                                           "rms_norm", "softmax"]
    assert shipped.support == TrainingSupport.from_dict(
        TrainingSupport.fit(trained_on).to_dict())
    assert shipped.support.samples == len(trained_on) == 272
    # What those four programs hold: float32 (and predicates), row reductions and loops.
    assert shipped.support.element_types == {"float32", "pred8", "sint32"}
    assert "kind_horizontal" not in shipped.support.categories
    assert "schedule_column-reduce" not in shipped.support.categories
    assert {"add", "exponential", "reduce", "parameter"} <= shipped.support.ops


def test_every_training_sample_is_inside_and_its_held_out_kernels_are_judged_one_by_one(
        shipped, trained_on):
    assert [s.kernel for s in trained_on if shipped.support.outside(s)] == []
    held_out = _samples("cross_entropy_grad")
    reasons = {shipped.support.outside(s) for s in held_out}
    # The held-out gradient scatters into its one-hot rows and fuses horizontally: ops and a
    # kernel kind none of the training kernels had; its other kernels are inside.
    assert reasons == {None, "op scatter: none in its training",
                       "kind horizontal: none in its training"}
    # Held-out layer_norm_fwd's kernels are like softmax's and rms_norm's but for one, whose
    # idle latency is past what any row-reduce-block kernel it saw had.
    outside = [why for s in _samples("layer_norm_fwd") if (why := shipped.support.outside(s))]
    assert len(outside) == 1 and outside[0].startswith("log2_latency_us ")


def test_a_size_may_lie_one_octave_beyond_the_range_of_its_schedules_training_kernels(
        shipped, trained_on):
    column = KERNEL_FEATURES.index("log2_nodes")
    warp = KERNEL_FEATURES.index("schedule_row-reduce-warp")
    rows = [s for s in trained_on if s.kernel_features[warp] > 0]
    lo, hi = shipped.support.ranges["row-reduce-warp"]["log2_nodes"]
    assert hi == pytest.approx(max(float(s.kernel_features[column]) for s in rows), abs=1e-5)
    assert lo == pytest.approx(min(float(s.kernel_features[column]) for s in rows), abs=1e-5)

    def with_feature(name, value):
        features = np.array(rows[0].kernel_features, copy=True)
        features[KERNEL_FEATURES.index(name)] = value
        return dataclasses.replace(rows[0], kernel_features=features)

    assert shipped.support.outside(with_feature("log2_nodes", hi + 0.9 * SIZE_MARGIN)) is None
    assert shipped.support.outside(with_feature("log2_nodes", lo - 0.9 * SIZE_MARGIN)) is None
    why = shipped.support.outside(with_feature("log2_nodes", hi + 1.1 * SIZE_MARGIN))
    assert why == (f"log2_nodes {hi + 1.1 * SIZE_MARGIN:.3g} outside its row-reduce-warp "
                   f"training kernels' {lo:.3g}..{hi:.3g}")
    # Sizes are judged per schedule: every row-reduce-warp kernel it saw moved 64-128 MiB, so
    # one of 32 KiB is outside, though elementwise kernels that small were in its training.
    dram = KERNEL_FEATURES.index("log2_dram_bytes")
    assert max(s.kernel_features[dram] for s in rows) <= 27.01
    assert min(s.kernel_features[dram] for s in trained_on) < 15
    assert "log2_dram_bytes 15 outside its row-reduce-warp" in shipped.support.outside(
        with_feature("log2_dram_bytes", 15.0))


def test_a_kernel_of_a_schedule_the_features_do_not_name_is_outside(shipped, trained_on):
    features = np.array(trained_on[0].kernel_features, copy=True)
    for index, name in enumerate(KERNEL_FEATURES):
        if name.startswith("schedule_"):
            features[index] = 0.0
    phased = dataclasses.replace(trained_on[0], kernel_features=features)
    assert shipped.support.outside(phased) == ("a schedule the features do not name: none in "
                                               "its training")


def test_a_support_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="not a training support"):
        TrainingSupport.from_dict({"categories": []})
    with pytest.raises(ValueError, match="the support of no samples"):
        TrainingSupport.fit([])


ELEMENTWISE = """HloModule scale_shift
ENTRY main {
  x = {t}[4096,1024] parameter(0)
  y = {t}[4096,1024] parameter(1)
  sum = {t}[4096,1024] add(x, y)
  ROOT out = {t}[4096,1024] multiply(sum, x)
}
"""


def _plan(element_type: str):
    text = ELEMENTWISE.replace("{t}", element_type)
    graph = import_graph(text.encode(), f"scale_shift_{element_type}.hlo")
    return graph, explore(graph, "h200", ["cost"])["cost"]


def test_a_kernel_in_another_element_type_is_left_to_the_projected_model(shipped):
    graph, plan = _plan("f32")
    [(time, why)] = shipped.predictions(graph, plan)
    assert why is None and time > 0

    graph, plan = _plan("bf16")
    assert shipped.predictions(graph, plan) == [
        (None, f"{OUTSIDE} (16-bit float values: none in its training)")]
    result = plan.to_dict()
    attach_learned(result, graph, plan, None, shipped)
    [kernel] = result["kernels"]
    assert kernel["learned_us"] is None
    assert kernel["learned_skipped"].startswith(OUTSIDE)
    # The plan's learned total is its projected one, and says how many kernels it left.
    assert result["total"]["learned_kernels"] == 0
    assert result["total"]["learned_outside"] == 1
    assert result["total"]["learned_us"] is None


def test_a_model_without_a_support_predicts_every_kernel_it_describes(shipped):
    header = {key: value for key, value in shipped.header.items() if key != "support"}
    legacy = LearnedPredictor.from_model(shipped.model, header)
    assert legacy.support is None
    graph, plan = _plan("bf16")
    [(time, why)] = legacy.predictions(graph, plan)
    assert why is None and time > 0
