"""Exploration time of every fusion strategy, with kernel counts next to XLA's own.

Run:  .venv/bin/python benchmarks/explore_speed.py [--repeat 3] [--write] [--deep]

For the 12- and 48-layer transformer training steps in benchmarks/data/ (and, with --deep, the
96-layer Llama training step in benchmarks/data/zoo/), imported once and not timed here (see
import_speed.py), runs `explore` with every strategy `repeat` times in a fresh process, as the
CLI and the web app run it: each strategy, then every plan priced under the projected model
(the cost search prices its candidates with it too). Reports the median wall time of the whole
call, each strategy's own time, the kernel count, the DRAM bytes and the SOL and projected
totals on the H100 model. XLA's own fusion counts for the same modules
(benchmarks/xla_fusion_counts.py, from JAX's optimised HLO) are printed beside ours when that
file exists. --write stores the figures in benchmarks/results/explore_speed.json.

Targets (issue 14): all four strategies, projected, on the 12-layer module in under 5 s on the
2-core development machine, time per node growing at most 1.15x from 12 to 48 layers, and a
96-layer module in under 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
MODULES = {"transformer_12l": "transformer_12l.hlo.gz",
           "transformer_48l": "transformer_48l.hlo.gz"}
DEEP = {"llama_96l": "zoo/llama_96l.hlo.gz"}
STRATEGIES = ["unfused", "xla", "stitch", "cost"]


def measure_one(module: str, path: str, repeat: int) -> dict:
    """Runs inside a fresh interpreter: `explore` with every strategy, `repeat` times."""
    sys.path.insert(0, str(HERE.parent))
    from compiler.fusion.explore import explore
    from compiler.importers import load_graph

    graph = load_graph(str(HERE / "data" / path))
    runs, walls = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        runs.append(explore(graph, "h100", STRATEGIES))
        walls.append(time.perf_counter() - start)
    rows = {}
    for name in STRATEGIES:
        plan = runs[-1][name]
        rows[name] = {"median_s": statistics.median(r[name].explore_ms for r in runs) / 1e3,
                      "kernels": len(plan.kernels), "dram_mb": plan.dram_bytes / 1e6,
                      "sol_us": plan.total_sol_us, "proj_us": plan.total_projected_us}
    return {"module": module, "nodes": len(graph), "explore_s": statistics.median(walls),
            "strategies": rows}


def xla_counts() -> dict[str, dict[str, int]]:
    """module -> {"XLA:CPU": kernels, "XLA:GPU H100": kernels} from xla_fusion_counts.json."""
    path = HERE / "results" / "xla_fusion_counts.json"
    if not path.exists():
        return {}
    targets = json.loads(path.read_text())["targets"]
    labels = {"cpu": "XLA:CPU", "cuda_h100_aot": "XLA:GPU H100"}
    counts: dict[str, dict[str, int]] = {}
    for key, label in labels.items():
        for module, figures in targets.get(key, {}).get("modules", {}).items():
            counts.setdefault(module, {})[label] = figures["entry"]["total"]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--deep", action="store_true", help="also the 96-layer Llama step")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_one(*args.child, args.repeat)))
        return
    modules = {**MODULES, **(DEEP if args.deep else {})}
    results = []
    for module, path in modules.items():
        repeat = args.repeat if module in MODULES else 1
        out = subprocess.run([sys.executable, __file__, "--child", module, path, "--repeat",
                              str(repeat)], check=True, capture_output=True, text=True)
        results.append(json.loads(out.stdout))
    xla = xla_counts()
    for result in results:
        print(f"{result['module']} ({result['nodes']} nodes): explore, all strategies "
              f"projected, {result['explore_s']:.2f} s")
        print(f"  {'strategy':9s} {'time s':>8s} {'kernels':>8s} {'DRAM MB':>9s} {'SOL us':>10s} "
              f"{'proj us':>10s}")
        for name, r in result["strategies"].items():
            proj = "-" if r["proj_us"] is None else f"{r['proj_us']:.1f}"
            print(f"  {name:9s} {r['median_s']:8.3f} {r['kernels']:8d} {r['dram_mb']:9.1f} "
                  f"{r['sol_us']:10.1f} {proj:>10s}")
        for label, kernels in xla.get(result["module"], {}).items():
            print(f"  {label:21s} {kernels:8d}  (kernels in XLA's own optimised HLO)")
        result["xla_kernels"] = xla.get(result["module"], {})
    per_node = {r["module"]: r["explore_s"] / r["nodes"] for r in results}
    ratio = per_node["transformer_48l"] / per_node["transformer_12l"]
    print(f"time per node, 48 vs 12 layers: {ratio:.2f}x (1.0 = exactly linear)")
    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "explore_speed.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "python": platform.python_version(),
            "device_model": "h100",
            "command": ".venv/bin/python benchmarks/explore_speed.py --write"
                       + (" --deep" if args.deep else ""),
            "modules": results,
            "per_node_ratio_48_vs_12": ratio,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
