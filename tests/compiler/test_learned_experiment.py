"""The learned cost model's experiments and registry: splits, the top-5 regret, training into
versioned files with the analytic baselines beside it, and which file is active.

The targets are synthetic (compiler/cost/learned/synthetic.py): these tests check the
bookkeeping, not accuracy on a GPU.
"""

import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from compiler.cost.learned import synthetic
from compiler.cost.learned.dataset import dataset_header, write_dataset
from compiler.cost.learned.experiment import (best_readout, load_datasets, origin_of,
                                              run_experiment, split, train_costmodel)
from compiler.cost.learned.features import KernelSample, other_features
from compiler.cost.learned.model import CostModel, ModelConfig
from compiler.cost.learned.predict import LearnedPredictor
from compiler.cost.learned.registry import (SHIPPED, ModelFile, active_model, model_files,
                                            next_model_path, reading_dirs)
from compiler.cost.learned.train import TrainConfig, load_model, metrics, save_model
from compiler.errors import InputError
from compiler.stages.learned.samples import program_samples
from compiler.stages.pipeline import import_graph

HLO = Path(__file__).resolve().parents[1] / "data" / "hlo"
# Five programs of four families: layer_norm_fwd and layer_norm_bwd are one family.
PROGRAMS = ("softmax", "rms_norm", "layer_norm_fwd", "layer_norm_bwd", "adam")
TINY = ModelConfig(hidden=8, embedding=4, layers=1)
QUICK = TrainConfig(epochs=2, seed=0)
METRIC_KEYS = {"count", "mape", "median_ape_under_5us", "median_ape_over_5us", "groups_ranked",
               "mean_kendall_tau", "mean_top1_regret_percent", "mean_top5_regret_percent"}


def _program_samples(name: str, top_k: int = 3) -> list[KernelSample]:
    path = HLO / f"{name}.hlo"
    return program_samples(import_graph(path.read_bytes(), str(path)), name, "h100",
                           top_k=top_k)


@pytest.fixture(scope="module")
def samples() -> list[KernelSample]:
    out = [s for name in PROGRAMS for s in _program_samples(name)]
    synthetic.label(out, seed=0)
    return out


# -- splits -----------------------------------------------------------------------------------


def test_the_family_split_holds_out_the_named_families_whole(samples):
    train_set, test_set = split(samples, "family", holdout=["layer_norm"])
    assert {s.program for s in test_set} == {"layer_norm_fwd", "layer_norm_bwd"}
    assert {s.family for s in train_set} == {"softmax", "rms_norm", "adam"}
    assert len(train_set) + len(test_set) == len(samples)


@pytest.mark.parametrize("seed", range(6))
def test_a_drawn_family_split_never_splits_a_family(samples, seed):
    train_set, test_set = split(samples, "family", test_fraction=0.25, seed=seed)
    train_families = {s.family for s in train_set}
    test_families = {s.family for s in test_set}
    assert not train_families & test_families
    assert len(test_families) == 1                  # a quarter of 4 families
    assert train_families | test_families == {"softmax", "rms_norm", "layer_norm", "adam"}


def test_the_program_split_never_splits_a_program(samples):
    train_set, test_set = split(samples, "program", test_fraction=0.4, seed=1)
    assert not {s.program for s in train_set} & {s.program for s in test_set}
    assert len({s.program for s in test_set}) == 2  # 40 % of 5 programs


def test_holding_out_an_unknown_or_every_family_is_refused(samples):
    with pytest.raises(InputError, match="held-out family transformer; the data has adam"):
        split(samples, "family", holdout=["transformer"])
    with pytest.raises(InputError, match="nothing is left to train on"):
        split(samples, "family", holdout=["softmax", "rms_norm", "layer_norm", "adam"])


# -- metrics ----------------------------------------------------------------------------------


def _group(name: str, true: list[float]) -> list[KernelSample]:
    return [KernelSample(opcodes=np.zeros(1, np.int64), node_features=np.zeros((1, 1)),
                         edge_index=np.zeros((2, 0), np.int64), kernel_features=np.zeros(1),
                         node_names=["a"], kernel=name, plan=str(k), projected_us=1.0,
                         target_us=t, group=name, program="p")
            for k, t in enumerate(true)]


