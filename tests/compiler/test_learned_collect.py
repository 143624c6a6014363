"""Collecting the learned cost model's data (compiler/stages/learned/collect.py) without a GPU:
synthetic targets on kernels really built with nvcc, the file, and the errors. The measured
path's bookkeeping runs here on a stand-in for the GPU runner; tests/gpu/ runs it for real."""

from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR, Mismatch
from compiler.codegen.emit import emit_kernel
from compiler.codegen.schedules import enumerate_plans
from compiler.cost.learned.dataset import read_dataset
from compiler.cost.learned.features import KERNEL_FEATURES
from compiler.cost.learned.synthetic import synthetic_target_us
from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.kernels.inputs import random_inputs
from compiler.runtime.gpu import GpuUnavailable, KernelRun, PlanRun, Timing, gpu_available
from compiler.stages.learned import collect
from compiler.stages.learned.collect import collect_dataset, collect_program
from compiler.stages.learned.samples import ALL_STRATEGIES
from compiler.stages.pipeline import import_graph
from compiler.toolchain import arch_for_device, build_kernels

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo"
PROGRAMS = ("softmax", "layer_norm_fwd")
TOP_K = 2
SEED = 7
REGISTERS = KERNEL_FEATURES.index("registers_over_64")
FROM_PTXAS = KERNEL_FEATURES.index("registers_from_ptxas")


def _graph(name: str):
    path = HLO / f"{name}.hlo"
    return import_graph(path.read_bytes(), path.name)


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """The synthetic dataset of softmax and layer_norm_fwd: (summary, header, samples)."""
    out = tmp_path_factory.mktemp("collect") / "h100-test.jsonl.gz"
    summary = collect_dataset([str(HLO / f"{name}.hlo") for name in PROGRAMS], "h100", out,
                              top_k=TOP_K, synthetic=True, seed=SEED)
    header, samples = read_dataset(out)
    return summary, header, samples


def _kernels(graph) -> dict:
    """(strategy, kernel name) -> kernel of every strategy's plan."""
    return {(strategy, kernel.name): kernel
            for strategy, plan in explore(graph, "h100", ALL_STRATEGIES).items()
            for kernel in plan.kernels}


def test_every_sample_carries_the_registers_ptxas_reports_for_its_source(collected):
    _, _, samples = collected
    graphs = {name: _graph(name) for name in PROGRAMS}
    kernels = {name: _kernels(graph) for name, graph in graphs.items()}
    sources = {}
    for k, sample in enumerate(samples):
        graph = graphs[sample.program]
        kernel = kernels[sample.program][sample.extra["strategy"], sample.kernel]
        (plan,) = [p for p in enumerate_plans(graph, kernel) if p.key() == sample.plan]
        sources[f"check_{k}"] = emit_kernel(graph, kernel, plan, f"check_{k}").source
    built = build_kernels(sources, arch_for_device("h100"), [str(PRELUDE_DIR)])
    for k, sample in enumerate(samples):
        assert built[f"check_{k}"].ok, built[f"check_{k}"].error
        assert sample.kernel_features[FROM_PTXAS] == 1.0
        assert sample.kernel_features[REGISTERS] == pytest.approx(
            built[f"check_{k}"].registers / 64.0)


def test_a_kernel_two_strategies_cut_alike_is_one_group_of_at_most_top_k_plans(collected):
    summary, _, samples = collected
    for name in PROGRAMS:
        generated = [kernel for plan in explore(_graph(name), "h100", ALL_STRATEGIES).values()
                     for kernel in plan.kernels if kernel.kind != "library"]
        # The same nodes, inputs and outputs, whatever order a strategy lists them in.
        distinct = {(k.kind, frozenset(k.computed), frozenset(k.inputs), frozenset(k.outputs))
                    for k in generated}
        assert len(distinct) < len(generated)    # some kernel is cut alike by two strategies
        ours = [s for s in samples if s.program == name]
        groups = {}
        for sample in ours:
            groups.setdefault(sample.group, []).append(sample)
        assert len(groups) == len(distinct)
        # No two groups hold the same kernel.
        assert len({frozenset(members[0].node_names) for members in groups.values()}) == \
            len(groups)
        for members in groups.values():
            assert 1 <= len(members) <= TOP_K
            assert len({s.plan for s in members}) == len(members)
    assert summary["samples"] == len(samples) == summary["built"]
    assert summary["dropped"] == {} and summary["errors"] == []
    assert summary["measured"] == 0 and summary["gpu"] is None


def test_the_file_reads_back_to_the_samples_with_the_seeded_synthetic_targets(collected):
    summary, header, read_back = collected
    assert header["origin"] == "synthetic" and header["gpu"] is None
    assert header["device"] == "h100" and header["target"].startswith("synthetic")
    assert [p["program"] for p in summary["per_program"]] == list(PROGRAMS)
    expected = []
    for index, name in enumerate(PROGRAMS):
        samples, _ = collect_program(_graph(name), name, "h100", top_k=TOP_K,
                                     synthetic_seed=SEED + index)
        rng = np.random.default_rng(SEED + index)    # program k is labelled with seed + k
        for sample in samples:
            assert sample.target_us == synthetic_target_us(sample, rng)
        expected += samples
    assert len(read_back) == len(expected)
    for got, want in zip(read_back, expected):
        assert (got.program, got.family, got.group, got.kernel, got.plan) == \
            (want.program, want.family, want.group, want.kernel, want.plan)
        assert got.target_us == want.target_us and got.extra["timing"] is None
        np.testing.assert_allclose(got.kernel_features, want.kernel_features, rtol=1e-5)
        np.testing.assert_allclose(got.node_features, want.node_features, rtol=1e-5)
        np.testing.assert_array_equal(got.edge_index, want.edge_index)


