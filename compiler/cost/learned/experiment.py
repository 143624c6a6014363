"""Training a learned cost model as an experiment: held-out splits, the analytic baselines on
the same test set, a readout comparison, and the versioned model file it all ends in.

Two splits, both by whole programs (plans of one kernel, and kernels of one program, are too
alike to test one with another, see train.py):
- "program": about a quarter of the programs held out (train.split_by_program);
- "family": whole model families held out (dataset.family_of: every layer-norm variant, or
  every transformer size, on one side), named with `holdout` or drawn with the seed. It asks
  more of the model: to predict kernels of a kind of program it has never seen.

On each split the learned model is trained on the training side and evaluated on the test
side, and so are the SOL and projected models (sample.sol_us, sample.projected_us): all three
on exactly the same held-out samples, with train.metrics.

`train_costmodel` is what the CLI's train-costmodel runs: it saves the model trained on the
program split (the winning readout's when readouts are compared) as the next version in the
registry (registry.py), its header carrying where the data came from, both evaluations and
the support of its training samples (support.py: what it will predict).

Where the targets came from travels with the data, never guessed: `load_datasets` describes
every file it reads ({"path", "sha256", "samples", "origin", "gpu", "device"}, origin from the
file's header) and marks each sample's `extra["origin"]`; `train_costmodel` calls a model
"measured" only when it was given dataset descriptions, all of them measured, and no sample is
marked synthetic. Anything else (synthetic files, or samples of unknown provenance) makes a
"synthetic" model, which the registry does not activate unless asked to.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from compiler.cost.learned.dataset import read_dataset
from compiler.cost.learned.features import KernelSample
from compiler.cost.learned.model import READOUTS, CostModel, ModelConfig
from compiler.cost.learned.registry import ModelFile, next_model_path
from compiler.cost.learned.support import TrainingSupport
from compiler.cost.learned.train import (TrainConfig, draw_held_out, evaluate, metrics,
                                         read_header, save_model, split_by_program, train)
from compiler.errors import InputError
from compiler.target.devices import get_device

SPLITS = ("program", "family")
TEST_FRACTION = 0.25


# -- data -------------------------------------------------------------------------------------


def load_datasets(paths, device: str) -> tuple[list[KernelSample], list[dict]]:
    """(samples, descriptions) of the dataset files at `paths`, all made for `device`; each
    sample's extra["origin"] is its file's origin. InputError for a file that is missing,
    malformed, made for another device, or given twice."""
    device = get_device(device).name
    samples: list[KernelSample] = []
    datasets: list[dict] = []
    if not paths:
        raise InputError("no dataset files given")
    for path in map(Path, paths):
        header, file_samples = read_dataset(path)
        if header.get("device") != device:
            raise InputError(f"a dataset for device {header.get('device')}, not {device}; "
                             f"train one model per device", str(path))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        twin = next((d for d in datasets if d["sha256"] == digest), None)
        if twin is not None:
            raise InputError(f"the same data as {twin['path']}: give each dataset once",
                             str(path))
        for sample in file_samples:
            sample.extra["origin"] = header["origin"]
        samples += file_samples
        datasets.append({"path": str(path), "sha256": digest, "samples": len(file_samples),
                         "origin": header["origin"], "gpu": header.get("gpu"),
                         "device": device})
    return samples, datasets


def split(samples: list[KernelSample], how: str = "program",
          test_fraction: float = TEST_FRACTION,
          seed: int = 0, holdout=None) -> tuple[list[KernelSample], list[KernelSample]]:
    """(train, test) by whole programs ("program") or whole families ("family": the families
    named in `holdout`, else about `test_fraction` of them drawn with `seed`, at least one
    each side when there are two or more)."""
    if how == "program":
        if holdout:
            raise ValueError("holdout names families: use it with the family split")
        return split_by_program(samples, test_fraction, seed)
    if how != "family":
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {how!r}")
    families = sorted({s.family for s in samples})
    if holdout:
        unknown = sorted(set(holdout) - set(families))
        if unknown:
            raise InputError(f"no samples of the held-out family {', '.join(unknown)}; the "
                             f"data has {', '.join(families)}")
        test_families = set(holdout)
        if test_families == set(families):
            raise InputError("every family is held out: nothing is left to train on")
    else:
        test_families = draw_held_out(families, test_fraction, seed)
    train_set = [s for s in samples if s.family not in test_families]
    test_set = [s for s in samples if s.family in test_families]
    return train_set, test_set


# -- experiments ------------------------------------------------------------------------------


def baselines(test: list[KernelSample]) -> dict:
    """metrics of the SOL and the projected model on `test`."""
    return {"sol": metrics([s.sol_us for s in test], test),
            "projected": metrics([s.projected_us for s in test], test)}


def _counts(train_set: list[KernelSample], test_set: list[KernelSample]) -> dict:
    counts = {}
    for side, part in (("train", train_set), ("test", test_set)):
        counts[f"{side}_samples"] = len(part)
        counts[f"{side}_groups"] = len({s.group for s in part})
        counts[f"{side}_programs"] = len({s.program for s in part})
        counts[f"{side}_families"] = len({s.family for s in part})
    return counts


def _fit(samples: list[KernelSample], model_config: ModelConfig | None,
         train_config: TrainConfig | None, how: str, test_fraction: float, seed: int,
         holdout) -> tuple[CostModel, dict, list[KernelSample]] | None:
    """(model, result, training samples) of one split; None when the split leaves no test
    set (one program, or one family)."""
    train_set, test_set = split(samples, how, test_fraction, seed, holdout)
    if not train_set or not test_set:
        return None
    start = time.perf_counter()
    model, history = train(train_set, model_config, train_config)
    result = {"learned": evaluate(model, test_set), **baselines(test_set),
              "test_programs": sorted({s.program for s in test_set}),
              "counts": _counts(train_set, test_set),
              "train_seconds": time.perf_counter() - start,
              "final_loss": history[-1] if history else None}
    if how == "family":
        result["test_families"] = sorted({s.family for s in test_set})
    return model, result, train_set


def run_experiment(samples: list[KernelSample], model_config: ModelConfig | None = None,
                   train_config: TrainConfig | None = None, how: str = "program",
                   test_fraction: float = TEST_FRACTION, seed: int = 0,
                   holdout=None) -> dict | None:
    """Train on one side of the split and evaluate the learned, SOL and projected models on
    the other: {"learned", "sol", "projected": metrics, "test_programs", ["test_families",]
    "counts", "train_seconds", "final_loss"}; None when the split has no test side."""
    fitted = _fit(samples, model_config, train_config, how, test_fraction, seed, holdout)
    return fitted[1] if fitted else None


def _readout_runs(samples, model_config, train_config, test_fraction, seed, holdout) -> dict:
    """readout -> {split: (model, result, training samples) or None}, for every readout."""
    base = model_config or ModelConfig()
    return {readout: {how: _fit(samples, replace(base, readout=readout), train_config, how,
                                test_fraction, seed, holdout if how == "family" else None)
                      for how in SPLITS}
            for readout in READOUTS}


def _results(runs: dict) -> dict:
    """_readout_runs without the models: {readout: {split: result or None}}."""
    return {readout: {how: fitted[1] if fitted else None for how, fitted in by_split.items()}
            for readout, by_split in runs.items()}


def readout_experiments(samples: list[KernelSample], model_config: ModelConfig | None = None,
                        train_config: TrainConfig | None = None,
                        test_fraction: float = TEST_FRACTION, seed: int = 0,
                        holdout=None) -> dict:
    """run_experiment for every readout (model.READOUTS, the rest of `model_config`
    unchanged) on both splits: {readout: {"program": result, "family": result or None}}.
    InputError when the samples come from one program."""
    runs = _readout_runs(samples, model_config, train_config, test_fraction, seed, holdout)
    if runs[READOUTS[0]]["program"] is None:
        raise InputError("the samples come from one program: a held-out test needs two or more")
    return _results(runs)


def best_readout(experiments: dict) -> str:
    """The readout of readout_experiments' results with the lowest test MAPE on the program
    split; ties go to the higher Kendall tau."""
    def key(readout: str):
        learned = experiments[readout]["program"]["learned"]
        return (learned["mape"], -(learned["mean_kendall_tau"] or 0.0))
    return min(experiments, key=key)


def readout_table(experiments: dict) -> dict:
    """The learned model's metrics of readout_experiments' results, as a model file's header
    keeps them: {readout: {"program": metrics, "family": metrics or None}}."""
    return {readout: {how: result["learned"] if result else None
                      for how, result in by_split.items()}
            for readout, by_split in experiments.items()}


# -- the model file ---------------------------------------------------------------------------


def origin_of(datasets, samples: list[KernelSample]) -> str:
    """The origin of a model trained on `samples`: "measured" only when datasets describe
    them, every one measured, and no sample is marked synthetic; "synthetic" otherwise."""
    if datasets and all(d.get("origin") == "measured" for d in datasets) and \
            all(s.extra.get("origin", "measured") == "measured" for s in samples):
        return "measured"
    return "synthetic"


def train_costmodel(samples: list[KernelSample], device: str, out_dir: str | Path,
                    datasets=(), model_config: ModelConfig | None = None,
                    train_config: TrainConfig | None = None, compare_readouts: bool = False,
                    holdout_families=None, seed: int = 0, also=()) -> ModelFile:
    """Train on the program split's training side (samples with a target only), evaluate the
    learned, SOL and projected models on its test side and on the held-out families, and save
    the model as the next version of `device` in `out_dir` (above those in the directories
    `also`: registry.next_model_path). With `compare_readouts`, every
    readout is trained on both splits and the saved model is the winner's (model_config's
    other settings kept). `seed` draws the splits, and seeds training unless `train_config`
    is given. InputError when no sample has a target, they come from fewer than two programs,
    a dataset is for another device, or a held-out family is not in the data."""
    device = get_device(device).name
    foreign = [d["path"] for d in datasets if d.get("device") != device]
    if foreign:
        raise InputError(f"datasets for another device than {device}: {', '.join(foreign)}")
    labelled = [s for s in samples if s.target_us is not None]
    if not labelled:
        raise InputError("no sample has a target time: collect measured data first (or "
                         "label it with synthetic targets for a pipeline test)")
    programs = sorted({s.program for s in labelled})
    if len(programs) < 2:
        raise InputError(f"samples of {len(programs)} program ({', '.join(programs)}): "
                         f"a held-out test needs two or more")
    train_config = train_config or TrainConfig(seed=seed)
    holdout = list(holdout_families) if holdout_families else None
    if holdout:
        split(labelled, "family", holdout=holdout)   # an unknown family fails before training
    if compare_readouts:
        runs = _readout_runs(labelled, model_config, train_config, TEST_FRACTION, seed,
                             holdout)
        results = _results(runs)
        winner = best_readout(results)
        program_run, family_run = runs[winner]["program"], runs[winner]["family"]
        readouts = readout_table(results)
    else:
        program_run = _fit(labelled, model_config, train_config, "program", TEST_FRACTION,
                           seed, None)
        family_run = _fit(labelled, model_config, train_config, "family", TEST_FRACTION, seed,
                          holdout)
        winner, readouts = None, None
    model, program_result, train_set = program_run
    test_programs = program_result["test_programs"]
    evaluation = {"program": program_result, "family": family_run[1] if family_run else None}
    extra = {"device": device, "origin": origin_of(datasets, labelled),
             "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "datasets": [dict(d) for d in datasets],
             "programs": {"train": sorted({s.program for s in train_set}),
                          "test": test_programs},
             "evaluation": evaluation, "readouts": readouts, "readout_winner": winner,
             # What the saved model was trained on, which predictions stay inside (support.py).
             "support": TrainingSupport.fit(train_set).to_dict()}
    path = _save_next(Path(out_dir), device, model, train_config, program_result["learned"],
                      extra, also)
    return ModelFile(path, device, extra["version"], read_header(path))


def _save_next(directory: Path, device: str, model: CostModel, train_config: TrainConfig,
               model_metrics: dict, extra: dict, also=()) -> Path:
    """Save as the next free version. The name is claimed by creating the file exclusively,
    so two trainings finishing together never write one file; until the model is written
    the registry skips the empty file."""
    directory.mkdir(parents=True, exist_ok=True)
    while True:
        path = next_model_path(directory, device, also)
        try:
            path.open("xb").close()
        except FileExistsError:
            continue
        extra["version"] = int(path.stem.rsplit("-v", 1)[1])
        save_model(path, model, train_config, model_metrics, extra)
        return path


# -- as text ----------------------------------------------------------------------------------

# (metrics key, column title) of the printed tables, as train.metrics names them.
METRIC_COLUMNS = (("mape", "MAPE %"), ("median_ape_under_5us", "APE<5us %"),
                  ("median_ape_over_5us", "APE>=5us %"), ("mean_kendall_tau", "tau"),
                  ("mean_top1_regret_percent", "top-1 reg %"),
                  ("mean_top5_regret_percent", "top-5 reg %"))


def _figure(value) -> str:
    return f"{value:11.3f}" if value is not None else f"{'-':>11s}"


def format_evaluation(header: dict) -> list[str]:
    """A model file header's evaluation as text lines: per held-out split, learned vs SOL vs
    projected, then the readout comparison when there is one (train-costmodel and
    manage.py train_costmodel print it)."""
    lines = []
    columns = f"  {'model':10s}" + "".join(f"{title:>12s}" for _, title in METRIC_COLUMNS)
    for how, title in (("program", "held-out programs"), ("family", "held-out families")):
        result = (header.get("evaluation") or {}).get(how)
        if result is None:
            lines.append(f"{title}: none (the data has a single {how})")
            continue
        counts = result["counts"]
        held = result.get("test_families", result["test_programs"])
        lines.append(f"{title} ({', '.join(held)}): {counts['test_samples']} samples, "
                     f"tau over {result['learned']['groups_ranked']} kernels' plans; "
                     f"trained on {counts['train_samples']} samples of "
                     f"{counts['train_programs']} programs in {result['train_seconds']:.1f} s")
        lines.append(columns)
        for name in ("learned", "sol", "projected"):
            lines.append(f"  {name:10s}" + "".join(_figure(result[name][key])
                                                   for key, _ in METRIC_COLUMNS))
    if header.get("readouts"):
        lines.append("readouts (learned, test MAPE % / Kendall tau):")
        for readout, by_split in header["readouts"].items():
            cells = [f"{how} " + (f"{_figure(m['mape']).strip()} / "
                                  f"{_figure(m['mean_kendall_tau']).strip()}" if m else "-")
                     for how, m in by_split.items()]
            mark = "  <- saved" if readout == header.get("readout_winner") else ""
            lines.append(f"  {readout:12s} " + ", ".join(cells) + mark)
    return lines
