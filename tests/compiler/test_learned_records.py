"""Training samples from the web app's measurements (compiler/stages/learned/records.py).

The run is a real compile_graph artifact of softmax.hlo; its measurement is fabricated with
the GPU runner's own result classes (tests/explorer/measurements.py), since no GPU is here.
Every sample is checked against the artifact and the measurement, not against records.py.
"""

import copy
from functools import cache
from pathlib import Path

import pytest

from compiler.cost.learned.dataset import family_of
from compiler.cost.learned.features import KERNEL_FEATURES
from compiler.errors import InputError
from compiler.stages.learned.records import (DUPLICATE, MISMATCHED, NOT_MEASURED, OTHER_COMPILER,
                                             OTHER_GPU, PLAN_DIFFERS, measurement_samples)
from compiler.stages.pipeline import compile_graph
from tests.explorer.measurements import measurement_result

SOFTMAX = Path(__file__).resolve().parents[1] / "data" / "hlo" / "softmax.hlo"
DATA = SOFTMAX.read_bytes()
REGISTERS = KERNEL_FEATURES.index("registers_over_64")
FROM_PTXAS = KERNEL_FEATURES.index("registers_from_ptxas")


@cache
def _artifact() -> dict:
    return compile_graph(DATA, SOFTMAX.name, ["h100"], ["unfused", "xla", "stitch", "cost"])


def artifact() -> dict:
    return copy.deepcopy(_artifact())


def samples_of(measurement: dict, results: dict | None = None, **kwargs):
    results = results if results is not None else artifact()["devices"]["h100"]
    return measurement_samples(DATA, SOFTMAX.name, "h100", measurement, results, "run-1",
                               **kwargs)


def timed_kernels(measurement: dict) -> dict:
    """(strategy, kernel) -> the measured median, read from the measurement itself."""
    return {(strategy, run["name"]): run["timing"]["median_us"]
            for strategy, plan in measurement["devices"]["h100"]["strategies"].items()
            for run in plan["kernels"] if run["timing"] is not None}


def test_targets_are_the_measured_medians_and_registers_are_ptxas():
    run = artifact()
    measurement = measurement_result(run)
    samples, _ = samples_of(measurement)
    medians = timed_kernels(measurement)
    entries = {(strategy, entry["name"]): entry
               for strategy, plan in run["devices"]["h100"]["strategies"].items()
               for entry in plan["kernels"]}

    assert samples
    for sample in samples:
        program, strategy, kernel = sample.group.split("/")
        assert (program, sample.program) == ("run-1", "run-1")
        assert sample.target_us == medians[(strategy, kernel)]
        entry = entries[(strategy, kernel)]
        assert round(float(sample.kernel_features[REGISTERS]) * 64) == entry["registers"]
        assert sample.kernel_features[FROM_PTXAS] == 1.0
        assert sample.extra["codegen_plan"] == entry["codegen_plan"]
        assert sample.family == family_of("softmax.hlo") == "softmax"


def test_a_kernel_two_strategies_cut_alike_is_one_sample():
    samples, skipped = samples_of(measurement_result(artifact()))
    entries = [entry for plan in artifact()["devices"]["h100"]["strategies"].values()
               for entry in plan["kernels"]]
    # Counted from the artifact: the same kind, nodes, inputs and outputs make the same kernel,
    # in whatever order a strategy lists them.
    cuts = {(entry["kind"], frozenset(entry["nodes"] + entry["recomputed"]),
             frozenset(entry["inputs"]), frozenset(entry["outputs"])) for entry in entries}

    assert len(samples) == len(cuts)
    assert skipped == {DUPLICATE: len(entries) - len(cuts)}
    # unfused and xla both start with the same lone reduce_max kernel: the first one is kept.
    groups = {s.group for s in samples}
    assert "run-1/unfused/input.0" in groups and "run-1/xla/input.0" not in groups


def test_mismatched_and_unmeasured_kernels_are_skipped_and_counted():
    run = artifact()
    measurement = measurement_result(run, not_measured={"loop.2"}, mismatched={"loop.1"})
    samples, skipped = samples_of(measurement, run["devices"]["h100"])

    groups = {s.group for s in samples}
    assert "run-1/unfused/loop.1" not in groups
    assert not any(group.endswith("/loop.2") for group in groups)
    # loop.1 is unfused's only; loop.2 is both unfused's and xla's.
    assert skipped[MISMATCHED] == 1
    assert skipped[NOT_MEASURED] == 2


def test_plans_made_for_another_gpu_give_no_samples():
    run = artifact()
    measurement = measurement_result(run)
    measurement["devices"]["h100"]["matches_gpu"] = False
    kernels = sum(len(plan["kernels"])
                  for plan in run["devices"]["h100"]["strategies"].values())

    assert samples_of(measurement) == ([], {OTHER_GPU: kernels})


def test_a_measurement_by_another_compiler_version_gives_no_samples():
    run = artifact()
    measurement = measurement_result(run)
    measurement["compiler_version"] = "0123456789abcdef"

    samples, skipped = samples_of(measurement)

    assert samples == [] and list(skipped) == [OTHER_COMPILER]


def test_a_kernel_whose_plan_differs_from_the_runs_is_skipped():
    run = artifact()
    entry = run["devices"]["h100"]["strategies"]["stitch"]["kernels"][0]
    entry["codegen_plan"] = {**entry["codegen_plan"], "block_size": 1}

    samples, skipped = samples_of(measurement_result(run), run["devices"]["h100"])

    assert skipped[PLAN_DIFFERS] == 1
    assert "run-1/stitch/stitch-regional.0" not in {s.group for s in samples}


def test_a_family_can_be_named():
    samples, _ = samples_of(measurement_result(artifact()), family="normalisation")
    assert {s.family for s in samples} == {"normalisation"}


def test_results_without_plans_are_an_input_error():
    with pytest.raises(InputError, match="no plans for h100"):
        samples_of(measurement_result(artifact()), {"strategies": {}})
