"""Tuning a compiled run's plans (issue 37): what the compile worker runs for the Tune action.

`tune_stored(...)` rebuilds each strategy's plan from its kernels as the run stores them (their
kinds kept, so each starts at its explored total: compiler/stages/whatif.py does the same),
runs the autotuner (compiler/fusion/autotune.py) from them under a model and a budget, and
returns what the web app stores: the search's result (its best plans with every model's
totals, which to measure, the history of the best score), the best plan's plan file and the
fields its artifact entry takes besides its compiled kernels (its decisions: the moves, each
with its predicted gain; the model that decided; the tuning's summary, for the chart).
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.errors import InputError
from compiler.fusion.autotune import Budget, autotune, choose_to_measure
from compiler.fusion.plan_files import plan_from_kernels, plan_to_file
from compiler.ir.graph import Graph
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

# The stored plans a tuning does not start from: saved and tuned plans (starts are the
# strategies' plans; a saved plan can be given to the CLI's autotune as --plan).
NOT_STARTS = ("tuned",)


def tune_stored(graph: Graph, device: str, runtime: str, stored: dict[str, list[dict]],
                model: str, search: str, budget_s: float | None, evaluations: int | None,
                seed: int, top_k: int, predictor=None,
                progress: Callable[[int, float], None] | None = None
                ) -> tuple[dict, dict, dict]:
    """(result, the tuned plan's file, its entry's extra fields) (module docstring);
    `stored`: strategy -> its kernels as the run's artifact holds them."""
    sol = SolModel(graph, get_device(device))
    starts = {}
    for strategy, kernels in stored.items():
        if strategy in NOT_STARTS or strategy.startswith("custom") or not kernels:
            continue
        plan = plan_from_kernels(graph, sol, [{key: entry.get(key) for key in
                                               ("nodes", "recomputed", "kind", "dominant",
                                                "xla_name")} for entry in kernels],
                                 f"the {strategy} plan", runtime, keep_kinds=True)
        plan.strategy = strategy
        starts[strategy] = plan
    if not starts:
        raise InputError("the run has no strategy's plan to start tuning from")
    result = autotune(graph, starts, model, search, Budget(budget_s, evaluations), seed,
                      max(top_k, 1), predictor, progress=progress)
    choose_to_measure(result, top_k)
    tuned = result.tuned_plan()
    summary = result.to_dict()
    extra = {"decisions": [decision.to_dict() for decision in tuned.decisions],
             "cost_model": model,
             "tuning": {key: summary[key] for key in ("model", "search", "seed", "starts",
                                                      "evaluations", "seconds",
                                                      "first_improvement_s")}
             | {"gain_us": summary["best"]["gain_us"], "start": summary["best"]["start"]}}
    return summary, plan_to_file(graph, tuned, "tuned", kinds=True), extra
