"""Does the compiler still make the same plans, prices, decisions and CUDA? A fingerprint of
its output on every real input, to hold a refactoring to "behaviour does not change".

    .venv/bin/python benchmarks/compiler_equality.py --write      # record the reference
    .venv/bin/python benchmarks/compiler_equality.py              # compare with it
                                                 [--only PATTERN] [--jobs N] [--no-cuda]

It drives the compiler through its command line only (`python -m compiler explore --json` and
`codegen --json --out DIR`), the surface DESIGN.md keeps stable, so it works whatever the
modules inside are called. For every input of benchmarks/fusion_quality.py (tests/data, XLA's
corpus, the benchmark modules and the model zoo; H100, our four strategies, kernels launched
as a CUDA graph) it records a digest of each plan: its kernels (kind, owned, recomputed and
written nodes, dominant node, schedule, projected device work, launch terms, limiter,
occupancy, waves, outlier reason), its decisions (action, subject, reason, gain) and its totals;
the explore wall time is left out. For the modules of tests/data and the 12-layer step it also
digests the CUDA source of every generated kernel (`codegen --out`). The reference is
benchmarks/results/compiler_equality.json; a comparison prints each module and strategy whose
digest differs, with its kernel counts and totals before and after, and exits 1 when any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from fusion_quality import input_files, label  # noqa: E402

RESULTS = HERE / "results" / "compiler_equality.json"
STRATEGIES = "unfused,xla,stitch,cost"
# Inputs whose generated CUDA is digested too (building every kernel of the zoo takes long).
CUDA_INPUTS = ("tests/data/", "benchmarks/data/transformer_12l")
# Kernel fields a plan's digest covers: everything the compiler decided or priced.
KERNEL_FIELDS = ("kind", "nodes", "recomputed", "outputs", "dominant", "schedule", "device_us",
                 "launch", "proj_us", "limiter", "device_limiter", "occupancy", "waves",
                 "block_size", "grid_size", "outlier_reason", "xla_name")


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def compiler(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compiler", *arguments], cwd=ROOT,
                          capture_output=True, text=True, timeout=3600)


def plan_view(plan: dict) -> dict:
    """What a plan's digest covers (module docstring)."""
    if plan.get("unavailable"):
        return {"unavailable": plan["unavailable"]}
    total = {key: value for key, value in plan["total"].items() if key != "speedup_vs_unfused"}
    return {"kernels": [{field: kernel.get(field) for field in KERNEL_FIELDS}
                        for kernel in plan["kernels"]],
            "decisions": plan["decisions"], "total": total, "cost_model": plan.get("cost_model")}


def fingerprint(path: Path, cuda: bool) -> dict:
    """The module's digests, or what the command said when it failed."""
    explored = compiler("explore", str(path), "--json", "--device", "h100",
                        "--strategy", STRATEGIES)
    if explored.returncode:
        return {"error": explored.stderr.strip().splitlines()[-1:]}
    plans = json.loads(explored.stdout)["strategies"]
    result = {"plans": {name: {"digest": digest(plan_view(plan)),
                               "kernels": plan.get("kernel_count"),
                               "proj_us": (plan.get("total") or {}).get("proj_us")}
                        for name, plan in plans.items()}}
    if cuda and any(prefix in label(path) for prefix in CUDA_INPUTS):
        with tempfile.TemporaryDirectory() as folder:
            built = compiler("codegen", str(path), "--json", "--device", "h100",
                             "--strategy", STRATEGIES, "--out", folder)
            if built.returncode:
                result["cuda"] = {"error": built.stderr.strip().splitlines()[-1:]}
            else:
                sources = {str(p.relative_to(folder)): p.read_text()
                           for p in sorted(Path(folder).rglob("*.cu"))}
                result["cuda"] = {"digest": digest(sources), "kernels": len(sources)}
    return result


def fingerprint_one(path: Path, cuda: bool) -> tuple[str, dict]:
    return label(path), fingerprint(path, cuda)


def differences(reference: dict, now: dict) -> list[str]:
    lines = []
    for module in sorted(set(reference) | set(now)):
        before, after = reference.get(module), now.get(module)
        if before is None or after is None:
            lines.append(f"{module}: {'new' if before is None else 'gone'}")
            continue
        if "error" in before or "error" in after:
            if before.get("error") != after.get("error"):
                lines.append(f"{module}: error {before.get('error')} -> {after.get('error')}")
            continue
        for strategy in sorted(set(before["plans"]) | set(after["plans"])):
            a, b = before["plans"].get(strategy, {}), after["plans"].get(strategy, {})
            if a.get("digest") != b.get("digest"):
                lines.append(f"{module} {strategy}: {a.get('kernels')} kernels, "
                             f"{a.get('proj_us')} µs -> {b.get('kernels')} kernels, "
                             f"{b.get('proj_us')} µs")
        if before.get("cuda") != after.get("cuda") and "cuda" in before and "cuda" in after:
            lines.append(f"{module}: CUDA {before['cuda']} -> {after['cuda']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help=f"record the reference in {RESULTS.relative_to(ROOT)}")
    parser.add_argument("--only", help="only files whose name contains this")
    parser.add_argument("--jobs", type=int, default=2, help="modules at a time (default 2)")
    parser.add_argument("--no-cuda", action="store_true", help="leave the CUDA digests out")
    args = parser.parse_args(argv)
    files = input_files(args.only)
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        now = dict(pool.starmap(fingerprint_one, [(path, not args.no_cuda) for path in files]))
    if args.write:
        RESULTS.write_text(json.dumps({"date": date.today().isoformat(), "modules": now},
                                      indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} modules recorded in {RESULTS.relative_to(ROOT)}")
        return 0
    reference = json.loads(RESULTS.read_text())["modules"]
    if args.only:
        reference = {key: value for key, value in reference.items() if key in now}
    if args.no_cuda:
        for entry in (*reference.values(), *now.values()):
            entry.pop("cuda", None)
    changed = differences(reference, now)
    print("\n".join(changed) if changed else
          f"the same: {len(now)} modules, every plan, decision, price and CUDA source")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
