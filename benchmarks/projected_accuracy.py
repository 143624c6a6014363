"""The projected model against every kernel the H200 campaign measured
(benchmarks/results/gpu-campaign-h200/plans/, issue 15), priced again by this checkout:

    .venv/bin/python benchmarks/projected_accuracy.py [--json] [--write]

Each module is lowered with JAX at the campaign's size, as the campaign lowered it, and every
strategy's plan is made again, under stream launches (the campaign's plans were searched with
a constant 3 µs launch, which stream launches come closest to). A measured kernel is matched
by its plan, strategy, name, kind and DRAM bytes (a plan made differently now is not compared
with another's kernel). It is priced under the CodeGen plan the GPU ran (its calibration
record's key) when today's code generator still enumerates it, else under the best plan of the
schedule the GPU ran. The kernels were timed alone, so a prediction is the device work and
what a lone launch adds on the H200 (compiler/target/launch.py's alone_us). The reference is
the GPU's median time, not anything the model computes.

Figures, over all the matched kernels and per module: the mean and median absolute
percentage error, Kendall's tau-b between projected and measured times (how well the model
orders the kernels, compiler/cost/plan_ranking.py) and the largest ratio of measured to
projected time either way. tests/compiler/test_projected_against_gpu.py holds the bar; --write
stores results/projected_accuracy.json, which benchmarks/README.md quotes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO)]

from compiler.cost.plan_ranking import kendall_tau  # noqa: E402
from compiler.fusion.explore import explore  # noqa: E402
from compiler.importers.hlo_text import import_hlo  # noqa: E402
from compiler.ir.idioms import function_idioms  # noqa: E402
from compiler.stages.codegen import emit_code  # noqa: E402
from compiler.target.devices import get_device  # noqa: E402
from compiler.target.launch import terms_for  # noqa: E402

CAMPAIGN = HERE / "results" / "gpu-campaign-h200"
RESULTS = HERE / "results" / "projected_accuracy.json"
DEVICE = "h200"

# JAX starts threads; the fusion search forks. So the modules are lowered in a child process
# and this one never imports JAX.
LOWER = """
import sys, jax
sys.path.insert(0, sys.argv[1])
from gpu_campaign_modules import MODULES
for name in sys.argv[3:]:
    function, avals = MODULES[name].jax_function("realistic")
    text = jax.jit(function).lower(*avals).compiler_ir("hlo").as_hlo_text()
    open(f"{sys.argv[2]}/{name}.hlo", "w").write(text)
"""


@dataclass(frozen=True)
class PricedKernel:
    """A measured kernel and this checkout's projection of it (both timed alone, in µs)."""
    module: str
    name: str                  # strategy/kernel
    measured_us: float
    projected_us: float
    measured_plan: bool        # priced under the CodeGen plan the GPU ran


def measured_modules() -> list[str]:
    size = json.loads((CAMPAIGN / "campaign.json").read_text())["size"]
    if size != "realistic":
        raise ValueError(f"the campaign measured size {size!r}; this lowers 'realistic'")
    return sorted(p.stem for p in (CAMPAIGN / "plans").glob("*.json"))


def lower(names: list[str], folder: Path) -> None:
    """Each module's HLO text at the campaign's size, as folder/<name>.hlo."""
    subprocess.run([sys.executable, "-c", LOWER, str(HERE), str(folder), *names], check=True)


