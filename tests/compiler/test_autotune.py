"""compiler/fusion/autotune.py: the search never ends above its best start, its scores are the
plans' own totals priced from scratch, it is the same run for the same seed and budget, the
plans it finds compute what the graph computes (every kernel emitted and run on the CPU
emulator against the interpreter), and it names the plans worth measuring."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.errors import InputError
from compiler.fusion.autotune import (Budget, Scorer, autotune, choose_to_measure, draw_moves,
                                      format_tuning)
from compiler.fusion.explore import explore
from compiler.fusion.plan_files import plan_from_file
from compiler.importers import import_bytes
from compiler.stages.codegen import emit_code, emulate
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "hlo"


def graph_of(name):
    path = DATA / f"{name}.hlo"
    return import_bytes(path.read_bytes(), path.name)[0]


def timeless(result: dict) -> dict:
    """The result without what the clock says."""
    return {key: value for key, value in result.items()
            if key not in ("seconds", "ms_per_evaluation", "first_improvement_s", "history")} \
        | {"history": [[evals, best] for evals, _, best in result["history"]]}


@pytest.fixture(scope="module")
def layer_norm_bwd():
    graph = graph_of("layer_norm_bwd")
    return graph, explore(graph, "h100", ["xla", "stitch", "cost"])


@pytest.mark.parametrize("search", ["anneal", "beam"])
def test_the_best_plan_is_never_above_the_best_start_and_its_score_is_its_own_total(
        layer_norm_bwd, search):
    graph, starts = layer_norm_bwd
    result = autotune(graph, starts, "projected", search, Budget(evaluations=150), seed=3)

    best_start = min(plan.projected_totals()["proj_us"] for plan in starts.values())
    assert result.best.score <= best_start + 1e-3   # the plan's totals are rounded to 1e-4
    # Incremental scores are the plan's projected total, as its own kernels price it.
    for candidate in result.top:
        assert candidate.score == pytest.approx(candidate.plan.projected_totals()["proj_us"],
                                                abs=1e-3)
    # History: the best score only falls, from the best start.
    bests = [best for _, _, best in result.history]
    assert bests[0] == pytest.approx(best_start, abs=1e-3) and bests == sorted(bests, reverse=True)


def test_the_same_seed_and_budget_give_the_same_run_and_another_seed_another(layer_norm_bwd):
    graph, starts = layer_norm_bwd
    first = autotune(graph, starts, "projected", "anneal", Budget(evaluations=120), seed=7)
    again = autotune(graph, starts, "projected", "anneal", Budget(evaluations=120), seed=7)
    other = autotune(graph, starts, "projected", "anneal", Budget(evaluations=120), seed=8)
    assert timeless(first.to_dict()) == timeless(again.to_dict())
    assert timeless(first.to_dict()) != timeless(other.to_dict())


def test_annealing_finds_a_plan_below_the_cost_strategys_and_it_computes_the_graph(
        layer_norm_bwd):
    graph, starts = layer_norm_bwd
    result = autotune(graph, starts, "projected", "anneal", Budget(evaluations=300), seed=0)
    cost = starts["cost"].projected_totals()["proj_us"]
    assert result.best.score < cost, "the tuner found nothing below the cost plan"
    tuned = result.tuned_plan()
    assert tuned.strategy == "tuned" and tuned.cost_model == "projected"
    assert [d.subject for d in tuned.decisions] == [move.edit for move in result.best.moves]
    # Each move names the kernels it took away and made: replayed from the start's kernels
    # they give the tuned plan's.
    groups = {tuple(sorted(k.nodes)) for k in starts[result.best.start].kernels}
    for decision in tuned.decisions:
        assert set(decision.before) <= groups, decision.subject
        groups = (groups - set(decision.before)) | set(decision.after)
    assert groups == {tuple(sorted(k.nodes)) for k in tuned.kernels}
    # The moves' predicted gains add up to the way from its start to it.
    assert sum(d.gain_us for d in tuned.decisions) == pytest.approx(
        result.starts[result.best.start] - result.best.score, abs=1e-6)
    codes = [emit_code(graph, tuned, kernel, get_device("h100")) for kernel in tuned.kernels]
    emulate(graph, codes)
    checked = [code for code in codes if code.max_abs_error is not None]
    assert checked, "no kernel of the tuned plan was checked"
    assert all(not code.mismatches for code in checked), [c.mismatches for c in checked]


def test_moves_are_drawn_the_same_for_the_same_generator(layer_norm_bwd):
    import random

    graph, starts = layer_norm_bwd
    first = draw_moves(graph, starts["xla"], random.Random(1), 10)
    again = draw_moves(graph, starts["xla"], random.Random(1), 10)
    assert [m.describe() for m in first] == [m.describe() for m in again]
    assert len({m.describe() for m in first}) == len(first) > 3


class FixedTimes:
    """A learned model's stand-in: each kernel's time from its node count."""
    label = "fixed"

    def predict_plan(self, graph, plan, codes=None):
        return [None if k.kind == "library" else 4.0 + 0.5 * len(k.nodes) for k in plan.kernels]


def test_the_learned_scorer_prices_as_the_model_predicts_and_the_others_are_judged(
        layer_norm_bwd):
    from compiler.target.launch import device_work_of_alone, terms_for

    graph, starts = layer_norm_bwd
    scorer = Scorer(graph, "h100", "graph", "learned", FixedTimes())
    plan = starts["xla"]
    launch = terms_for("h100").launch("graph")
    expected = sum(launch.kernel_us(device_work_of_alone("h100", 4.0 + 0.5 * len(k.nodes)))
                   for k in plan.kernels)
    assert scorer.score(plan) == pytest.approx(expected)

    result = autotune(graph, starts, "learned", "anneal", Budget(evaluations=60), seed=0,
                      predictor=FixedTimes())
    totals = result.totals[0]
    assert set(totals) >= {"learned_us", "projected_us", "sol_us", "disagreement"}
    assert totals["learned_us"] == pytest.approx(result.best.score, abs=1e-3)
    assert totals["disagreement_between"] == "learned and projected"
    chosen = choose_to_measure(result, 3)
    assert [c["rank"] for c in chosen][:2] == [1, 2]
    assert "disagree" in chosen[2]["why"] or len(result.top) < 3
    assert "measure on a GPU" in format_tuning(result.to_dict())


def test_bad_options_are_refused(layer_norm_bwd):
    graph, starts = layer_norm_bwd
    with pytest.raises(InputError, match="learned model needs a model file"):
        autotune(graph, starts, "learned", "anneal", Budget(evaluations=10))
    with pytest.raises(InputError, match="unknown search"):
        autotune(graph, starts, "projected", "genetic", Budget(evaluations=10))
    with pytest.raises(InputError, match="budget"):
        Budget()


def test_the_cli_tunes_prints_json_and_saves_a_plan_file_that_applies(tmp_path):
    path = DATA / "layer_norm_bwd.hlo"
    done = subprocess.run([sys.executable, "-m", "compiler", "autotune", str(path),
                           "--evaluations", "200", "--json", "--save-plans", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["evaluations"] == 200 and result["search"] == "anneal"
    assert result["best"]["score_us"] <= min(result["starts"].values())
    made = json.loads((tmp_path / "tuned.plan.json").read_text())
    graph = graph_of("layer_norm_bwd")
    plan = plan_from_file(graph, SolModel(graph, get_device("h100")), made)
    assert plan.strategy == "custom:tuned"
    assert plan.projected_totals()["proj_us"] == pytest.approx(result["best"]["score_us"],
                                                               rel=1e-3)
    refused = subprocess.run([sys.executable, "-m", "compiler", "autotune", str(path),
                              "--model", "learned"], capture_output=True, text=True, cwd=REPO,
                             timeout=600)
    assert refused.returncode == 1 and "--learned-model" in refused.stderr


def test_shares_of_a_tuning_search_apart_and_join_into_the_best_of_all(layer_norm_bwd):
    from compiler.stages.tune import candidate_plans, merge_tunings, shard_seed, tune_stored

    graph, starts = layer_norm_bwd
    stored = {name: plan.to_dict()["kernels"] for name, plan in starts.items()}
    shares = [tune_stored(graph, "h100", "graph", stored, "projected", "anneal", None, 80, 5,
                          3, shard=index) for index in range(3)]
    assert shard_seed(5, 0) == 5 and len({shard_seed(5, i) for i in range(3)}) == 3
    # The first share is the tuning as one process runs it.
    alone = autotune(graph, starts, "projected", "anneal", Budget(evaluations=80), seed=5,
                     top_k=3)
    assert shares[0][0]["best"]["score_us"] == pytest.approx(alone.best.score, abs=1e-3)

    merged, plan_file, extra = merge_tunings(shares, 3)
    scores = [summary["best"]["score_us"] for summary, _, _ in shares]
    best = scores.index(min(scores))
    assert merged["best"] == shares[best][0]["best"] and plan_file == shares[best][1]
    assert merged["evaluations"] == 240 and merged["shares"] == 3
    assert extra["tuning"]["evaluations"] == 240
    ids = [entry["plan_id"] for entry in merged["top"]]
    assert len(ids) == len(set(ids)) and [e["rank"] for e in merged["top"]] == [1, 2, 3]
    assert [e["score_us"] for e in merged["top"]] == sorted(e["score_us"] for e in merged["top"])
    bests = [point[2] for point in merged["history"]]
    assert bests == sorted(bests, reverse=True) and bests[-1] == pytest.approx(min(scores))
    # The plans chosen to measure besides the tuned one come with their files, which apply
    # to the graph and give the grouping the tuner ranked at that place.
    candidates = candidate_plans(merged, "h100")
    assert len(candidates) == len([c for c in merged["measure"] if c["rank"] > 1]) > 0
    sol = SolModel(graph, get_device("h100"))
    by_id = {entry["plan_id"]: entry for entry in merged["top"]}
    for choice, entry in zip([c for c in merged["measure"] if c["rank"] > 1], candidates):
        assert entry["strategy"] == f"tuning:{choice['rank']}"
        plan = plan_from_file(graph, sol, entry["file"], entry["strategy"], "graph", True)
        assert by_id[choice["plan_id"]]["rank"] == choice["rank"]
        assert len(plan.kernels) == by_id[choice["plan_id"]]["kernels"]


def measured_plan(kernels: dict[tuple, float], end_to_end: float | None) -> dict:
    """A measurement's plan (compiler.runtime.gpu.PlanRun.to_dict()) with these kernel times."""
    from compiler.runtime.gpu import KernelRun, PlanRun, Timing

    runs = [KernelRun(f"k{i}", "loop", timing=Timing((us,) * 5, 1), nodes=list(nodes))
            for i, (nodes, us) in enumerate(kernels.items())]
    plan = PlanRun("any", "NVIDIA H100", runs)
    if end_to_end is not None:
        plan.end_to_end = Timing((end_to_end,) * 5, 1)
    return plan.to_dict()