@pytest.mark.skipif(gpu_available()[0], reason="this machine has a GPU")
def test_without_a_gpu_a_measured_collection_refuses_before_any_work(tmp_path):
    out, progress = tmp_path / "h100.jsonl.gz", []
    with pytest.raises(GpuUnavailable, match="no GPU|no CUDA device"):
        collect_dataset([str(HLO / "softmax.hlo")], "h100", out,
                        progress=lambda *event: progress.append(event))
    assert progress == [] and list(tmp_path.iterdir()) == []


def test_a_missing_input_file_is_an_error_naming_it_before_any_work(tmp_path):
    missing, progress = tmp_path / "absent.hlo", []
    with pytest.raises(InputError) as raised:
        collect_dataset([str(HLO / "softmax.hlo"), str(missing)], "h100",
                        tmp_path / "out.jsonl.gz", synthetic=True,
                        progress=lambda *event: progress.append(event))
    assert str(missing) in str(raised.value) and "cannot read" in str(raised.value)
    assert progress == [] and list(tmp_path.iterdir()) == []


def test_two_files_that_give_one_program_name_are_refused(tmp_path):
    twin = tmp_path / "softmax.hlo"
    twin.write_bytes((HLO / "softmax.hlo").read_bytes())
    with pytest.raises(InputError, match="'softmax'; rename one"):
        collect_dataset([str(HLO / "softmax.hlo"), str(twin)], "h100",
                        tmp_path / "out.jsonl.gz", synthetic=True)


def test_a_broken_file_is_reported_and_every_module_of_the_good_ones_is_written(tmp_path):
    broken = tmp_path / "broken.hlo"
    broken.write_text("HloModule broken\n\nENTRY main {\n  p = f32[4] parameter(0\n}\n")
    pair = tmp_path / "pair_fwd.hlo"      # two modules: programs "pair_fwd#0", "pair_fwd#1"
    softmax = (HLO / "softmax.hlo").read_text()
    pair.write_text(softmax + "\n// -----\n" + softmax)
    out = tmp_path / "out.jsonl.gz"
    summary = collect_dataset([str(broken), str(pair)], "h100", out, top_k=1, synthetic=True,
                              strategies=["xla"])
    (error,) = summary["errors"]
    assert error["file"] == str(broken) and error["program"] == "broken"
    assert "broken.hlo:5:1: expected ')'" in error["error"]
    _, samples = read_dataset(out)
    assert sorted({s.program for s in samples}) == ["pair_fwd#0", "pair_fwd#1"]
    assert {s.family for s in samples} == {"pair"}
    assert summary["programs"] == 2 and summary["samples"] == len(samples) > 0


# -- the measured path, on a stand-in for the GPU runner ---------------------------------------


class _StandInRunner:
    """What collect reads of a GpuRunner when run_plan itself is replaced: the GPU's name."""

    def __init__(self, name: str):
        self.name = name


def test_measured_targets_are_timing_medians_of_checked_kernels_and_failures_are_dropped(
        monkeypatch):
    graph = _graph("softmax")
    calls = []

    def run_plan(graph_, plan, codes, inputs, runner, end_to_end=True):
        calls.append((plan, end_to_end))
        for got, want in zip(inputs, random_inputs(graph, seed=0)):
            np.testing.assert_array_equal(got, want)
        runs = []
        for k, code in enumerate(codes):
            run = KernelRun(code.kernel.name, code.kernel.kind, code.function)
            if k == 0:
                run.not_measured = "not measured: CUDA error: an illegal memory access"
            else:
                run.timing = Timing((10.0 + k, 12.0 + k, 11.0 + k), 3)
                run.max_abs_error = 0.0
            if k == 1:
                run.mismatches = [Mismatch("exponential.1", 0.5, (0, 3), 1.5, 1.0)]
            runs.append(run)
        return PlanRun(plan.strategy, runner.name, runs)

    monkeypatch.setattr(collect, "run_plan", run_plan)
    samples, summary = collect_program(graph, "softmax", "h100", top_k=2,
                                       runner=_StandInRunner("NVIDIA H100 80GB HBM3"))
    ((plan, end_to_end),) = calls
    assert end_to_end is False and len(plan.kernels) == summary["built"]
    assert summary["dropped"] == {collect.DID_NOT_RUN: 1, collect.MISMATCH: 1}
    assert summary["checked"] == summary["built"] - 1
    assert summary["measured"] == summary["samples"] == len(samples) == summary["built"] - 2
    for k, sample in enumerate(samples, start=2):
        assert sample.target_us == 11.0 + k == sample.extra["timing"]["median_us"]
    assert "exponential.1" in summary["drops"][1]["detail"]


def test_a_gpu_of_another_model_than_the_device_is_refused_before_any_work(tmp_path):
    with pytest.raises(InputError, match=r"NVIDIA A100-SXM4-80GB\) is not the h100.*--device a100"):
        collect_dataset([str(HLO / "softmax.hlo")], "h100", tmp_path / "out.jsonl.gz",
                        runner=_StandInRunner("NVIDIA A100-SXM4-80GB"))
    assert list(tmp_path.iterdir()) == []
