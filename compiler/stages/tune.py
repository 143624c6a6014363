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
from compiler.fusion.autotune import Budget, autotune, choose_to_measure, measure_choices
from compiler.fusion.plan_files import plan_from_kernels, plan_to_file
from compiler.ir.graph import Graph
from compiler.stages.whatif import stored_kernels
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

# The stored plans a tuning does not start from: saved and tuned plans (starts are the
# strategies' plans; a saved plan can be given to the CLI's autotune as --plan).
NOT_STARTS = ("tuned",)


def shard_seed(seed: int, shard: int) -> int:
    """The seed of one share of a tuning spread over several workers: the tuning's own for the
    first share (one share is the tuning as the CLI runs it), others derived from it."""
    return seed if shard == 0 else seed * 7919 + shard


def tune_stored(graph: Graph, device: str, runtime: str, stored: dict[str, list[dict]],
                model: str, search: str, budget_s: float | None, evaluations: int | None,
                seed: int, top_k: int, predictor=None,
                progress: Callable[[int, float], None] | None = None, shard: int = 0
                ) -> tuple[dict, dict, dict]:
    """(result, the tuned plan's file, its entry's extra fields) (module docstring);
    `stored`: strategy -> its kernels as the run's artifact holds them. `shard`: which share
    of a tuning spread over workers this is (its seed: `shard_seed`); `merge_tunings` joins
    the shares' answers."""
    seed = shard_seed(seed, shard)
    sol = SolModel(graph, get_device(device))
    starts = {}
    for strategy, kernels in stored.items():
        if strategy in NOT_STARTS or strategy.startswith("custom") or not kernels:
            continue
        plan = plan_from_kernels(graph, sol, stored_kernels(kernels, graph),
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


def merge_tunings(shares: list[tuple[dict, dict, dict]], top_k: int) -> tuple[dict, dict, dict]:
    """One tuning's answer from the answers of its shares, each an independent search with its
    own seed over the same wall time: the best plan of all (its file and extra fields), the
    best distinct plans of all, the plans scored added up, and the history of the best score
    over every share, each point at the plans all shares had scored by then (each share's
    count taken as growing evenly over its time)."""
    if not shares:
        raise InputError("no share of the tuning finished")
    summaries = [summary for summary, _, _ in shares]
    best = min(range(len(shares)), key=lambda i: (summaries[i]["best"]["score_us"], i))
    merged = dict(summaries[best])
    seen, top = set(), []
    for entry in sorted((entry for summary in summaries for entry in summary["top"]),
                        key=lambda entry: (entry["score_us"], entry["plan_id"])):
        if entry["plan_id"] not in seen:
            seen.add(entry["plan_id"])
            top.append(entry)
    top = [{**entry, "rank": rank} for rank, entry in enumerate(top[:top_k], 1)]
    rates = [summary["evaluations"] / max(summary["seconds"], 1e-9) for summary in summaries]
    points = sorted((seconds, score) for summary in summaries
                    for _, seconds, score in summary["history"])
    history, best_score = [], float("inf")
    for seconds, score in points:
        if score < best_score - 1e-9 or not history:
            best_score = min(best_score, score)
            scored = sum(min(summary["evaluations"], round(seconds * rate))
                         for summary, rate in zip(summaries, rates))
            history.append([scored, seconds, best_score])
    evaluations = sum(summary["evaluations"] for summary in summaries)
    seconds = max(summary["seconds"] for summary in summaries)
    merged.update(top=top, history=history, evaluations=evaluations, seconds=seconds,
                  refused=sum(summary["refused"] for summary in summaries),
                  ms_per_evaluation=round(1e3 * seconds / max(1, evaluations), 3),
                  shares=len(shares),
                  first_improvement_s=min((s["first_improvement_s"] for s in summaries
                                           if s["first_improvement_s"] is not None),
                                          default=None),
                  measure=measure_choices(top, merged["model"], len(merged["measure"])))
    _, plan_file, extra = shares[best]
    extra = {**extra, "tuning": {**extra["tuning"], "evaluations": evaluations,
                                 "seconds": seconds, "shares": len(shares)}}
    return merged, plan_file, extra