def test_the_measured_side_of_a_tuning_prices_each_move_and_finds_the_fastest_plan():
    from compiler.stages.tune import measured_tuning
    from compiler.target.launch import terms_for

    lone = terms_for("h100").alone_us
    # The start timed a (10 µs alone) and b (8 µs alone); the tuned plan merged them into ab
    # (12 µs alone) and ran in 11 µs back to back, so each of its launches adds
    # 11 - (12 - lone) there. Merging took two kernels' work and one launch away and made ab's:
    # (10 - lone) + (8 - lone) - (12 - lone) + (11 - (12 - lone)) = 5 µs, whatever `lone` is.
    # The second move made c+d, which no measured plan holds.
    result = {"best": {"start": "cost", "moves": [
                  {"edit": "merge a, b", "gain_us": 4.0, "before": [["a"], ["b"]],
                   "after": [["a", "b"]]},
                  {"edit": "merge c, d", "gain_us": 1.0, "before": [["c"], ["d"]],
                   "after": [["c", "d"]]}]},
              "top": [{"rank": 1, "score_us": 9.0}, {"rank": 2, "score_us": 9.5}],
              "measure": [{"rank": 1, "why": "best"}, {"rank": 2, "why": "disagree"}]}
    measured = {"cost": measured_plan({("a",): 10.0, ("b",): 8.0}, 16.0),
                "tuned": measured_plan({("a", "b"): 12.0}, 11.0),
                "tuning:2": measured_plan({("a", "b"): 11.5}, 9.9)}
    found = measured_tuning(result, measured, {}, "h100")
    assert found["moves"][0]["measured_gain_us"] == pytest.approx(5.0)
    assert found["launch_gap_us"] == pytest.approx(11.0 - (12.0 - lone))
    assert found["moves"][1]["measured_gain_us"] is None
    assert "not measured" in found["moves"][1]["why"]
    assert found["gain_us"] == pytest.approx(16.0 - 11.0)
    # The model's best ran 11 µs, its second 9.9: the second is the fastest measured, and
    # the model's pick is 11 / 9.9 - 1 slower.
    assert found["fastest_rank"] == 2
    assert found["regret"] == pytest.approx(11.0 / 9.9 - 1, abs=1e-4)
    assert [plan["measured_us"] for plan in found["plans"]] == [11.0, 9.9]
    # Kernels named as the run stores them when the measurement carries no nodes.
    for plan in measured.values():
        for kernel in plan["kernels"]:
            kernel.pop("nodes")
    stored = {"cost": [{"name": "k0", "nodes": ["a"]}, {"name": "k1", "nodes": ["b"]}],
              "tuned": [{"name": "k0", "nodes": ["b", "a"]}]}
    again = measured_tuning(result, measured, stored, "h100")
    assert again["moves"][0]["measured_gain_us"] == pytest.approx(5.0)
    # No measured tuned plan: nothing to say.
    assert measured_tuning(result, {"cost": measured["cost"]}, {}, "h100") is None
