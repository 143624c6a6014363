"""Training the learned cost model on the CPU, and ranking it against the SOL and projected
models, on SYNTHETIC targets: no GPU has timed these kernels.

Run:  .venv/bin/python benchmarks/learned_cost.py [--epochs 6] [--write]

The data: every program that imports among tests/data/hlo/*.hlo, tests/data/xla/*.hlo
(XLA's test inputs, vendored) and benchmarks/data/transformer_12l.hlo.gz, each
cut into kernels by all four strategies, each kernel under every CodeGen plan the projected
model ranks (samples.program_samples with top_k=None), on the H100 model. Targets come from
synthetic.label (seed 0): a known nonlinear function of the projected time, block size and
node count with 5 % noise. The figures show that the pipeline learns such a function fast
enough on a CPU; they say nothing about accuracy on a GPU.

Measured: training speed (samples per second, seconds per epoch and the one-off setup of
normalising and collating the batches, with one torch thread and with one per core), then
every readout trained for `epochs` on both splits (held-out programs, held-out families),
each next to the SOL and projected models on the same held-out kernels. --write stores the
figures in benchmarks/results/learned_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from compiler.codegen.c_syntax import CodegenUnsupported  # noqa: E402
from compiler.cost.learned import synthetic  # noqa: E402
from compiler.stages.learned.samples import program_samples  # noqa: E402
from compiler.cost.learned.experiment import (best_readout, readout_experiments,  # noqa: E402
                                              split)
from compiler.cost.learned.model import ModelConfig  # noqa: E402
from compiler.cost.learned.train import TrainConfig, train  # noqa: E402
from compiler.errors import InputError  # noqa: E402
from compiler.importers import load_graph  # noqa: E402

DEVICE = "h100"
SOURCES = (ROOT / "tests" / "data" / "hlo", ROOT / "tests" / "data" / "xla")
TRANSFORMER = HERE / "data" / "transformer_12l.hlo.gz"


def build_samples() -> tuple[list, list[dict], list[dict]]:
    """(samples, programs [{"program", "family", "samples"}], skipped [{"file", "why"}])."""
    files = [path for source in SOURCES for path in sorted(source.glob("*.hlo"))]
    samples, programs, skipped = [], [], []
    for path in files + [TRANSFORMER]:
        name = path.name.split(".")[0]
        try:
            graph = load_graph(str(path))
            found = program_samples(graph, name, DEVICE)
        except (InputError, CodegenUnsupported) as error:
            skipped.append({"file": str(path.relative_to(ROOT.parent)), "why": str(error)})
            continue
        samples += found
        programs.append({"program": name, "family": found[0].family if found else None,
                         "samples": len(found)})
    synthetic.label(samples, seed=0)
    return samples, programs, skipped


def training_speed(samples: list, epochs: int) -> dict:
    """Seconds of one and of `epochs` epochs on the program split's training side: the
    difference gives seconds per epoch, the rest is setup (normalisation, batches)."""
    train_set, _ = split(samples, "program")
    timings = {}
    for threads, count in ((1, 1), (os.cpu_count() or 1, 1), (1, epochs)):
        start = time.perf_counter()
        train(train_set, ModelConfig(), TrainConfig(epochs=count, threads=threads))
        timings[(threads, count)] = time.perf_counter() - start
    per_epoch = (timings[(1, epochs)] - timings[(1, 1)]) / (epochs - 1)
    return {"train_samples": len(train_set), "epochs": epochs,
            "total_s": timings[(1, epochs)], "per_epoch_s": per_epoch,
            "setup_s": timings[(1, 1)] - per_epoch,
            "samples_per_s": len(train_set) / per_epoch,
            "one_epoch_s_by_threads": {"1": timings[(1, 1)],
                                       str(os.cpu_count()): timings[(os.cpu_count() or 1, 1)]}}


def _cell(value) -> str:
    return f"{value:9.2f}" if value is not None else f"{'-':>9s}"


def report(experiments: dict, winner: str) -> None:
    columns = (("mape", "MAPE %"), ("median_ape_under_5us", "<5us %"),
               ("median_ape_over_5us", ">=5us %"), ("mean_kendall_tau", "tau"),
               ("mean_top1_regret_percent", "top-1 %"), ("mean_top5_regret_percent", "top-5 %"))
    for how, title in (("program", "held-out programs"), ("family", "held-out families")):
        first = experiments[winner][how]
        counts = first["counts"]
        print(f"{title}: {counts['test_samples']} samples of "
              f"{counts['test_programs']} programs ({counts['test_families']} families); "
              f"trained on {counts['train_samples']}")
        print(f"  {'model':20s}" + "".join(f"{title:>9s}" for _, title in columns) +
              f"{'train s':>9s}")
        rows = [(f"learned {r}", experiments[r][how]["learned"], experiments[r][how]) for r in
                experiments] + [(name, first[name], None) for name in ("sol", "projected")]
        for name, metrics, result in rows:
            print(f"  {name:20s}" + "".join(_cell(metrics[key]) for key, _ in columns) +
                  (_cell(result["train_seconds"]) if result else ""))
    print(f"winner (lowest held-out-program MAPE): {winner}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be 2 or more (one epoch is the setup's reference)")
    started = time.perf_counter()
    samples, programs, skipped = build_samples()
    build_s = time.perf_counter() - started
    print(f"{len(samples)} samples ({len({s.group for s in samples})} kernels) of "
          f"{len(programs)} programs, {len({p['family'] for p in programs})} families, in "
          f"{build_s:.0f} s; {len(skipped)} files skipped; targets SYNTHETIC")
    speed = training_speed(samples, args.epochs)
    print(f"training (mean readout, 1 thread): {speed['samples_per_s']:.0f} samples/s, "
          f"{speed['per_epoch_s']:.1f} s/epoch + {speed['setup_s']:.1f} s setup, "
          f"{speed['total_s']:.1f} s for {args.epochs} epochs of {speed['train_samples']} "
          f"samples; one epoch by threads: {speed['one_epoch_s_by_threads']}")
    experiments = readout_experiments(samples, ModelConfig(), TrainConfig(epochs=args.epochs))
    winner = best_readout(experiments)
    report(experiments, winner)
    total_s = time.perf_counter() - started
    print(f"total {total_s:.0f} s")
    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "learned_cost.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "python": platform.python_version(),
            "device_model": DEVICE,
            "command": f".venv/bin/python benchmarks/learned_cost.py --epochs {args.epochs} "
                       f"--write",
            "targets": f"SYNTHETIC, not GPU timings: {synthetic.DESCRIPTION}",
            "samples": len(samples), "kernels": len({s.group for s in samples}),
            "programs": programs, "skipped": skipped, "build_samples_s": build_s,
            "training_speed": speed, "experiments": experiments, "readout_winner": winner,
            "total_s": total_s,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
