"""A 100,000-op elementwise chain through the whole compile, stage by stage (issue 18: "a
100,000-op chain compiles").

Run:  .venv/bin/python benchmarks/chain_compile.py [--ops 100000] [--variant uniform]
                      [--strategies unfused,xla,stitch,cost] [--skip-cli] [--write]

Writes an HLO module of OPS chained elementwise ops on f32[256], then, each in a fresh
process with an empty nvcc build cache:
1. compiler.stages.pipeline.compile_graph (what the compile worker runs for an upload), for the
   H100 and the strategies (default: our four), timing each stage from its progress reports:
   import, explore, codegen (CUDA source for every kernel of every plan), build (one nvcc batch
   for all of them, its front end and ptxas apart) and cost;
2. `python -m compiler codegen FILE --strategy S --json` (the command-line contract), whole.
It reports each plan's kernels and its largest kernel's nodes (owned and recomputed), the
distinct sources nvcc compiled (kernels identical but for their name compile once:
compiler/toolchain/nvcc.py), the largest resident size, and the seconds.

`--variant uniform` is issue 18's chain (each op adds the parameter to the previous value):
cut into kernels of MAX_KERNEL_NODES ops, all of them but the ends are one source. `distinct`
multiplies by a different constant at each op, so that no two kernels are the same source and
nvcc compiles every one (the constants are broadcast into each kernel, which holds half as
many multiplies).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from benchmarks import kernel_size  # noqa: E402

STRATEGIES = "unfused,xla,stitch,cost"


def chain_module(ops: int, variant: str) -> str:
    """The chain of `ops` ops: "uniform" adds p0 at each (kernel_size.py's chain), "distinct"
    multiplies by a constant of its own at each."""
    if variant == "uniform":
        return kernel_size.chain_module(ops, "add")
    lines = ["HloModule chain", "ENTRY main {", "  p0 = f32[256] parameter(0)"]
    previous = "p0"
    for i in range(ops):
        lines += [f"  c{i} = f32[] constant({1 + (i + 1) * 1e-6:.7f})",
                  f"  b{i} = f32[256] broadcast(c{i}), dimensions={{}}",
                  f"  n{i} = f32[256] multiply({previous}, b{i})"]
        previous = f"n{i}"
    lines += [f"  ROOT out = f32[256] negate({previous})", "}", ""]
    return "\n".join(lines)


def pipeline_child(path: str, strategies: list[str]) -> dict:
    """compile_graph on the file, with the time of every progress report's stage change."""
    sys.path.insert(0, str(REPO))
    from compiler.stages.pipeline import compile_graph

    events: list[tuple[float, str, str]] = []
    last: list[str] = [""]

    def progress(stage: str, done: int, total: int, detail: str = "") -> None:
        if stage != last[0] or detail:
            events.append((time.perf_counter(), stage, detail))
            last[0] = stage

    start = time.perf_counter()
    artifact = compile_graph(Path(path).read_bytes(), Path(path).name, ["h100"], strategies,
                             progress=progress)
    end = time.perf_counter()
    stages: dict[str, float] = {}
    marks = [(t, stage) for t, stage, detail in events if not detail] + [(end, "end")]
    for (t, stage), (t_next, _) in zip(marks, marks[1:]):
        stages[stage] = round(t_next - t, 1)
    build_steps = {}
    for t, stage, detail in events:
        if stage == "build" and detail:
            step = "front end" if "PTX" in detail else "ptxas" if "ptxas" in detail else detail
            build_steps[step] = (t, detail)
    names = [stage for _, stage in marks]
    build_end = marks[names.index("build") + 1][0] if "build" in names else end
    build = {}
    ordered = sorted(build_steps.items(), key=lambda item: item[1][0])
    for (step, (t, detail)), following in zip(ordered, [*ordered[1:], None]):
        t_next = following[1][0] if following else build_end
        build[step] = {"s": round(t_next - t, 1), "detail": detail.split(": ", 1)[-1]}
    plans = {}
    results = artifact["devices"]["h100"]["strategies"]
    for name in strategies:
        kernels = results[name]["kernels"]
        plans[name] = {"kernels": len(kernels),
                       "largest_kernel_nodes": max(len(k["nodes"]) + len(k["recomputed"])
                                                   for k in kernels),
                       "explore_s": round(results[name]["explore_ms"] / 1000, 1),
                       "registers_known": sum(1 for k in kernels if k["registers"] is not None)}
    sources = {re.sub(rf"\b{entry['function']}\b", "KERNEL", entry["source"])
               for entry in artifact["sources"].values() if entry["source"]}
    return {"stages_s": stages, "build_steps": build, "total_s": round(end - start, 1),
            "plans": plans, "generated_kernels": sum(1 for entry in artifact["sources"].values()
                                                     if entry["source"]),
            "distinct_sources": len(sources),
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def run_fresh(command: list[str], cache: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO,
                               env={**os.environ, "FUSION_EXPLORER_CACHE_DIR": cache})
    return completed, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--variant", choices=("uniform", "distinct"), default="uniform")
    parser.add_argument("--strategies", default=STRATEGIES)
    parser.add_argument("--skip-cli", action="store_true",
                        help="only the pipeline's stages, not the CLI command as well")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(pipeline_child(args.child, args.strategies.split(","))))
        return

    folder = Path(tempfile.mkdtemp(prefix="chain-compile-"))
    path = folder / f"chain_{args.ops}_{args.variant}.hlo"
    path.write_text(chain_module(args.ops, args.variant))
    print(f"{path.name}: {args.ops:,} ops, {path.stat().st_size / 1e6:.1f} MB", flush=True)

    with tempfile.TemporaryDirectory() as cache:
        completed, _ = run_fresh([sys.executable, __file__, "--child", str(path),
                                  "--strategies", args.strategies], cache)
    if completed.returncode != 0:
        sys.exit(f"compile_graph failed:\n{completed.stderr[-4000:]}")
    row = json.loads(completed.stdout.splitlines()[-1])
    print(f"compile_graph (the compile worker's call), {row['total_s']} s in all, largest "
          f"resident size {row['max_rss_mb']} MB")
    for stage, seconds in row["stages_s"].items():
        print(f"  {stage:<8} {seconds:>7.1f} s")
    for step, figures in row["build_steps"].items():
        print(f"    build, {step}: {figures['s']} s ({figures['detail']})")
    print(f"  {row['generated_kernels']:,} generated kernels, {row['distinct_sources']:,} "
          f"distinct sources")
    for name, plan in row["plans"].items():
        print(f"  {name:<8} {plan['kernels']:>7,} kernels, the largest of "
              f"{plan['largest_kernel_nodes']} nodes, explored in {plan['explore_s']} s")

    if not args.skip_cli:
        command = [sys.executable, "-m", "compiler", "codegen", str(path), "--strategy",
                   args.strategies, "--json"]
        with tempfile.TemporaryDirectory() as cache:
            completed, seconds = run_fresh(command, cache)
        if completed.returncode != 0:
            sys.exit(f"the CLI failed:\n{completed.stderr[-4000:]}")
        result = json.loads(completed.stdout)
        kernels = {name: len(plan["kernels"]) for name, plan in result["strategies"].items()}
        shown = f"python -m compiler codegen FILE --strategy {args.strategies} --json"
        row["cli"] = {"command": shown, "s": round(seconds, 1), "kernels": kernels}
        print(f"CLI `{shown}`: {seconds:.1f} s, kernels {kernels}")

    if args.write:
        (HERE / "results").mkdir(exist_ok=True)
        suffix = "" if args.strategies == STRATEGIES else "_" + args.strategies.replace(",", "_")
        (HERE / "results" / f"chain_compile_{args.variant}{suffix}.json").write_text(json.dumps({
            "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores, shared",
            "command": "python benchmarks/chain_compile.py " + " ".join(sys.argv[1:]),
            "ops": args.ops, "variant": args.variant, "strategies": args.strategies, **row,
        }, indent=2) + "\n")


if __name__ == "__main__":
    main()
