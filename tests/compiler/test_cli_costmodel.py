"""`python -m compiler collect-costmodel-data` and `train-costmodel` on small synthetic data.

No GPU here: the dataset is labelled with the synthetic function, so these tests check the
commands' files, output shapes and errors, never accuracy on a GPU.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli import main
from compiler.cost.learned import synthetic
from compiler.cost.learned.dataset import dataset_header, read_dataset, write_dataset
from compiler.runtime.gpu import gpu_available
from compiler.stages.learned.samples import program_samples
from compiler.stages.pipeline import import_graph
from compiler.target.launch import device_work_of_alone, launch_for

ROOT = Path(__file__).resolve().parents[2]
HLO = ROOT / "tests" / "data" / "hlo"
METRICS = {"count", "mape", "median_ape_under_5us", "median_ape_over_5us", "groups_ranked",
           "mean_kendall_tau", "mean_top1_regret_percent", "mean_top5_regret_percent"}


@pytest.fixture(scope="module")
def dataset_file(tmp_path_factory) -> Path:
    samples = []
    for name in ("softmax", "rms_norm", "adam"):
        path = HLO / f"{name}.hlo"
        samples += program_samples(import_graph(path.read_bytes(), str(path)), name, "h100",
                                   top_k=3)
    synthetic.label(samples, seed=0)
    out = tmp_path_factory.mktemp("data") / "small.jsonl.gz"
    write_dataset(out, dataset_header("h100", "synthetic", synthetic.DESCRIPTION), samples)
    return out


def test_train_costmodel_json_names_the_new_file_and_its_evaluation(dataset_file, tmp_path,
                                                                    capsys):
    models = tmp_path / "models"
    code = main(["train-costmodel", str(dataset_file), "--device", "h100", "--out-dir",
                 str(models), "--epochs", "2", "--holdout-family", "adam", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["path"] == str(models / "learned-h100-v1.pt")
    assert Path(result["path"]).is_file()
    assert result["label"] == "learned-h100-v1" and result["version"] == 1
    assert result["origin"] == "synthetic" and result["device"] == "h100"
    assert [d["path"] for d in result["datasets"]] == [str(dataset_file)]
    assert result["readouts"] is None and result["readout_winner"] is None
    assert result["train_config"]["epochs"] == 2
    program, family = result["evaluation"]["program"], result["evaluation"]["family"]
    assert family["test_families"] == ["adam"]
    for evaluation in (program, family):
        for model in ("learned", "sol", "projected"):
            assert set(evaluation[model]) == METRICS
            assert evaluation[model]["count"] == evaluation["counts"]["test_samples"] > 0


def test_train_costmodel_prints_the_comparison_and_says_the_targets_are_synthetic(
        dataset_file, tmp_path, capsys):
    code = main(["train-costmodel", str(dataset_file), "--out-dir", str(tmp_path),
                 "--epochs", "1", "--compare-readouts", "--loss", "rank",
                 "--rank-kind", "hinge"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"learned-h100-v1: {tmp_path / 'learned-h100-v1.pt'} (synthetic")
    assert "trained on SYNTHETIC targets: not a GPU prediction" in out
    assert "held-out programs (" in out and "held-out families (" in out
    for row in ("learned", "sol", "projected", "mean", "max", "sum", "transformer"):
        assert f"\n  {row} " in out, row
    assert out.count("<- saved") == 1


def test_train_costmodel_names_a_missing_dataset(tmp_path, capsys):
    missing = tmp_path / "nowhere.jsonl.gz"
    assert main(["train-costmodel", str(missing), "--out-dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and str(missing) in error
    assert "Traceback" not in error and not list(tmp_path.iterdir())


def test_train_costmodel_refuses_data_of_another_device(dataset_file, tmp_path, capsys):
    assert main(["train-costmodel", str(dataset_file), "--device", "a100",
                 "--out-dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert str(dataset_file) in error and "for device h100, not a100" in error


@pytest.mark.skipif(gpu_available()[0], reason="a GPU is present: the command would time it")
def test_collect_without_a_gpu_says_why_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "data.jsonl.gz"
    assert main(["collect-costmodel-data", str(HLO / "softmax.hlo"), "--out", str(out)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ") and gpu_available()[1] in error
    assert "--synthetic" in error and not out.exists()


def test_collect_synthetic_writes_a_readable_dataset(tmp_path):
    out = tmp_path / "softmax.jsonl.gz"
    run = subprocess.run([sys.executable, "-m", "compiler", "collect-costmodel-data",
                          str(HLO / "softmax.hlo"), "--synthetic", "--top-k", "2",
                          "--out", str(out), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    header, samples = read_dataset(out)
    assert header["origin"] == summary["origin"] == "synthetic" and header["gpu"] is None
    assert summary["samples"] == len(samples) > 0
    assert all(s.program == "softmax" and s.target_us > 0 for s in samples)
    per_group: dict[str, int] = {}
    for sample in samples:
        per_group[sample.group] = per_group.get(sample.group, 0) + 1
    assert max(per_group.values()) <= 2                # --top-k 2


def test_the_options_train_costmodel_offers_are_the_models():
    from compiler import cli
    from compiler.cost.learned.model import READOUTS
    from compiler.cost.learned.train import LOSSES, TrainConfig

    assert cli.READOUTS == READOUTS and set(cli.LOSSES) == set(LOSSES)
    defaults = TrainConfig()
    assert (cli.DEFAULT_LOSS, cli.DEFAULT_RANK_KIND, cli.DEFAULT_EPOCHS, cli.DEFAULT_THREADS) == (
        defaults.loss, defaults.rank_kind, defaults.epochs, defaults.threads)
    assert cli.DEFAULT_RANK_KIND in cli.RANK_KINDS


@pytest.fixture(scope="module")
def model_file(dataset_file, tmp_path_factory) -> Path:
    models = tmp_path_factory.mktemp("models")
    assert main(["train-costmodel", str(dataset_file), "--out-dir", str(models),
                 "--epochs", "2", "--json"]) == 0
    return models / "learned-h100-v1.pt"


@pytest.mark.parametrize("command", ["explore", "codegen"])
def test_learned_model_adds_each_kernels_learned_time_as_the_model_predicts_it(
        command, model_file, capsys):
    from compiler.cost.learned.predict import OUTSIDE, LearnedPredictor
    from compiler.fusion.explore import explore

    path = HLO / "attention_block.hlo"
    assert main([command, str(path), "--strategy", "xla", "--json",
                 "--learned-model", str(model_file)]) == 0
    plan = json.loads(capsys.readouterr().out)["strategies"]["xla"]
    model = plan["learned_model"]
    assert {key: model[key] for key in ("label", "origin", "device")} == {
        "label": "learned-h100-v1", "origin": "synthetic", "device": "h100"}
    # The held-out figures the model file records, for pages that say how far to trust it.
    assert set(model["evaluation"]["program"]) >= {"learned", "projected", "sol"}
    learned = [k["learned_us"] for k in plan["kernels"]]
    # A time for every generated kernel like the ones it was trained on (softmax, rms_norm,
    # adam); none for the library calls, nor for kernels outside its training, which say so.
    assert [value is None for value in learned] == [k["learned_skipped"] is not None
                                                    for k in plan["kernels"]]
    skipped = [k["learned_skipped"] for k in plan["kernels"] if k["kind"] != "library"
               and k["learned_us"] is None]
    assert all(why.startswith(OUTSIDE) for why in skipped)
    assert plan["total"]["learned_outside"] == len(skipped)
    assert {k["learned_skipped"] for k in plan["kernels"] if k["kind"] == "library"} == {
        "a library call"}
    assert 0 < sum(v is not None for v in learned) < len(learned)
    if command == "explore":   # explore ranks plans with estimated registers, as predict does
        graph = import_graph(path.read_bytes(), str(path))
        expected = LearnedPredictor.load(model_file).predict_plan(
            graph, explore(graph, "h100", ["xla"])["xla"])
        assert [v is None for v in expected] == [v is None for v in learned]
        # The model predicts a kernel timed alone: less a lone launch, plus the plan's.
        launch = launch_for("h100", plan["runtime"])
        assert [v for v in learned if v is not None] == pytest.approx(
            [launch.kernel_us(device_work_of_alone("h100", v))
             for v in expected if v is not None], rel=1e-3, abs=1e-4)
    # The kernels it predicted none for stand in with their projected times.
    projected_rest = sum(k["proj_us"] for k in plan["kernels"] if k["learned_us"] is None)
    assert plan["total"]["learned_us"] == pytest.approx(
        sum(v for v in learned if v is not None) + projected_rest, rel=1e-3)
    assert plan["total"]["learned_kernels"] == sum(v is not None for v in learned)


def test_learned_model_is_refused_for_another_device_or_a_file_that_is_no_model(
        model_file, dataset_file, capsys):
    softmax = str(HLO / "softmax.hlo")
    assert main(["explore", softmax, "--device", "a100",
                 "--learned-model", str(model_file)]) == 1
    assert "a model for h100, not for a100" in capsys.readouterr().err
    assert main(["explore", softmax, "--learned-model", str(dataset_file)]) == 1
    error = capsys.readouterr().err
    assert f"{dataset_file}: not a learned cost model file" in error
    assert len(error.splitlines()) == 1


def test_without_a_learned_model_the_learned_fields_are_null(capsys):
    assert main(["explore", str(HLO / "softmax.hlo"), "--json"]) == 0
    for plan in json.loads(capsys.readouterr().out)["strategies"].values():
        assert plan["learned_model"] is None and plan["total"]["learned_us"] is None
        assert all(k["learned_us"] is None for k in plan["kernels"])


def test_the_text_report_says_how_many_kernels_the_model_left_outside_its_training(
        model_file, capsys):
    path = str(HLO / "attention_block.hlo")
    assert main(["explore", path, "--strategy", "xla", "--learned-model", str(model_file),
                 "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["strategies"]["xla"]["total"]
    assert total["learned_outside"] > 0
    assert main(["explore", path, "--strategy", "xla", "--learned-model",
                 str(model_file)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines()
                if "learned" in line and "kernels predicted" in line)
    assert line.endswith(f"the others projected ({total['learned_outside']} outside what it "
                         f"was trained on)")
