"""Which kernels of real plans the shipped learned model was trained on the like of, and what
its totals are when the others are left to the projected model (compiler/cost/learned/
support.py).

    .venv/bin/python benchmarks/learned_coverage.py [--modules a,b] [--write]
    .venv/bin/python benchmarks/learned_coverage.py --add-support MODEL_FILE

For every module and strategy plan on the H200: how many kernels the learned model describes,
how many of those lie outside its training support (and the first reason of each), and the
plan's device work under SOL, the projected model, and the learned model asked about every
kernel it can describe ("all") against only those inside its support ("inside"; the rest
priced by the projected model, as the explorer now does); then, for the programs held out of
its training, the network's MAPE on their measured kernels inside and outside its support.
--write stores the tables in results/learned_coverage.json.

--add-support writes into MODEL_FILE's header the support of the samples it was trained on:
its header's datasets, keeping the programs its header lists as trained on (a model trained
before the header kept its support). The weights are untouched.
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import sys
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from compiler.cost.learned.dataset import read_dataset  # noqa: E402
from compiler.cost.learned.predict import OUTSIDE, LearnedPredictor  # noqa: E402
from compiler.cost.learned.support import TrainingSupport  # noqa: E402
from compiler.fusion.explore import explore  # noqa: E402
from compiler.importers import load_graph  # noqa: E402
from compiler.target.launch import device_work_of_alone  # noqa: E402

SHIPPED_MODEL = ROOT / "compiler" / "cost" / "learned" / "models" / "learned-h200-v2.pt"
# The campaign's modules the model was not trained on (benchmarks/data/campaign/: measured on
# the H200, no datasets), modules of the zoo, and the 12-layer training step.
MODULES = {
    "layer_norm_bwd": "benchmarks/data/campaign/layer_norm_bwd.small.hlo.gz",
    "bias_gelu": "benchmarks/data/campaign/bias_gelu.small.hlo.gz",
    "attention_block": "benchmarks/data/campaign/attention_block.small.hlo.gz",
    "llama_step": "benchmarks/data/campaign/llama_step.small.hlo.gz",
    "gpt2_4l": "benchmarks/data/zoo/gpt2_4l.hlo.gz",
    "gru_16steps": "benchmarks/data/zoo/gru_16steps.hlo.gz",
    "efficientnet_mbconv": "benchmarks/data/zoo/efficientnet_mbconv.hlo.gz",
    "transformer_12l": "benchmarks/data/transformer_12l.hlo.gz",
}
STRATEGIES = ["xla", "stitch", "cost"]


def add_support(path: Path) -> dict:
    """Fit the support of the model's training samples and write it into its header."""
    import torch

    data = torch.load(path, weights_only=True)
    header = data["header"]
    trained_on = set((header.get("programs") or {}).get("train") or ())
    if not trained_on:
        raise SystemExit(f"{path}: its header names no training programs")
    samples = []
    for dataset in header.get("datasets") or ():
        _, file_samples = read_dataset(ROOT / dataset["path"])
        samples += [s for s in file_samples if s.program in trained_on]
    support = TrainingSupport.fit(samples)
    header["support"] = support.to_dict()
    torch.save(data, path)
    return header["support"]


def coverage(name: str, predictor: LearnedPredictor) -> dict:
    graph = load_graph(str(ROOT / MODULES[name]))
    plans = explore(graph, "h200", STRATEGIES)
    # The same network asked about every kernel it can describe, as before the support.
    unbounded = LearnedPredictor.from_model(
        predictor.model, {k: v for k, v in predictor.header.items() if k != "support"})
    rows = []
    for strategy, plan in plans.items():
        everything = unbounded.predict_plan(graph, plan)
        inside = predictor.predictions(graph, plan)
        reasons = collections.Counter(
            why[len(OUTSIDE) + 2:].split(";")[0].rstrip(")") for _, why in inside
            if why and why.startswith(OUTSIDE))
        projected = [k.projected.projected_us if k.projected else k.sol.total_us
                     for k in plan.kernels]

        def learned(times):
            return sum(projected[i] if t is None else device_work_of_alone("h200", t)
                       for i, t in enumerate(times))

        rows.append({"strategy": strategy, "kernels": len(plan.kernels),
                     "described": sum(t is not None for t in everything),
                     "inside": sum(t is not None for t, _ in inside),
                     "outside_reasons": dict(reasons.most_common()),
                     "sol_us": round(sum(k.sol.total_us for k in plan.kernels), 2),
                     "projected_us": round(sum(projected), 2),
                     "learned_all_us": round(learned(everything), 2),
                     "learned_inside_us": round(learned([t for t, _ in inside]), 2)})
    return {"module": name, "nodes": len(graph), "plans": rows}


