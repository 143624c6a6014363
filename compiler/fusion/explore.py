"""Run fusion strategies on a graph and put their plans side by side.

`explore` is the stage the CLI's `explore` command and the web app's compile task call; its
result serialises (`exploration_to_dict`) to the JSON shape DESIGN.md fixes for scripts.
"""

from __future__ import annotations

import time
from importlib import import_module

from compiler.cost.devices import get_device
from compiler.cost.sol import SolModel
from compiler.errors import InputError
from compiler.fusion.plan import FusionPlan
from compiler.gc_pause import cyclic_gc_paused
from compiler.ir.graph import Graph

# Strategy name -> (module, function). Imported on first use, so one strategy's import cost
# is not paid by runs that do not ask for it.
STRATEGIES = {
    "unfused": ("compiler.fusion.unfused", "unfused"),
    "xla": ("compiler.fusion.xla", "xla_fusion"),
    "stitch": ("compiler.fusion.stitch", "stitch_fusion"),
    "cost": ("compiler.fusion.cost_based", "cost_fusion"),
}


def parse_strategies(text: str) -> list[str]:
    """'all' or a comma-separated list of strategy names, checked."""
    if text.strip() == "all":
        return list(STRATEGIES)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names:
        raise InputError(f"unknown strategy {', '.join(unknown) or repr(text)}; choose 'all' "
                         f"or from {', '.join(STRATEGIES)}")
    return names


def explore(graph: Graph, device: str = "h100", strategies=tuple(STRATEGIES)
            ) -> dict[str, FusionPlan]:
    """One plan per strategy, each with the wall time its strategy took (explore_ms) and every
    kernel's quick projected breakdown (`project_plan`)."""
    from compiler.cost.projected import project_plan  # the projected model reads codegen

    model = SolModel(graph, get_device(device))
    plans = {}
    for name in strategies:
        module, function = STRATEGIES[name]
        strategy = getattr(import_module(module), function)
        # The cost search compares itself with the xla plan; hand it over when there is one.
        extra = {"xla_plan": plans["xla"]} if name == "cost" and "xla" in plans else {}
        start = time.perf_counter()
        with cyclic_gc_paused():
            plan = strategy(graph, model, **extra)
        plan.explore_ms = (time.perf_counter() - start) * 1e3
        with cyclic_gc_paused():
            project_plan(graph, plan, model.device)
        plans[name] = plan
    return plans


def exploration_to_dict(summary: dict, device: str, plans: dict[str, FusionPlan]) -> dict:
    """The `explore --json` object: {"graph", "device", "strategies": {name: plan}}."""
    strategies = {name: plan.to_dict() for name, plan in plans.items()}
    baseline = plans.get("unfused")
    for name, plan in plans.items():
        if baseline is not None and plan.total_sol_us > 0:
            strategies[name]["total"]["speedup_vs_unfused"] = \
                baseline.total_sol_us / plan.total_sol_us
    return {"graph": summary, "device": device, "strategies": strategies}