def test_top5_regret_is_the_best_true_time_among_the_five_predicted_fastest():
    # g1: the truly fastest plan (10 us) is predicted 6th; the best of the first five is
    # 11 us (10 % slower), the first one 12 us (20 %). g2: the fastest is predicted first.
    # g3 has one plan and is not ranked.
    samples = _group("g1", [12, 11, 15, 14, 13, 10, 20]) + _group("g2", [5, 4, 8]) + \
        _group("g3", [3])
    predicted = [1, 2, 3, 4, 5, 6, 7] + [3, 1, 2] + [3]
    result = metrics(predicted, samples)
    assert result["groups_ranked"] == 2
    assert result["mean_top1_regret_percent"] == pytest.approx((20 + 0) / 2)
    assert result["mean_top5_regret_percent"] == pytest.approx((10 + 0) / 2)


def test_a_model_that_ties_every_plan_is_scored_as_a_random_pick():
    # One time for all four plans (as SOL predicts): a random pick is 2.5 us on average,
    # 150 % over the best 1 us; two picks of four: the best of a random pair, on average
    # (1 x 3 + 2 x 2 + 3 x 1) / 6 = 10/6 us.
    samples = _group("g", [1, 2, 3, 4])
    assert metrics([7, 7, 7, 7], samples)["mean_top1_regret_percent"] == pytest.approx(150)
    assert metrics([7, 7, 7, 7], samples)["mean_top5_regret_percent"] == 0.0
    assert metrics([1, 5, 5, 5], samples)["mean_top1_regret_percent"] == 0.0
    assert metrics([5, 1, 5, 5], samples)["mean_top1_regret_percent"] == pytest.approx(100)
    six = _group("h", [1, 2, 3, 4, 5, 6])
    # Four sure picks (2..5 us, best 2) and one of the two tied (1 or 6): 1 us half the time.
    regret = metrics([5, 1, 1, 1, 1, 5], six)["mean_top5_regret_percent"]
    assert regret == pytest.approx(100 * (0.5 * 1 + 0.5 * 2 - 1) / 1)


# -- experiments ------------------------------------------------------------------------------


def test_an_experiment_scores_learned_sol_and_projected_on_the_same_samples(samples):
    result = run_experiment(samples, TINY, QUICK, how="family", holdout=["softmax"])
    test = [s for s in samples if s.family == "softmax"]
    assert result["test_families"] == ["softmax"] and result["test_programs"] == ["softmax"]
    assert result["counts"]["test_samples"] == len(test)
    for model in ("learned", "sol", "projected"):
        assert set(result[model]) == METRIC_KEYS
        assert result[model]["count"] == len(test)
    true = np.array([s.target_us for s in test])
    sol_mape = 100 * np.mean(np.abs(np.array([s.sol_us for s in test]) - true) / true)
    assert result["sol"]["mape"] == pytest.approx(sol_mape)


def test_the_best_readout_has_the_lowest_program_mape_then_the_highest_tau():
    def result(mape, tau):
        return {"program": {"learned": {"mape": mape, "mean_kendall_tau": tau}}, "family": None}
    assert best_readout({"mean": result(9.0, 0.9), "max": result(8.0, 0.1),
                         "sum": result(8.5, 0.95)}) == "max"
    assert best_readout({"mean": result(8.0, 0.5), "max": result(8.0, 0.7),
                         "sum": result(8.0, None)}) == "max"


def _contract_keys(header: dict) -> None:
    for key in ("device", "origin", "version", "created", "datasets", "programs",
                "evaluation", "readouts", "readout_winner"):
        assert key in header, key
    for split_name in ("program", "family"):
        evaluation = header["evaluation"][split_name]
        counts = {evaluation[m]["count"] for m in ("learned", "sol", "projected")}
        assert counts == {evaluation["counts"]["test_samples"]}
        assert set(evaluation["learned"]) == METRIC_KEYS
    assert header["programs"]["test"] == header["evaluation"]["program"]["test_programs"]
    assert not set(header["programs"]["train"]) & set(header["programs"]["test"])


