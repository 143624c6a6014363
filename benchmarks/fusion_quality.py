"""Fusion quality: every fusion strategy on every real input we have, side by side.

Run:  .venv/bin/python benchmarks/fusion_quality.py [--device h100] [--runtime graph|stream]
                                                    [--only PATTERN] [--jobs N] [--write]

Inputs (paths relative to the repository root): tests/data/hlo/*.hlo, tests/data/json/*.json,
tests/data/onnx/*.onnx, tests/data/xla/*.hlo (XLA's own test files; those the importer
rejects are skipped, counted and listed with the reason), benchmarks/data/*.hlo.gz and the model
zoo benchmarks/data/zoo/*.gz (benchmarks/models/gen_zoo.py). A file holding several modules
(`// -----`) contributes each of them, named FILE#i.

For every module this runs `explore` with all four strategies (unfused, xla, stitch, cost), the
kernels launched as --runtime says (compiler/target/launch.py: a CUDA graph replay, the default,
or stream launches; the cost search decides under it), and records per strategy the kernel
count, the total SOL, projected device work, launch and projected times, the explore wall time
and the outlier kernels: projected above 20x the kernel's SOL and above 20 µs, each with the
`outlier_reason` the plan gives it (if any). It then checks and prints:
  (a) the cost plan's projected total is no larger than any other strategy's (violations with
      the figures),
  (b) cost / best other strategy, per module, and a summary (best / tie / loses, geometric mean),
  (c) outlier kernels of the stitch and cost plans that carry no reason.
A module whose explore raises is reported with the exception and the run goes on.

--only PATTERN keeps the files whose name contains PATTERN; --jobs N explores N modules at a time
in separate processes; --write stores the figures in benchmarks/results/fusion_quality.json
(fusion_quality_stream.json with --runtime stream).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import platform
import sys
import time
import traceback
from datetime import date
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: `compiler` is the repo's package

from compiler.target.devices import DEVICES  # noqa: E402  (needs the sys.path entry above)
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES  # noqa: E402
from compiler.errors import InputError  # noqa: E402

STRATEGIES = ["unfused", "xla", "stitch", "cost"]
INPUTS = [  # (folder relative to the repository root, file pattern)
    ("tests/data/hlo", "*.hlo"),
    ("tests/data/json", "*.json"),
    ("tests/data/onnx", "*.onnx"),
    ("tests/data/xla", "*.hlo"),
    ("benchmarks/data", "*.hlo.gz"),
    ("benchmarks/data/zoo", "*.gz"),
]
OUTLIER_RATIO = 20.0      # projected / SOL above this ...
OUTLIER_MIN_US = 20.0     # ... and projected above this many µs makes a kernel an outlier
TIE_US = 1e-3             # totals are rounded to 1e-4 µs; closer than this is a tie
RESULTS = ROOT / "benchmarks" / "results" / "fusion_quality.json"


def input_files(only: str | None) -> list[Path]:
    files = []
    for folder, pattern in INPUTS:
        files += sorted((ROOT / folder).glob(pattern))
    return [path for path in files if only is None or only in path.name]


def label(path: Path) -> str:
    """The path as the table shows it: relative to the repository."""
    return str(path.relative_to(ROOT))


# --------------------------------------------------------------------------------------------
# One file: import, explore, collect the figures (runs in a worker process with --jobs)
# --------------------------------------------------------------------------------------------


def outliers(plan) -> list[dict]:
    """The plan's outlier kernels, each with the reason the plan gives for it: the kernel's
    `outlier_reason` as the plan serialises it (compiler/cost/outliers.py), None without one."""
    found = []
    for kernel in plan.kernels:
        if kernel.projected is None:
            continue
        projected, sol = kernel.projected.projected_us, kernel.sol.total_us
        if projected > OUTLIER_RATIO * sol and projected > OUTLIER_MIN_US:
            found.append({"kernel": kernel.name, "kind": kernel.kind,
                          "proj_us": round(projected, 3), "sol_us": round(sol, 3),
                          "reason": kernel.to_dict(plan.device).get("outlier_reason")})
    return found


def plan_figures(plan) -> dict:
    totals = plan.projected_totals() or {}
    return {"kernels": len(plan.kernels), "sol_us": round(plan.total_sol_us, 4),
            "device_us": totals.get("device_us"), "launch_us": totals.get("launch_us"),
            "proj_us": plan.total_projected_us, "explore_ms": round(plan.explore_ms, 1),
            "outliers": outliers(plan)}


def explore_file(path: Path, device: str, runtime: str) -> dict:
    """{"file", "rejected": reason} when the importer refuses the file, else {"file", "modules":
    [...]} with each module's figures, or the exception its explore (or import) raised."""
    from compiler.fusion.explore import explore
    from compiler.importers import load_graphs

    name = label(path)
    try:
        graphs = load_graphs(str(path))
    except InputError as error:
        return {"file": name, "rejected": str(error)}
    except Exception:  # noqa: BLE001 - an importer crash is a finding, not a reason to stop
        return {"file": name, "modules": [{"module": name, "error": traceback.format_exc()}]}

    modules = []
    for index, graph in enumerate(graphs):
        module = {"module": name if len(graphs) == 1 else f"{name}#{index}",
                  "nodes": len(graph)}
        start = time.perf_counter()
        try:
            plans = explore(graph, device, STRATEGIES, runtime=runtime)
            module["strategies"] = {s: plan_figures(plan) for s, plan in plans.items()}
        except Exception:  # noqa: BLE001 - report it with the others and go on
            module["error"] = traceback.format_exc()
        module["wall_s"] = round(time.perf_counter() - start, 2)
        modules.append(module)
    return {"file": name, "modules": modules}


