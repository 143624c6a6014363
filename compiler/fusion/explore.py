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
from compiler.fusion.pricing import DEFAULT_MODEL, ProjectedPricer, make_pricer, price_plan
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


def explore(graph: Graph, device: str = "h100", strategies=tuple(STRATEGIES),
            cost_model: str = DEFAULT_MODEL, learned=None) -> dict[str, FusionPlan]:
    """One plan per strategy, each with the wall time its strategy took (explore_ms) and every
    kernel's projected breakdown under its best CodeGen plan (`pricing.price_plan`).

    `cost_model` names the pricer the cost strategy decides with (pricing.PRICERS; "learned"
    needs `learned`, a LearnedPredictor for the device). Whatever decides, the plans' kernels
    are shown with the projected model, and one projected pricer serves all strategies, so a
    kernel two plans share is priced once."""
    model = SolModel(graph, get_device(device))
    projector = ProjectedPricer(graph, model)
    pricer = projector if cost_model == "projected" else make_pricer(cost_model, graph,
                                                                      model, learned)
    plans: dict[str, FusionPlan] = {}
    for name in strategies:
        module, function = STRATEGIES[name]
        strategy = getattr(import_module(module), function)
        # The cost search prices with the chosen model and compares itself with the plans
        # made before it.
        extra = {"pricer": pricer, "others": dict(plans)} if name == "cost" else {}
        start = time.perf_counter()
        with cyclic_gc_paused():
            plan = strategy(graph, model, **extra)
        plan.explore_ms = (time.perf_counter() - start) * 1e3
        with cyclic_gc_paused():
            price_plan(plan, projector)
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