def test_train_costmodel_writes_numbered_versions_with_their_evaluation(samples, tmp_path):
    few = [s for s in samples if s.program in ("softmax", "rms_norm", "adam")]
    first = train_costmodel(few, "h100", tmp_path, model_config=TINY, train_config=QUICK)
    second = train_costmodel(few, "H100", tmp_path, model_config=TINY, train_config=QUICK,
                             holdout_families=["adam"])
    assert first.path == tmp_path / "learned-h100-v1.pt" and first.label == "learned-h100-v1"
    assert second.path == tmp_path / "learned-h100-v2.pt" and second.version == 2
    for model_file in (first, second):
        header = model_file.header
        _contract_keys(header)
        assert header["origin"] == "synthetic" == model_file.origin   # no datasets: unknown
        assert header["device"] == "h100" and header["readouts"] is None
    assert second.header["version"] == 2
    assert second.header["evaluation"]["family"]["test_families"] == ["adam"]
    # It keeps the support of the samples it was trained on: what it will predict.
    trained_on = [s for s in few if s.program in first.header["programs"]["train"]]
    assert first.header["support"]["samples"] == len(trained_on) < len(few)
    assert all(LearnedPredictor.load(first.path).support.outside(s) is None
               for s in trained_on)
    model, header = load_model(second.path)
    assert header["config"] == TINY.to_dict()


def test_train_costmodel_can_compare_every_readout_and_save_the_winner(samples, tmp_path):
    few = [s for s in samples if s.program in ("softmax", "rms_norm", "adam")]
    saved = train_costmodel(few, "h100", tmp_path, model_config=TINY,
                            train_config=TrainConfig(epochs=1), compare_readouts=True)
    header = saved.header
    _contract_keys(header)
    readouts = header["readouts"]
    assert set(readouts) == {"mean", "max", "sum", "transformer"}
    best = min(readouts, key=lambda r: (readouts[r]["program"]["mape"],
                                        -(readouts[r]["program"]["mean_kendall_tau"] or 0)))
    assert header["readout_winner"] == best == header["config"]["readout"]
    assert header["evaluation"]["program"]["learned"] == readouts[best]["program"]


def test_train_costmodel_needs_targets_and_two_programs(samples, tmp_path):
    softmax = [s for s in samples if s.program == "softmax"]
    with pytest.raises(InputError, match="two or more"):
        train_costmodel(softmax, "h100", tmp_path, model_config=TINY, train_config=QUICK)
    unlabelled = _program_samples("softmax") + _program_samples("adam")
    with pytest.raises(InputError, match="no sample has a target"):
        train_costmodel(unlabelled, "h100", tmp_path)
    assert not list(tmp_path.iterdir())


def test_only_described_measured_data_makes_a_measured_model(samples):
    measured = [{"path": "a.jsonl.gz", "origin": "measured"}]
    assert origin_of(measured, samples) == "measured"
    assert origin_of([], samples) == "synthetic"
    assert origin_of(measured + [{"path": "b", "origin": "synthetic"}], samples) == "synthetic"
    marked = [KernelSample(**{**vars(samples[0]), "extra": {"origin": "synthetic"}})]
    assert origin_of(measured, samples + marked) == "synthetic"


# -- dataset files ----------------------------------------------------------------------------


def _write(path: Path, device: str, samples: list[KernelSample], origin="synthetic") -> Path:
    write_dataset(path, dataset_header(device, origin, synthetic.DESCRIPTION), samples)
    return path


def test_load_datasets_describes_each_file_and_marks_its_samples(samples, tmp_path):
    softmax = _write(tmp_path / "softmax.jsonl.gz", "h100",
                     [s for s in samples if s.program == "softmax"])
    adam = _write(tmp_path / "adam.jsonl.gz", "h100", [s for s in samples if s.program == "adam"])
    loaded, datasets = load_datasets([softmax, adam], "h100")
    assert [d["path"] for d in datasets] == [str(softmax), str(adam)]
    assert datasets[0]["sha256"] == hashlib.sha256(softmax.read_bytes()).hexdigest()
    assert [d["samples"] for d in datasets] == [
        sum(s.program == "softmax" for s in samples), sum(s.program == "adam" for s in samples)]
    assert {d["origin"] for d in datasets} == {"synthetic"} and datasets[0]["gpu"] is None
    assert {s.extra["origin"] for s in loaded} == {"synthetic"}
    assert len(loaded) == sum(d["samples"] for d in datasets)


def test_load_datasets_refuses_another_devices_file_naming_it(samples, tmp_path):
    other = _write(tmp_path / "a100.jsonl.gz", "a100", samples[:3])
    with pytest.raises(InputError) as error:
        load_datasets([other], "h100")
    assert str(other) in str(error.value) and "a100" in str(error.value)
    copy = tmp_path / "copy.jsonl.gz"
    copy.write_bytes(other.read_bytes())
    with pytest.raises(InputError, match="give each dataset once"):
        load_datasets([other, copy], "a100")
    with pytest.raises(InputError, match="missing.jsonl.gz"):
        load_datasets([tmp_path / "missing.jsonl.gz"], "h100")


