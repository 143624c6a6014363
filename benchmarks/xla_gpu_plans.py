"""XLA:GPU's own plan (the xla-gpu strategy) beside ours on the transformer benchmarks.

    .venv/bin/python benchmarks/xla_gpu_plans.py [--layers 12,48] [--no-write]

For the 12- and 48-layer transformer training steps of benchmarks/data/, this runs `explore`
with xla, stitch, cost and xla-gpu on an H100 and records, per module: the kernel launches in
XLA:GPU's optimised module (its fusions, as compiler/fusion/xla_gpu.py reads them back), the
same count `benchmarks/xla_fusion_counts.py` found compiling the JAX function itself (the
reference: benchmarks/results/xla_fusion_counts.json, target cuda_h100_aot), the xla-gpu
plan's kernels (a GEMM or scatter fusion becomes our library call plus the ops XLA fused with
it, so there are more), how many of our nodes XLA rewrote beyond recognition, and every
plan's projected total. The figures go to benchmarks/results/xla_gpu_plans.json and a table
is printed (benchmarks/README.md quotes it).
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

from compiler.target.devices import get_device  # noqa: E402
from compiler.fusion import xla_gpu  # noqa: E402
from compiler.fusion.explore import explore  # noqa: E402
from compiler.importers.hlo_text import import_hlo  # noqa: E402
from compiler.stages.pipeline import import_graph  # noqa: E402

RESULTS = HERE / "results" / "xla_gpu_plans.json"
REFERENCE = HERE / "results" / "xla_fusion_counts.json"
STRATEGIES = ["xla", "stitch", "cost", "xla-gpu"]


def measure(layers: int) -> dict:
    name = f"transformer_{layers}l"
    data = gzip.decompress((HERE / "data" / f"{name}.hlo.gz").read_bytes())
    graph = import_graph(data, f"{name}.hlo")
    started = time.perf_counter()
    plans = explore(graph, "h100", STRATEGIES)
    seconds = time.perf_counter() - started
    optimised = import_hlo(xla_gpu.compile_optimised(graph, get_device("h100")), "opt.hlo")
    launches = [launch for launch in xla_gpu.xla_kernels(optimised, xla_gpu.printed_names(graph))
                if launch[2]]
    plan = plans["xla-gpu"]
    reference = json.loads(REFERENCE.read_text())["targets"]["cuda_h100_aot"]["modules"]
    return {
        "module": name, "nodes": len(graph), "explore_s": round(seconds, 1),
        "xla_launches": len(optimised.fusions) + sum(1 for launch in launches
                                                     if launch[0] not in optimised.fusions),
        "xla_fusion_counts_total": reference[name]["entry"]["total"],
        "xla_gpu_kernels": len(plan.kernels), "xla_gpu_kinds": plan.kind_counts(),
        "library_splits": sum(1 for d in plan.decisions if "with the library call" in d.reason),
        "rewritten_nodes": sum(1 for d in plan.decisions if "beyond recognition" in d.reason),
        "unavailable": plan.unavailable,
        "proj_us": {s: p.total_projected_us for s, p in plans.items()},
        "kernels": {s: len(p.kernels) for s, p in plans.items()},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="12,48")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    rows = [measure(int(n)) for n in args.layers.split(",")]
    print("| module | XLA launches (here) | xla_fusion_counts | xla-gpu kernels | "
          "library splits | rewritten | proj µs: xla / stitch / cost / xla-gpu |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        proj = " / ".join(f"{r['proj_us'][s]:,.0f}" if r["proj_us"][s] else "–"
                          for s in STRATEGIES)
        print(f"| {r['module']} | {r['xla_launches']} | {r['xla_fusion_counts_total']} | "
              f"{r['xla_gpu_kernels']} | {r['library_splits']} | {r['rewritten_nodes']} | "
              f"{proj} |")
    if not args.no_write:
        RESULTS.write_text(json.dumps({
            "command": "benchmarks/xla_gpu_plans.py --layers " + args.layers,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "device": "h100 (deviceless XLA:GPU compile; projected model)",
            "modules": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
