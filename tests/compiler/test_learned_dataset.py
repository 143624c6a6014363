"""The learned cost model's dataset: samples of whole programs, the file format and its errors."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.schedules import enumerate_plans
from compiler.cost.learned import synthetic
from compiler.cost.learned.dataset import dataset_header, family_of, read_dataset, write_dataset
from compiler.cost.learned.features import KERNEL_FEATURES
from compiler.cost.projected import rank_plans
from compiler.errors import InputError
from compiler.fusion.explore import explore
from compiler.stages.learned.samples import program_candidates, program_samples
from compiler.stages.pipeline import import_graph
from compiler.target.devices import get_device

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo"


def _graph(name: str):
    path = HLO / f"{name}.hlo"
    return import_graph(path.read_bytes(), str(path))


@pytest.fixture(scope="module")
def layer_norm():
    graph = _graph("layer_norm_bwd")
    samples = program_samples(graph, "layer_norm_bwd", "h100")
    synthetic.label(samples, seed=3)
    return graph, samples


def test_every_distinct_generated_kernel_is_one_group_with_all_its_ranked_plans(layer_norm):
    graph, samples = layer_norm
    device = get_device("h100")
    distinct = {}
    for strategy, plan in explore(graph, "h100").items():
        for kernel in plan.kernels:
            if kernel.kind != "library":
                key = (kernel.kind, frozenset(kernel.computed), frozenset(kernel.inputs),
                       frozenset(kernel.outputs))
                distinct.setdefault(key, (strategy, kernel))
    groups = {}
    for sample in samples:
        groups.setdefault(sample.group, []).append(sample)
    assert len(groups) == len(distinct)
    for strategy, kernel in distinct.values():
        ranked = rank_plans(graph, kernel, enumerate_plans(graph, kernel), device)
        members = groups[f"layer_norm_bwd/{strategy}/{kernel.name}"]
        assert sorted(s.plan for s in members) == sorted(p.key() for p, _ in ranked)
        assert {s.kernel for s in members} == {kernel.name}
    assert {s.program for s in samples} == {"layer_norm_bwd"}
    assert {s.family for s in samples} == {"layer_norm"}


def test_top_k_keeps_the_fastest_projected_plans_of_each_kernel():
    graph = _graph("softmax")
    everything = program_candidates(graph, "softmax", "h100")
    best_two = program_candidates(graph, "softmax", "h100", top_k=2)
    for group in {c.group for c in everything}:
        times = sorted(c.breakdown.projected_us for c in everything if c.group == group)
        kept = [c.breakdown.projected_us for c in best_two if c.group == group]
        assert 1 <= len(kept) <= 2
        assert kept == times[:len(kept)]


@pytest.mark.parametrize("program, family", [
    ("reduce_row__epilogue", "reduce_row"),
    ("reduce_column_small__f32_2", "reduce_column_small"),
    ("layer_norm_fwd", "layer_norm"),
    ("cross_entropy_grad", "cross_entropy"),
    ("transformer_12l", "transformer"),
    ("transformer_step_bf16", "transformer_step"),
    ("softmax", "softmax"),
    ("path/to/adam.hlo", "adam"),
    ("pair_fwd#1", "pair"),
])
def test_the_family_is_the_name_without_variant_suffixes(program, family):
    assert family_of(program) == family


def test_synthetic_targets_follow_the_known_function(layer_norm):
    _, samples = layer_norm
    column = dict(zip(KERNEL_FEATURES, range(len(KERNEL_FEATURES))))
    for sample in samples[:20]:
        block = sample.kernel_features[column["log2_block_size"]]
        launch = 2.0 ** sample.kernel_features[column["log2_launch_us"]] - 1.0
        expected = 1.0 + 4.0 * max(0.0, sample.projected_us - launch) * \
            (1.0 + 0.3 * (block - 8.0) ** 2) * np.sqrt(1.0 + 0.05 * len(sample.opcodes))
        assert sample.target_us == pytest.approx(expected, rel=0.3)   # 5 % noise, 6 sigma
        assert synthetic.synthetic_target_us(sample) == pytest.approx(expected, rel=1e-5)


def test_a_dataset_file_reads_back_as_the_samples_written(tmp_path, layer_norm):
    _, samples = layer_norm
    path = tmp_path / "h100.jsonl.gz"
    write_dataset(path, dataset_header("h100", "synthetic", synthetic.DESCRIPTION), samples)
    header, back = read_dataset(path)
    assert header["device"] == "h100" and header["origin"] == "synthetic"
    assert len(back) == len(samples)
    for a, b in zip(samples, back):
        assert (a.program, a.family, a.group, a.kernel, a.plan, a.node_names) == \
            (b.program, b.family, b.group, b.kernel, b.plan, b.node_names)
        assert b.opcodes.tolist() == a.opcodes.tolist()
        assert b.edge_index.tolist() == a.edge_index.tolist()
        np.testing.assert_allclose(b.node_features, a.node_features, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.kernel_features, a.kernel_features, rtol=1e-5, atol=1e-6)
        assert (b.target_us, b.projected_us, b.sol_us) == (a.target_us, a.projected_us,
                                                           a.sol_us)
        assert b.extra["codegen_plan"] == a.extra["codegen_plan"]
    assert not list(tmp_path.glob("*.partial"))


def _write_lines(path: Path, lines: list) -> None:
    with gzip.open(path, "wt") as out:
        for line in lines:
            out.write((line if isinstance(line, str) else json.dumps(line)) + "\n")


def _file_with(tmp_path, layer_norm, change) -> Path:
    _, samples = layer_norm
    path = tmp_path / "good.jsonl.gz"
    write_dataset(path, dataset_header("h100", "measured", "test", gpu="NVIDIA H100"),
                  samples[:3])
    with gzip.open(path, "rt") as lines:
        records = [json.loads(line) for line in lines]
    change(records)
    bad = tmp_path / "bad.jsonl.gz"
    _write_lines(bad, records)
    return bad


@pytest.mark.parametrize("change, message", [
    (lambda r: r[2].pop("opcodes"), r"bad\.jsonl\.gz:3: missing field: 'opcodes'"),
    (lambda r: r[3].update(target_us=-1.0), r"bad\.jsonl\.gz:4: bad record: target_us"),
    (lambda r: r[1].update(edges=[[0, 999]]), r"bad\.jsonl\.gz:2: bad record: an edge"),
    (lambda r: r[1].update(kernel_features=[0.0]), r":2: bad record: 1 kernel features"),
    (lambda r: r[0]["kernel_features"].pop(), r":1: made with other kernel features"),
    (lambda r: r[0].update(version=99), r":1: dataset version 99"),
    (lambda r: r[0].update(format="something"), r":1: not a fusion-explorer-costmodel"),
    (lambda r: r[0].update(origin="guessed"), r":1: origin must be one of"),
])
def test_a_bad_file_is_refused_with_its_line(tmp_path, layer_norm, change, message):
    with pytest.raises(InputError, match=message):
        read_dataset(_file_with(tmp_path, layer_norm, change))


def test_a_file_that_is_not_gzip_or_not_json_is_refused(tmp_path):
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text("{}\n")
    with pytest.raises(InputError, match="plain.jsonl.gz: not a gzip-compressed dataset"):
        read_dataset(plain)
    broken = tmp_path / "broken.jsonl.gz"
    _write_lines(broken, ["{not json"])
    with pytest.raises(InputError, match="broken.jsonl.gz:1: the header is not JSON"):
        read_dataset(broken)
    with pytest.raises(InputError, match="missing.jsonl.gz"):
        read_dataset(tmp_path / "missing.jsonl.gz")


def test_a_header_for_an_unknown_device_or_origin_is_refused():
    with pytest.raises(InputError):
        dataset_header("h900", "measured", "test")
    with pytest.raises(ValueError, match="origin"):
        dataset_header("h100", "estimated", "test")
