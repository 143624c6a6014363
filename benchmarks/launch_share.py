"""How much of the cost plan's lead over XLA:GPU's own plan is kernel launches, under each
runtime (compiler/target/launch.py): a CUDA graph replay (XLA's default) and stream launches.

    .venv/bin/python benchmarks/launch_share.py [--device h200] [--only NAME] [--no-write]

For each training step below, `explore` runs xla, stitch, cost and xla-gpu once per runtime
(the cost search decides under it) and this records, per runtime and strategy, the kernel
count, the projected device work, the launch terms and the total; then, for cost against
xla-gpu, the total's ratio, the device work's ratio and the difference by cause
(compiler/fusion/attribution.py). Figures go to benchmarks/results/launch_share.json and a
table is printed (benchmarks/README.md quotes it).

The modules: the 12-layer GPT training step (benchmarks/data/transformer_12l), the 2-layer
Llama-style step, the 4-layer GPT-2 step, the UNet ResBlock forward + backward and the
48-tensor AdamW update with global-norm clipping of the model zoo (benchmarks/data/zoo/).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from compiler.target.launch import RUNTIMES, terms_for  # noqa: E402
from compiler.fusion.attribution import explain, summary_text  # noqa: E402
from compiler.fusion.explore import exploration_to_dict, explore  # noqa: E402
from compiler.ir.summary import summarize  # noqa: E402
from compiler.stages.pipeline import import_graph  # noqa: E402

RESULTS = HERE / "results" / "launch_share.json"
STRATEGIES = ["xla", "stitch", "cost", "xla-gpu"]
MODULES = {
    "transformer_12l": HERE / "data" / "transformer_12l.hlo.gz",
    "llama_2l": HERE / "data" / "zoo" / "llama_2l.hlo.gz",
    "gpt2_4l": HERE / "data" / "zoo" / "gpt2_4l.hlo.gz",
    "unet_resblock": HERE / "data" / "zoo" / "unet_resblock.hlo.gz",
    "adamw_48t": HERE / "data" / "zoo" / "adamw_48t.hlo.gz",
}


def measure(name: str, path: Path, device: str) -> dict:
    graph = import_graph(gzip.decompress(path.read_bytes()), path.name.removesuffix(".gz"))
    summary = summarize(graph)
    result = {"nodes": len(graph.nodes), "runtimes": {}}
    for runtime in RUNTIMES:
        started = time.perf_counter()
        plans = explore(graph, device, STRATEGIES, runtime=runtime)
        explored = exploration_to_dict(summary, device, plans)["strategies"]
        figures = {}
        for strategy, plan in explored.items():
            if plan["unavailable"]:
                figures[strategy] = {"unavailable": plan["unavailable"]}
                continue
            total = plan["total"]
            figures[strategy] = {"kernels": plan["kernel_count"],
                                 "device_us": total["device_us"],
                                 "launch_us": total["launch_us"], "proj_us": total["proj_us"]}
        entry = {"seconds": round(time.perf_counter() - started, 1), "plans": figures}
        if "unavailable" not in figures.get("xla-gpu", {"unavailable": "not run"}):
            why = explain(explored["xla-gpu"], explored["cost"], runtime)
            cost, xla_gpu = figures["cost"], figures["xla-gpu"]
            entry["cost_vs_xla_gpu"] = {
                "total_speedup": xla_gpu["proj_us"] / cost["proj_us"],
                "device_speedup": xla_gpu["device_us"] / cost["device_us"],
                "lead_us": xla_gpu["proj_us"] - cost["proj_us"],
                "lead_from_launches_us": xla_gpu["launch_us"] - cost["launch_us"],
                "causes": {row["cause"]: -row["delta_us"] for row in why["causes"]},
                "summary": summary_text(why, "xla-gpu", "cost")}
        result["runtimes"][runtime] = entry
    return result


def table(results: dict) -> str:
    lines = ["| module | runtime | xla-gpu kernels / device / launches / total µs | "
             "cost kernels / device / launches / total µs | cost's lead | of it launches |",
             "|---|---|---|---|---:|---:|"]
    for name, result in results.items():
        for runtime, entry in result["runtimes"].items():
            plans, lead = entry["plans"], entry.get("cost_vs_xla_gpu")

            def cells(plan: dict) -> str:
                if "unavailable" in plan:
                    return "not available"
                return (f"{plan['kernels']:,} / {plan['device_us']:,.0f} / "
                        f"{plan['launch_us']:,.0f} / **{plan['proj_us']:,.0f}**")

            share = (f"{lead['total_speedup']:.2f}x (device {lead['device_speedup']:.2f}x)"
                     if lead else "–")
            launches = (f"{lead['lead_from_launches_us']:,.0f} of {lead['lead_us']:,.0f} µs"
                        if lead else "–")
            lines.append(f"| {name} | {runtime} | {cells(plans['xla-gpu'])} | "
                         f"{cells(plans['cost'])} | {share} | {launches} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="h200",
                        help="device model (default h200: the device whose launch terms were "
                             "fitted on measurements)")
    parser.add_argument("--only", help="modules whose name contains this")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    modules = {name: path for name, path in MODULES.items()
               if not args.only or args.only in name}
    results = {}
    for name, path in modules.items():
        print(f"{name} ...", flush=True)
        results[name] = measure(name, path, args.device)
        for runtime, entry in results[name]["runtimes"].items():
            lead = entry.get("cost_vs_xla_gpu")
            print(f"  {runtime}: {lead['summary'] if lead else 'no xla-gpu plan'}", flush=True)
    print(table(results))
    if not args.no_write:
        RESULTS.write_text(json.dumps({
            "date": datetime.now(timezone.utc).date().isoformat(), "device": args.device,
            "launch_terms": terms_for(args.device).to_dict(), "modules": results},
            indent=1) + "\n")
        print(f"written to {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
