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
from compiler.fusion.autotune import (STRATEGY, Budget, autotune, choose_to_measure,
                                      measure_choices)
from compiler.fusion.plan_files import plan_from_kernels, plan_to_file
from compiler.ir.graph import Graph
from compiler.stages.whatif import stored_kernels
from compiler.target.devices import get_device
from compiler.target.launch import device_work_of_alone
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
    # Every top plan's file, for the share that ends up holding the measured ones
    # (`merge_tunings` keeps those of the plans chosen to measure).
    summary["plan_files"] = {entry["plan_id"]: plan_to_file(graph, candidate.plan,
                                                            candidate_strategy(entry["rank"]),
                                                            kinds=True)
                             for entry, candidate in zip(summary["top"], result.top)}
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
    files = {plan_id: file for summary in summaries
             for plan_id, file in summary.get("plan_files", {}).items()}
    points = sorted((seconds, score) for summary in summaries
                    for _, seconds, score in summary["history"])
    rates = [summary["evaluations"] / max(summary["seconds"], 1e-9) for summary in summaries]
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
    for choice in merged["measure"]:
        choice["plan_id"] = top[choice["rank"] - 1]["plan_id"]
    merged["plan_files"] = {choice["plan_id"]: files[choice["plan_id"]]
                            for choice in merged["measure"] if choice["rank"] > 1}
    _, plan_file, extra = shares[best]
    extra = {**extra, "tuning": {**extra["tuning"], "evaluations": evaluations,
                                 "seconds": seconds, "shares": len(shares)}}
    return merged, plan_file, extra



# -- the measured side: "CPU first, then minutes on hardware" ----------------------------------

# The strategy name under which a measurement times a tuning's plan of rank 2, 3, ... (rank 1
# is the run's "tuned" plan, measured as such): never a strategy of the run's pages.
CANDIDATE_PREFIX = "tuning:"


def candidate_strategy(rank: int) -> str:
    return STRATEGY if rank == 1 else f"{CANDIDATE_PREFIX}{rank}"


def candidate_plans(result: dict, device: str) -> list[dict]:
    """The tuning's plans chosen to measure besides the tuned one, as measure_graph's
    `custom_plans` take them (each under `candidate_strategy(rank)`)."""
    files = result.get("plan_files") or {}
    return [{"device": device, "strategy": candidate_strategy(choice["rank"]),
             "file": files[choice["plan_id"]], "keep_kinds": True}
            for choice in result.get("measure", ())
            if choice["rank"] > 1 and choice.get("plan_id") in files]


def measured_tuning(result: dict, measured: dict[str, dict], kernels: dict[str, list[dict]],
                    device: str) -> dict | None:
    """What a measurement says of a tuning (result: `merge_tunings`'s) on `device`:
    `measured`: the measurement's plans of the device (strategy -> compiler.runtime.gpu
    PlanRun.to_dict(), the tuning's candidates among them); `kernels`: the run's stored plans'
    kernels (strategy -> [{"name", "nodes"}]), which name the nodes of a measured kernel that
    does not carry them. None when the tuned plan was not measured.

    {"plans": per plan chosen to measure, {"rank", "why", "score_us" (the tuner's model),
              "measured_us" (back to back in a stream, or None)},
     "fastest_rank": the rank measured fastest, "regret": how much slower the model's best
     plan ran than the fastest measured (0 when it was the fastest),
     "start": the best start's measured total, "gain_us": measured gain of the tuned plan over
     it, "moves": per move of the tuned plan, its measured gain or why there is none}."""
    tuned = measured.get(STRATEGY)
    if tuned is None:
        return None
    scores = {entry["rank"]: entry["score_us"] for entry in result.get("top", ())}
    plans = [{"rank": choice["rank"], "why": choice["why"],
              "score_us": scores.get(choice["rank"]),
              "measured_us": _plan_total(measured.get(candidate_strategy(choice["rank"])))}
             for choice in result.get("measure", ())]
    timed = [plan for plan in plans if plan["measured_us"] is not None]
    fastest = min(timed, key=lambda plan: (plan["measured_us"], plan["rank"]), default=None)
    first = next((plan for plan in timed if plan["rank"] == 1), None)
    start = _plan_total(measured.get(result["best"]["start"]))
    own = _plan_total(tuned)
    times = _kernel_times(measured, kernels, device)
    gap = _launch_gap(tuned, kernels.get(STRATEGY, ()), times)
    return {"plans": plans, "fastest_rank": fastest["rank"] if fastest else None,
            "regret": (None if fastest is None or first is None
                       else round(first["measured_us"] / fastest["measured_us"] - 1, 4)),
            "start": result["best"]["start"], "start_us": start,
            "gain_us": None if start is None or own is None else round(start - own, 4),
            "launch_gap_us": None if gap is None else round(gap, 4),
            "moves": [_measured_move(move, times, gap) for move in result["best"]["moves"]]}