def explore_all(files: list[Path], device: str, jobs: int, runtime: str) -> list[dict]:
    """Every file's result in input order; progress on stderr as files finish."""
    explore_one = partial(explore_file, device=device, runtime=runtime)
    if jobs == 1:
        return collect(map(explore_one, files), len(files))
    # One fresh process per file: a big module's memory goes back when it is done.
    with multiprocessing.Pool(jobs, maxtasksperchild=1) as pool:
        return collect(pool.imap(explore_one, files), len(files))


def collect(results, total: int) -> list[dict]:
    done = []
    for result in results:
        done.append(result)
        progress(result, len(done), total)
    return done


def progress(result: dict, done: int, total: int):
    if "rejected" in result:
        status = "rejected"
    else:
        status = ", ".join(f"{m.get('wall_s', 0):.1f} s" + (" ERROR" if "error" in m else "")
                           for m in result["modules"])
    print(f"[{done}/{total}] {result['file']}: {status}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# The guarantees
# --------------------------------------------------------------------------------------------


def cost_ratio(module: dict) -> float | None:
    """cost / best other strategy (projected totals); None without all the figures."""
    totals = {s: f["proj_us"] for s, f in module["strategies"].items()}
    others = [totals[s] for s in STRATEGIES if s != "cost"]
    if totals.get("cost") is None or None in others or min(others) <= 0:
        return None
    return totals["cost"] / min(others)


def cost_violations(module: dict) -> list[str]:
    """Guarantee (a): every strategy whose projected total beats the cost plan's (none can
    when the cost plan has no projected total; `unprojected` lists those modules)."""
    figures = module["strategies"]
    cost = figures["cost"]["proj_us"]
    if cost is None:
        return []
    return [f"{s} {figures[s]['proj_us']:,.2f} µs < cost {cost:,.2f} µs "
            f"({cost / figures[s]['proj_us']:.3f}x)"
            for s in STRATEGIES
            if s != "cost" and figures[s]["proj_us"] is not None
            and cost > figures[s]["proj_us"] + TIE_US]


def verdict(module: dict) -> str:
    """"best", "tie" or "loses" for the cost plan against the best other strategy."""
    figures = module["strategies"]
    best_other = min(figures[s]["proj_us"] for s in STRATEGIES if s != "cost")
    cost = figures["cost"]["proj_us"]
    if abs(cost - best_other) <= TIE_US:
        return "tie"
    return "best" if cost < best_other else "loses"


def summarise(modules: list[dict]) -> dict:
    explored = [m for m in modules if "strategies" in m]
    rated = [m for m in explored if cost_ratio(m) is not None]
    verdicts = [verdict(m) for m in rated]
    ratios = [cost_ratio(m) for m in rated]
    return {
        "modules": len(modules),
        "explored": len(explored),
        "failed": len(modules) - len(explored),
        "compared": len(rated),
        "cost_best": verdicts.count("best"),
        "cost_ties": verdicts.count("tie"),
        "cost_loses": verdicts.count("loses"),
        "geomean_cost_over_best_other":
            math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None,
        "outliers": {s: sum(len(m["strategies"][s]["outliers"]) for m in explored)
                     for s in STRATEGIES},
    }


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------


def us(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"


def error_summary(trace: str) -> str:
    """The exception line of a traceback and the innermost frame that raised it."""
    lines = trace.strip().splitlines()
    frames = [line.strip() for line in lines if line.strip().startswith("File ")]
    return lines[-1] + (f" ({frames[-1]})" if frames else "")


def table(modules: list[dict]) -> list[str]:
    lines = ["| module | nodes | unfused | xla | stitch | cost | cost/best-other | outliers |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for m in modules:
        if "strategies" not in m:
            lines.append(f"| {m['module']} | {m.get('nodes', '')} | explore failed: see below "
                         "| | | | | |")
            continue
        cells = [f"{us(f['proj_us'])} ({f['kernels']})"
                 for f in (m["strategies"][s] for s in STRATEGIES)]
        ratio = cost_ratio(m)
        counts = [f"{s} {len(m['strategies'][s]['outliers'])}" for s in STRATEGIES
                  if m["strategies"][s]["outliers"]]
        lines.append(f"| {m['module']} | {m['nodes']:,} | {' | '.join(cells)} | "
                     f"{'n/a' if ratio is None else f'{ratio:.3f}'} | {', '.join(counts)} |")
    return lines


def report(results: list[dict], modules: list[dict], summary: dict, device: str) -> list[str]:
    rejected = [r for r in results if "rejected" in r]
    lines = [f"# Fusion quality on {device}: projected µs (kernels) per strategy", ""]
    lines += table(modules)
    lines += ["", f"Modules: {summary['modules']} from {len(results) - len(rejected)} files; "
              f"explored {summary['explored']}, failed {summary['failed']}; "
              f"{len(rejected)} files rejected by the importer."]
    if summary["compared"]:
        lines.append(
            f"Cost plan against the best other strategy on {summary['compared']} modules: "
            f"best on {summary['cost_best']}, ties on {summary['cost_ties']}, loses on "
            f"{summary['cost_loses']}; geometric mean cost/best-other "
            f"{summary['geomean_cost_over_best_other']:.4f}.")
    lines.append("Outlier kernels (projected > 20x SOL and > 20 µs): " + ", ".join(
        f"{s} {n}" for s, n in summary["outliers"].items()) + ".")

    lines += ["", "## (a) Cost plan's projected total above another strategy's", ""]
    violations = [(m["module"], v) for m in modules if "strategies" in m
                  for v in cost_violations(m)]
    lines += [f"- {module}: {text}" for module, text in violations] or ["none"]
    unprojected = [m["module"] for m in modules if "strategies" in m
                   and m["strategies"]["cost"]["proj_us"] is None]
    if unprojected:
        lines += ["", "Not compared, the cost plan has no projected total (a kernel without a "
                  "projection): " + ", ".join(unprojected)]

    lines += ["", "## (c) Outliers in stitch and cost plans without a reason", ""]
    unexplained = [(m["module"], s, o) for m in modules if "strategies" in m
                   for s in ("stitch", "cost") for o in m["strategies"][s]["outliers"]
                   if o["reason"] is None]
    lines += [f"- {module} [{s}] {o['kernel']} ({o['kind']}): proj {o['proj_us']:,.1f} µs, "
              f"SOL {o['sol_us']:,.2f} µs ({o['proj_us'] / max(o['sol_us'], 1e-9):,.0f}x)"
              for module, s, o in unexplained] or ["none"]

    lines += ["", "## Explore failures", ""]
    failures = [m for m in modules if "error" in m]
    lines += [f"- {m['module']}: {error_summary(m['error'])}" for m in failures] or ["none"]

    lines += ["", f"## Files the importer rejected ({len(rejected)})", ""]
    lines += [f"- {r['file']}: {r['rejected']}" for r in rejected] or ["none"]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="h100", choices=sorted(DEVICES))
    parser.add_argument("--runtime", default=DEFAULT_RUNTIME, choices=RUNTIMES,
                        help="how the plans' kernels are launched (default graph)")
    parser.add_argument("--only", help="only files whose name contains this")
    parser.add_argument("--jobs", type=int, default=1, help="modules explored in parallel")
    parser.add_argument("--write", action="store_true", help=f"write {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    results_file = RESULTS if args.runtime == DEFAULT_RUNTIME else \
        RESULTS.with_name(f"{RESULTS.stem}_{args.runtime}.json")

    files = input_files(args.only)
    if not files:
        parser.error(f"no input file matches {args.only!r}")
    start = time.perf_counter()
    results = explore_all(files, args.device, max(1, args.jobs), args.runtime)
    modules = [m for r in results for m in r.get("modules", [])]
    summary = summarise(modules)
    print("\n".join(report(results, modules, summary, args.device)))
    print(f"\nTotal wall time {time.perf_counter() - start:.0f} s with --jobs {args.jobs}.")

    if args.write:
        results_file.write_text(json.dumps({
            "device": args.device,
            "runtime": args.runtime,
            "date": date.today().isoformat(),
            "command": "python benchmarks/fusion_quality.py " + " ".join(sys.argv[1:]),
            "machine": f"{platform.machine()}, {multiprocessing.cpu_count()} cores, "
                       f"Python {platform.python_version()}",
            "summary": summary,
            "rejected": {r["file"]: r["rejected"] for r in results if "rejected" in r},
            "modules": modules,
        }, indent=1) + "\n")
        print(f"wrote {results_file.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