# -- the registry -----------------------------------------------------------------------------


def _save(directory: Path, device: str, version: int, origin: str) -> Path:
    path = directory / f"learned-{device}-v{version}.pt"
    save_model(path, CostModel(TINY), extra={"device": device, "origin": origin,
                                             "version": version})
    return path


def test_the_registry_picks_the_newest_measured_model(tmp_path):
    assert model_files(tmp_path / "absent") == [] and active_model(tmp_path, "h100") is None
    assert next_model_path(tmp_path, "h100") == tmp_path / "learned-h100-v1.pt"
    _save(tmp_path, "h100", 1, "measured")
    _save(tmp_path, "h100", 2, "measured")
    _save(tmp_path, "h100", 10, "synthetic")
    _save(tmp_path, "a100", 3, "measured")
    (tmp_path / "learned-h100-v11.pt").write_bytes(b"junk, not a model")
    (tmp_path / "notes.txt").write_text("not a model either")
    files = model_files(tmp_path, "h100")
    assert [(f.label, f.origin) for f in files] == [
        ("learned-h100-v1", "measured"), ("learned-h100-v2", "measured"),
        ("learned-h100-v10", "synthetic")]               # numeric order, junk skipped
    assert [f.label for f in model_files(tmp_path)] == [
        "learned-a100-v3", "learned-h100-v1", "learned-h100-v2", "learned-h100-v10"]
    assert active_model(tmp_path, "h100").label == "learned-h100-v2"
    assert active_model(tmp_path, "h100", allow_synthetic=True).label == "learned-h100-v10"
    assert active_model(tmp_path, "a100").label == "learned-a100-v3"
    assert active_model(tmp_path, "v100") is None
    assert next_model_path(tmp_path, "h100") == tmp_path / "learned-h100-v12.pt"
    with pytest.raises(InputError, match="not a learned cost model"):
        load_model(tmp_path / "learned-h100-v11.pt")


def test_models_are_read_from_several_directories_and_versions_count_across_them(tmp_path):
    """The shipped models sit beside the deployment's: a model trained here takes the version
    after the shipped one, so it is the newest and the active one, and no label repeats."""
    local, shipped = tmp_path / "local", tmp_path / "shipped"
    local.mkdir()
    shipped.mkdir()
    _save(shipped, "h200", 1, "measured")
    both = reading_dirs(local, shipped)
    assert both == [local, shipped] and reading_dirs(local, None) == [local]
    assert active_model(both, "h200").path == shipped / "learned-h200-v1.pt"
    assert active_model(local, "h200") is None
    assert next_model_path(local, "h200", also=both[1:]) == local / "learned-h200-v2.pt"
    _save(local, "h200", 2, "measured")
    assert [f.label for f in model_files(both, "h200")] == ["learned-h200-v1", "learned-h200-v2"]
    assert active_model(both, "h200").path == local / "learned-h200-v2.pt"


def test_the_shipped_model_is_a_measured_one_of_the_current_features():
    (model,) = model_files(SHIPPED)
    assert (model.device, model.origin) == ("h200", "measured")
    assert other_features(model.header) is None       # not stale: this code's features
    load_model(model.path)


def test_the_registry_lists_a_model_of_other_features_and_load_model_says_why(tmp_path):
    import torch

    path = _save(tmp_path, "h100", 1, "measured")
    data = torch.load(path, weights_only=True)
    data["header"]["node_features"] = data["header"]["node_features"][:-1]
    torch.save(data, path)
    (listed,) = model_files(tmp_path)
    assert isinstance(listed, ModelFile) and listed.version == 1
    with pytest.raises(InputError, match="retrain"):
        load_model(path)


def test_save_model_refuses_extra_keys_that_replace_its_own(tmp_path):
    with pytest.raises(ValueError, match="config"):
        save_model(tmp_path / "m.pt", CostModel(TINY), extra={"config": {}})


def test_a_dataset_file_is_not_a_model(samples, tmp_path):
    path = _write(tmp_path / "learned-h100-v1.pt", "h100", samples[:2])
    with gzip.open(path, "rt") as lines:
        assert json.loads(next(lines))["format"] == "fusion-explorer-costmodel-dataset"
    assert model_files(tmp_path) == []
    assert next_model_path(tmp_path, "h100").name == "learned-h100-v2.pt"
