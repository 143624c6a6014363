"""Import time and peak memory of the HLO importer on transformer training steps.

Run:  .venv/bin/python benchmarks/import_speed.py [--repeat 5] [--write]

Each module is imported (read, gunzip, parse, inline, verify) `repeat` times in a fresh process;
the median wall time is reported, with the peak of Python allocations during one import
(tracemalloc) and the process's peak resident size. --write stores the figures in
benchmarks/results/import_speed.json with the machine and date. Target (issue 2): the 12-layer
module imports in under 1 s on the 2-core development machine, and time grows linearly with
module size (the 48-layer module is about 4x the instructions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
MODULES = ["transformer_12l.hlo.gz", "transformer_48l.hlo.gz"]


def measure_one(path: str, repeat: int) -> dict:
    """Runs inside a fresh interpreter: imports `path` repeat times, returns the figures."""
    sys.path.insert(0, str(HERE.parent))
    from compiler.importers import load_graphs

    times = []
    graphs = None
    for _ in range(repeat):
        start = time.perf_counter()
        graphs = load_graphs(path)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    load_graphs(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "module": os.path.basename(path),
        "nodes": len(graphs[0]),
        "median_s": statistics.median(times),
        "min_s": min(times),
        "python_peak_mib": peak / 2**20,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="save benchmarks/results/...")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_one(args.child, args.repeat)))
        return
    rows = []
    for module in MODULES:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(HERE / "data" / module),
             "--repeat", str(args.repeat)], check=True, capture_output=True, text=True)
        rows.append(json.loads(out.stdout))
    per_node = [r["median_s"] / r["nodes"] * 1e6 for r in rows]
    print(f"{'module':26s} {'nodes':>7s} {'median s':>9s} {'us/node':>8s} "
          f"{'py peak MiB':>11s} {'max RSS MiB':>11s}")
    for row, us in zip(rows, per_node):
        print(f"{row['module']:26s} {row['nodes']:7d} {row['median_s']:9.3f} {us:8.1f} "
              f"{row['python_peak_mib']:11.1f} {row['max_rss_mib']:11.1f}")
    ratio = per_node[1] / per_node[0]
    print(f"time per node, 48 layers vs 12 layers: {ratio:.2f}x (1.0 = exactly linear)")
    if args.write:
        result = {
            "date": date.today().isoformat(),
            "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores",
            "python": platform.python_version(),
            "command": ".venv/bin/python benchmarks/import_speed.py --write",
            "modules": rows,
            "per_node_ratio_48_vs_12": ratio,
        }
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "import_speed.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