def held_out(predictor: LearnedPredictor) -> list[dict]:
    """The programs held out of its training: per program, its measured kernels inside and
    outside the support, and the network's MAPE on each (against the dataset's projected
    times, which are the projected model's of the campaign's day)."""
    from compiler.cost.learned.model import predict_us  # torch

    rows = []
    by_path = {Path(d["path"]).name: d for d in predictor.header.get("datasets") or ()}
    for program in (predictor.header.get("programs") or {}).get("test") or ():
        dataset = by_path[f"h200-{program}.jsonl.gz"]
        samples = read_dataset(ROOT / dataset["path"])[1]
        times = predict_us(predictor.model, samples)
        for side in ("inside", "outside"):
            chosen = [k for k, s in enumerate(samples)
                      if bool(predictor.outside(s)) == (side == "outside")]
            if not chosen:
                continue

            def mape(predicted):
                return round(100 * sum(abs(predicted(k) - samples[k].target_us)
                                       / samples[k].target_us for k in chosen) / len(chosen), 1)

            rows.append({"program": program, "side": side, "kernels": len(chosen),
                         "learned_mape": mape(lambda k: float(times[k])),
                         "projected_mape": mape(lambda k: samples[k].projected_us)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default=",".join(MODULES))
    parser.add_argument("--add-support", metavar="MODEL_FILE", type=Path)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.add_support:
        support = add_support(args.add_support)
        print(f"{args.add_support}: support of {support['samples']} training samples, "
              f"categories {', '.join(support['categories'])}")
        return
    predictor = LearnedPredictor.load(SHIPPED_MODEL)
    if predictor.support is None:
        raise SystemExit(f"{SHIPPED_MODEL} keeps no training support: run --add-support")
    modules = []
    print(f"{'module':<20} {'plan':<7} {'kernels':>7} {'described':>9} {'inside':>6} "
          f"{'SOL':>9} {'projected':>9} {'learned all':>11} {'inside':>9}  outside because")
    for name in args.modules.split(","):
        modules.append(coverage(name, predictor))
        for row in modules[-1]["plans"]:
            print(f"{name:<20} {row['strategy']:<7} {row['kernels']:>7} {row['described']:>9} "
                  f"{row['inside']:>6} {row['sol_us']:>9,.1f} {row['projected_us']:>9,.1f} "
                  f"{row['learned_all_us']:>11,.1f} {row['learned_inside_us']:>9,.1f}  "
                  f"{', '.join(f'{k} ({v})' for k, v in row['outside_reasons'].items())}",
                  flush=True)
    held = held_out(predictor)
    print("\nheld-out programs' measured kernels (MAPE of the network, and of the projected "
          "model of the campaign's day):")
    for row in held:
        print(f"  {row['program']:<20} {row['side']:<8} {row['kernels']:>3} kernels  learned "
              f"{row['learned_mape']:5.1f} %  projected {row['projected_mape']:5.1f} %")
    if args.write:
        out = HERE / "results" / "learned_coverage.json"
        out.write_text(json.dumps({
            "date": date.today().isoformat(), "machine": f"{platform.machine()}, 2 cores",
            "command": " ".join(["benchmarks/learned_coverage.py"] + sys.argv[1:]),
            "model": SHIPPED_MODEL.name, "support": predictor.support.to_dict(),
            "held_out": held, "modules": modules}, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
