"""Which fusion plans delay a data-parallel step's gradients: the exposed all-reduce of each plan
of the 12-layer GPT training step (compiler/stages/dp.py over compiler/stages/timeline.py),
with outputs released when the whole step ends and each output released when ready.

    .venv/bin/python benchmarks/dp_overlap.py [--device h200] [--runtime graph] [--no-write]

For each interconnect preset (8 GPUs on NVLink, nodes over InfiniBand; 8 GPUs in both, DDP's
25 MiB buckets) and each plan of xla, stitch, cost and xla-gpu, this records the projected
compute, the step time and the exposed communication under each release, and the kernels the
first buckets wait on. Figures go to benchmarks/results/dp_overlap.json and a table is printed
(README.md quotes it). The same figures, one plan at a time:

    python -m compiler explore benchmarks/data/transformer_12l.hlo.gz --device h200 \\
        --strategy xla,stitch,cost,xla-gpu --dp-world 8 --interconnect nvlink
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from compiler.fusion.explore import exploration_to_dict, explore  # noqa: E402
from compiler.ir.summary import summarize  # noqa: E402
from compiler.stages.dp import RELEASES, data_parallel  # noqa: E402
from compiler.stages.pipeline import import_graph  # noqa: E402
from compiler.stages.timeline import attach_timelines  # noqa: E402

MODULE = HERE / "data" / "transformer_12l.hlo.gz"
RESULTS = HERE / "results" / "dp_overlap.json"
STRATEGIES = ["xla", "stitch", "cost", "xla-gpu"]
INTERCONNECTS = ("nvlink", "ib")
WORLD = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="h200")
    parser.add_argument("--runtime", default="graph", choices=("graph", "stream"))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    graph = import_graph(gzip.decompress(MODULE.read_bytes()), "transformer_12l.hlo")
    plans = explore(graph, args.device, STRATEGIES, runtime=args.runtime)
    figures = {}
    for interconnect in INTERCONNECTS:
        result = exploration_to_dict(summarize(graph), args.device, plans)
        attach_timelines(result, data_parallel(WORLD, interconnect))
        figures[interconnect] = {name: _figures(plan) for name, plan in
                                 result["strategies"].items()}
    report = {"module": MODULE.name, "device": args.device, "runtime": args.runtime,
              "world": WORLD, "date": datetime.now(timezone.utc).date().isoformat(),
              "interconnects": figures}
    print(_table(report))
    if not args.no_write:
        RESULTS.write_text(json.dumps(report, indent=1) + "\n")


def _figures(plan: dict) -> dict:
    dp = plan["dp"]
    if not dp["training"]:
        return {"unavailable": dp["reason"]}
    return {"kernels": plan["kernel_count"], "compute_us": dp["compute_us"],
            "gradient_bytes": dp["gradient_bytes"],
            "buckets": len(dp["releases"]["when_ready"]["buckets"]),
            **{release: {key: dp["releases"][release][key]
                         for key in ("step_us", "exposed_us")} for release in RELEASES},
            "first_buckets_wait_on": [row["kernel"] for row in dp["held_back"]]}


def _table(report: dict) -> str:
    lines = ["| interconnect | plan | compute | step end: step / exposed | when ready: step / "
             "exposed | first buckets wait on |", "|---|---|---:|---:|---:|---|"]
    for interconnect, plans in report["interconnects"].items():
        for name, row in plans.items():
            if "unavailable" in row:
                lines.append(f"| {interconnect} | {name} | – | – | – | "
                             f"{row['unavailable']} |")
                continue
            end, ready = row["step_end"], row["when_ready"]
            lines.append(f"| {interconnect} | {name} | {row['compute_us']:,.0f} | "
                         f"{end['step_us']:,.0f} / **{end['exposed_us']:,.0f}** | "
                         f"{ready['step_us']:,.0f} / **{ready['exposed_us']:,.0f}** | "
                         f"{', '.join(dict.fromkeys(row['first_buckets_wait_on']))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
