"""Codegen and compile time for every kernel of the 12-layer training step's cost plan.

Run:  .venv/bin/python benchmarks/codegen_speed.py [--module transformer_12l] [--write]

Explores the module with the cost strategy (not timed here), then times, in a fresh process
with an empty build cache, emitting every kernel and building them all with nvcc/ptxas for
sm_90 (cold), and the same again with the cache filled (warm). Reports the number of kernels,
of generated kernels, of unique sources (kernels identical but for their name compile once),
and of kernels not generated yet. --write stores the figures in
benchmarks/results/codegen_speed.json.

Target (issue 4): under 60 s cold and under 2 s warm on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent


def measure(module: str) -> dict:
    sys.path.insert(0, str(HERE.parent))
    from compiler.toolchain import build_batch
    from compiler.codegen.check import PRELUDE_DIR
    from compiler.stages.codegen import generate
    from compiler.target.devices import get_device
    from compiler.fusion.explore import explore
    from compiler.importers import load_graph

    graph = load_graph(str(HERE / "data" / f"{module}.hlo.gz"))
    plan = explore(graph, "h100", ["xla", "cost"])["cost"]
    device = get_device("h100")
    timings = {}
    for run in ("cold", "warm"):
        start = time.perf_counter()
        codes = generate(graph, plan, device)
        timings[run] = time.perf_counter() - start
    sources = {c.function: c.emitted.source for c in codes
               if c.emitted is not None and not c.emitted.library}
    batch = build_batch(sources, "sm_90", [str(PRELUDE_DIR)])  # cached: counts only
    return {
        "module": module,
        "kernels": len(codes),
        "generated": len(sources),
        "library": sum(1 for c in codes if c.emitted is not None and c.emitted.library),
        "not_generated": sum(1 for c in codes if c.error and c.error.startswith("not gen")),
        "compile_errors": sum(1 for c in codes if c.build is not None and not c.build.ok),
        "unique_sources": batch.unique_kernels,
        "cold_s": timings["cold"],
        "warm_s": timings["warm"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="transformer_12l")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.module)))
        return
    with tempfile.TemporaryDirectory() as cache:  # an empty build cache: a cold compile
        out = subprocess.run([sys.executable, __file__, "--child", "--module", args.module],
                             check=True, capture_output=True, text=True,
                             env={**os.environ, "FUSION_EXPLORER_CACHE_DIR": cache})
    row = json.loads(out.stdout)
    print(f"{row['module']}: {row['kernels']} kernels in the cost plan, {row['generated']} "
          f"generated ({row['unique_sources']} unique sources), {row['library']} library "
          f"calls, {row['not_generated']} not generated yet, {row['compile_errors']} compile "
          f"errors")
    print(f"codegen + nvcc, cold cache: {row['cold_s']:.1f} s; warm cache: {row['warm_s']:.2f} s")
    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "codegen_speed.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores",
            "arch": "sm_90",
            "command": ".venv/bin/python benchmarks/codegen_speed.py --write",
            **row,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