def _plan_total(run: dict | None) -> float | None:
    end_to_end = (run or {}).get("end_to_end")
    return end_to_end["median_us"] if end_to_end else None


def _kernel_times(measured: dict[str, dict], kernels: dict[str, list[dict]],
                  device: str) -> dict[tuple[str, ...], float]:
    """Each measured kernel's device work (its time alone less what a lone launch adds,
    compiler/target/launch.py), by its sorted nodes: a kernel of the same nodes is the same
    code in every plan that has it (the compiler is deterministic)."""
    times = {}
    for strategy, run in measured.items():
        for nodes, alone_us in _measured_kernels(run, kernels.get(strategy, ())):
            if nodes and alone_us is not None:
                times.setdefault(nodes, device_work_of_alone(device, alone_us))
    return times


def _measured_kernels(run: dict, stored) -> list[tuple[tuple[str, ...], float | None]]:
    """(sorted nodes, time alone) of each kernel of a measured plan; its nodes from the
    measurement, or from the run's stored plan by the kernel's name (older measurements)."""
    nodes_of = {k["name"]: k["nodes"] for k in stored}
    return [(tuple(sorted(kernel.get("nodes") or nodes_of.get(kernel["name"]) or ())),
             kernel.get("measured_us")) for kernel in run.get("kernels", ())]


def _launch_gap(run: dict, stored, times: dict) -> float | None:
    """What each kernel adds to a plan run back to back beyond its device work, measured on
    the tuned plan: (its total - its kernels' device work) / kernels, at least 0."""
    total = _plan_total(run)
    work = [times.get(nodes) for nodes, _ in _measured_kernels(run, stored)]
    if total is None or not work or None in work:
        return None
    return max(0.0, (total - sum(work)) / len(work))


def _measured_move(move: dict, times: dict, gap: float | None) -> dict:
    """A move's measured gain: the device work of the kernels it took away less that of the
    kernels it made, plus the launches it saved at the measured gap; None, with the reason,
    when a kernel of either side was only in a plan nobody measured."""
    sides = [tuple(tuple(nodes) for nodes in move.get(side, ())) for side in ("before", "after")]
    missing = [nodes for side in sides for nodes in side if nodes not in times]
    if not (sides[0] or sides[1]):
        return {"edit": move["edit"], "measured_gain_us": None,
                "why": "the move's kernels were not recorded"}
    if missing or gap is None:
        return {"edit": move["edit"], "measured_gain_us": None,
                "why": (f"{len(missing)} of its kernels only in plans not measured" if missing
                        else "the tuned plan has no back-to-back time")}
    before, after = sides
    gain = (sum(times[nodes] for nodes in before) - sum(times[nodes] for nodes in after)
            + gap * (len(before) - len(after)))
    return {"edit": move["edit"], "measured_gain_us": round(gain, 4), "why": None}