def priced_again(name: str, hlo: Path) -> tuple[list[PricedKernel], int]:
    """The module's measured kernels priced by this checkout, and how many of them it emits
    otherwise (`emitted_otherwise`)."""
    graph = import_hlo(hlo.read_text(), hlo.name)
    campaign = json.loads((CAMPAIGN / "plans" / f"{name}.json").read_text())
    measured = campaign["strategies"]
    ran = {record["kernel"]: record["plan"] for record in campaign["calibration_records"]}
    plans = explore(graph, DEVICE, list(measured), runtime="stream")
    device = get_device(DEVICE)
    alone_us = terms_for(device).alone_us
    rows, changed = [], 0
    for strategy, plan in plans.items():
        timed = {k["name"]: k for k in measured[strategy]["kernels"]
                 if k.get("measured_us") and k["kind"] != "library"}
        # The ranking's projections are the model's before any build (ptxas' figures would
        # only refine the chosen plan's), so the kernels are emitted and ranked, not built.
        for code in (emit_code(graph, plan, kernel, device) for kernel in plan.kernels):
            kernel = timed.get(code.kernel.name)
            if kernel is None or kernel["kind"] != code.kernel.kind \
                    or kernel["dram_bytes"] != code.kernel.sol.dram_bytes:
                continue
            if emitted_otherwise(graph, code.kernel):
                changed += 1
                continue
            key = ran.get(f"{name}/{strategy}/{code.kernel.name}")
            exact = [b for p, b in code.ranking if p.key() == key]
            same = exact or [b for p, b in code.ranking if p.schedule == kernel["schedule"]]
            if same:
                rows.append(PricedKernel(name, f"{strategy}/{code.kernel.name}",
                                         kernel["measured_us"], same[0].projected_us + alone_us,
                                         bool(exact)))
    return rows, changed


def emitted_otherwise(graph, kernel) -> bool:
    """Whether this checkout emits other code for `kernel` than the code the GPU timed: an
    output in a layout other than row-major (written in memory order since the H200 runs,
    commit f78cb67) or a whole erfc expansion (erfcf since 4e821a2). Their measured times are
    not the present code's."""
    for name in kernel.outputs:
        shape = graph.nodes[name].shape
        if not shape.is_tuple and shape.minor_to_major != tuple(reversed(range(shape.rank))):
            return True
    return any(idiom.applies(kernel.computed) for idiom in function_idioms(graph).values())


def figures(rows: list[PricedKernel]) -> dict:
    """MAPE, median APE, Kendall's tau-b and the largest ratios of `rows`."""
    errors = [abs(r.projected_us - r.measured_us) / r.measured_us for r in rows]
    ratios = [r.measured_us / r.projected_us for r in rows]
    tau = kendall_tau([r.projected_us for r in rows], [r.measured_us for r in rows])
    return {"kernels": len(rows), "mape_percent": round(100 * statistics.mean(errors), 2),
            "median_ape_percent": round(100 * statistics.median(errors), 2),
            "kendall_tau": None if tau is None else round(tau, 4),
            "largest_under_ratio": round(max(ratios), 2),
            "largest_over_ratio": round(1 / min(ratios), 2)}


def priced_modules(names: list[str]) -> dict[str, tuple[list[PricedKernel], int]]:
    with tempfile.TemporaryDirectory() as folder:
        lower(names, Path(folder))
        return {name: priced_again(name, Path(folder) / f"{name}.hlo") for name in names}


def results(priced: dict[str, tuple[list[PricedKernel], int]]) -> dict:
    every = [row for rows, _ in priced.values() for row in rows]
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": "benchmarks/projected_accuracy.py --write", "device": DEVICE,
            "campaign": str(CAMPAIGN.relative_to(REPO)),
            "all": figures(every),
            "priced_under_the_measured_plan": sum(r.measured_plan for r in every),
            "modules": {name: {**figures(rows), "emitted_otherwise": changed}
                        for name, (rows, changed) in priced.items()},
            "largest_errors": [
                {"kernel": f"{r.module}/{r.name}", "measured_us": round(r.measured_us, 2),
                 "projected_us": round(r.projected_us, 2)}
                for r in sorted(every, key=lambda r: -max(r.measured_us / r.projected_us,
                                                          r.projected_us / r.measured_us))[:10]]}


def markdown(out: dict) -> str:
    lines = ["| module | kernels | MAPE % | median APE % | Kendall τ | largest under / over |",
             "|---|---:|---:|---:|---:|---|"]
    for name, f in [*out["modules"].items(), ("all", out["all"])]:
        lines.append(f"| {name} | {f['kernels']} | {f['mape_percent']:.1f} | "
                     f"{f['median_ape_percent']:.1f} | {f['kendall_tau']:.3f} | "
                     f"{f['largest_under_ratio']:.2f}x / {f['largest_over_ratio']:.2f}x |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--write", action="store_true", help=f"store {RESULTS.name}")
    args = parser.parse_args(argv)
    out = results(priced_modules(measured_modules()))
    print(json.dumps(out, indent=1) if args.json else markdown(out))
    if args.write:
        RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
