"""The fusion autotuner on the model zoo and the training steps (issue 37): the tuned plan's total
against the cost strategy's, time to the first better plan and time per evaluation, for each
search (annealing, beam) and model.

Run:  .venv/bin/python benchmarks/autotune.py [--modules a,b] [--evaluations 600] [--seed 0]
                                              [--learned] [--write]

For each module: explore unfused, xla, stitch and cost on the H100 (not timed), then tune from
those plans with compiler/fusion/autotune.py under the projected model, once with each search,
the same evaluation budget and seed. With --learned, also on the H200 with the shipped learned
model (compiler/cost/learned/models/learned-h200-v2.pt, trained on the H200 campaign) scoring.
A tuned plan's gain is against the best start under the same model (the cost plan, nearly
always): never negative, since the starts are candidates too. Every tuned plan's totals under
the other models are reported beside it: a gain the projected model finds that SOL or the
learned model disputes is a plan to measure, not a result. --write stores the figures in
benchmarks/results/autotune.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

from compiler.fusion.autotune import Budget, autotune  # noqa: E402
from compiler.fusion.explore import explore  # noqa: E402
from compiler.importers import load_graph  # noqa: E402

# Modules of the zoo (benchmarks/data/zoo/) and the 12-layer training step, small to large.
MODULES = {
    "moe_top2": "zoo/moe_top2.hlo.gz",
    "gru_16steps": "zoo/gru_16steps.hlo.gz",
    "t5_block": "zoo/t5_block.hlo.gz",
    "unet_resblock": "zoo/unet_resblock.hlo.gz",
    "efficientnet_mbconv": "zoo/efficientnet_mbconv.hlo.gz",
    "gnn_mpnn": "zoo/gnn_mpnn.hlo.gz",
    "gpt2_4l": "zoo/gpt2_4l.hlo.gz",
    "llama_2l": "zoo/llama_2l.hlo.gz",
    "transformer_12l": "transformer_12l.hlo.gz",
}
STRATEGIES = ["unfused", "xla", "stitch", "cost"]
SHIPPED_MODEL = HERE.parent / "compiler" / "cost" / "learned" / "models" / "learned-h200-v2.pt"


def tune(graph, starts, model, search, evaluations, seed, predictor=None) -> dict:
    started = time.perf_counter()
    result = autotune(graph, starts, model, search, Budget(evaluations=evaluations), seed,
                      top_k=3, predictor=predictor)
    seconds = time.perf_counter() - started
    best_start = min(result.starts.values())
    return {"search": search, "model": model, "best_start_us": round(best_start, 3),
            "cost_us": round(result.starts.get("cost", float("nan")), 3),
            "tuned_us": round(result.best.score, 3),
            "gain_percent": round(100 * (best_start - result.best.score) / best_start, 2),
            "moves": len(result.best.moves), "from": result.best.start,
            "evaluations": result.evaluations, "refused": result.refused,
            "seconds": round(seconds, 2),
            "ms_per_evaluation": round(1e3 * seconds / max(1, result.evaluations), 2),
            "first_improvement_s": result.first_improvement_s,
            "tuned_totals": {key: value for key, value in result.totals[0].items()
                             if key.endswith("_us")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", default=",".join(MODULES))
    parser.add_argument("--evaluations", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learned", action="store_true")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    predictor = None
    if args.learned:
        from compiler.cost.learned.predict import LearnedPredictor
        predictor = LearnedPredictor.load(SHIPPED_MODEL)
    rows = []
    for name in args.modules.split(","):
        graph = load_graph(str(HERE / "data" / MODULES[name]))
        runs = []
        for device, model in [("h100", "projected")] + ([("h200", "learned")] if predictor
                                                          else []):
            starts = explore(graph, device, STRATEGIES)
            for search in ("anneal", "beam"):
                run = tune(graph, starts, model, search, args.evaluations, args.seed,
                           predictor if model == "learned" else None)
                run["device"] = device
                runs.append(run)
                print(f"{name:<20} {len(graph):>6} nodes  {device} {model:<9} {search:<6} "
                      f"best start {run['best_start_us']:>11,.2f} µs  tuned "
                      f"{run['tuned_us']:>11,.2f} µs  gain {run['gain_percent']:5.2f} %  "
                      f"{run['moves']:>3} moves  first better "
                      f"{run['first_improvement_s'] if run['first_improvement_s'] is not None else '-'} s  "
                      f"{run['ms_per_evaluation']:.1f} ms/eval", flush=True)
        rows.append({"module": name, "nodes": len(graph), "runs": runs})
    if args.write:
        out = HERE / "results" / "autotune.json"
        out.write_text(json.dumps({
            "date": date.today().isoformat(), "machine": f"{platform.machine()}, 2 cores",
            "command": " ".join(["benchmarks/autotune.py"] + sys.argv[1:]),
            "evaluations": args.evaluations, "seed": args.seed, "modules": rows}, indent=1)
            + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
