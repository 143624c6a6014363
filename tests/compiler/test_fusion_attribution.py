"""Why one plan is faster than another (compiler/fusion/attribution.py): regions of kernels
computing the same nodes, and each kernel's time split by cause, checked on hand-made plans
whose answer is known and on real modules' plans, where the causes must add up to the plans'
projected totals."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.fusion.attribution import (CAUSES, cause_of, explain, kernel_causes, regions,
                                         summary_text)
from compiler.fusion.explore import exploration_to_dict, explore
from compiler.importers import load_graph
from compiler.ir.summary import summarize
from compiler.target.launch import RUNTIMES

HLO = Path(__file__).parents[2] / "tests" / "data" / "hlo"


def kernel(name: str, nodes: list[str], device_us: float, limiter: str, graph_us: float = 0.5,
           stream_us: float = 3.0, barriers: float = 0.0, dram: int = 0) -> dict:
    """A kernel entry as explore --json gives it, with only what attribution reads."""
    return {"name": name, "nodes": nodes, "device_us": device_us,
            "launch": {"graph": graph_us, "stream": stream_us}, "dram_bytes": dram,
            "projected": {"limiter": limiter, "grid_sync_us": barriers}}


def test_limiters_are_charged_to_their_cause():
    assert cause_of("dram") == "dram"
    assert [cause_of(name) for name in ("l2", "lsu", "shfl")] == ["on-chip"] * 3
    assert [cause_of(name) for name in ("fma", "xu", "alu", "conv", "tensor-bf16")] == \
        ["compute"] * 5
    assert cause_of("latency") == cause_of(None) == "latency"


def test_a_kernels_time_is_its_launch_barriers_and_busy_time():
    causes = kernel_causes(kernel("k", ["a"], 10.0, "dram", barriers=4.0), "stream")
    assert causes == {"launch": 3.0, "dram": 6.0, "on-chip": 0.0, "compute": 0.0,
                      "barriers": 4.0, "latency": 0.0}
    assert kernel_causes({"name": "old", "nodes": [], "proj_us": 3.5}, "graph") is None


def test_a_merge_of_three_kernels_saves_two_launches_and_the_traffic_between_them():
    a = [kernel("loop.0", ["x"], 4.0, "dram", dram=400),
         kernel("loop.1", ["y"], 4.0, "dram", dram=400),
         kernel("input.2", ["z"], 3.0, "latency", dram=100),
         kernel("library.3", ["dot"], 20.0, "tensor-bf16")]
    b = [kernel("stitch.0", ["x", "y", "z"], 5.0, "dram", dram=500),
         kernel("library.1", ["dot"], 20.0, "tensor-bf16")]
    assert regions(a, b) == [([0, 1, 2], [0]), ([3], [1])]
    why = explain({"kernels": a}, {"kernels": b}, "graph")
    merged, same = why["regions"]
    assert (merged["kind"], merged["a"], merged["b"]) == \
        ("merged", ["loop.0", "loop.1", "input.2"], ["stitch.0"])
    assert merged["causes"] == pytest.approx({"launch": -1.0, "dram": -3.0, "on-chip": 0.0,
                                              "compute": 0.0, "barriers": 0.0,
                                              "latency": -3.0})
    assert merged["delta_us"] == pytest.approx(-7.0) and merged["top"] in ("dram", "latency")
    assert merged["dram_delta_bytes"] == -400
    assert same["kind"] == "same" and same["delta_us"] == 0.0
    assert why["delta_us"] == pytest.approx(-7.0)
    assert [row["cause"] for row in why["causes"]][:3] in (
        ["dram", "latency", "launch"], ["latency", "dram", "launch"])
    # Under stream launches the two launches saved weigh 2 x 3 µs.
    stream = explain({"kernels": a}, {"kernels": b}, "stream")
    assert dict((r["cause"], r["delta_us"]) for r in stream["causes"])["launch"] == \
        pytest.approx(-6.0)
    assert summary_text(stream, "A", "B").startswith("B is 12.0 µs faster than A: ")


def test_splits_regroupings_and_lone_kernels_are_named():
    a = [kernel("k0", ["p", "q"], 1.0, "dram"), kernel("k1", ["r", "s"], 1.0, "dram"),
         kernel("k2", ["only_a"], 1.0, "dram")]
    b = [kernel("j0", ["p"], 1.0, "dram"), kernel("j1", ["q", "r"], 1.0, "dram"),
         kernel("j2", ["s"], 1.0, "dram"), kernel("j3", ["only_b"], 1.0, "dram")]
    kinds = sorted(row["kind"] for row in explain({"kernels": a}, {"kernels": b},
                                                   "graph")["regions"])
    assert kinds == ["only in A", "only in B", "regrouped"]
    split = explain({"kernels": [kernel("k", ["p", "q"], 2.0, "dram")]},
                    {"kernels": [kernel("j", ["p"], 1.0, "dram"),
                                 kernel("i", ["q"], 1.0, "dram")]}, "graph")
    assert split["regions"][0]["kind"] == "split"


@pytest.mark.parametrize("name", ["layer_norm_bwd", "transformer_step_bf16", "attention_block"])
def test_on_real_plans_the_causes_add_up_to_the_projected_totals(name):
    graph = load_graph(str(HLO / f"{name}.hlo"))
    result = exploration_to_dict(summarize(graph), "h100", explore(graph, "h100"))
    plans = result["strategies"]
    for runtime in RUNTIMES:
        why = explain(plans["xla"], plans["cost"], runtime)
        totals = {s: plans[s]["total"]["runtimes"][runtime]["proj_us"] for s in ("xla", "cost")}
        assert why["a_us"] == pytest.approx(totals["xla"], abs=1e-2)
        assert why["b_us"] == pytest.approx(totals["cost"], abs=1e-2)
        assert sum(row["delta_us"] for row in why["causes"]) == \
            pytest.approx(why["delta_us"], abs=1e-6)
        assert sum(row["delta_us"] for row in why["regions"]) == \
            pytest.approx(why["delta_us"], abs=1e-6)
        # Every kernel of either plan is in exactly one region.
        for side, key in (("xla", "a"), ("cost", "b")):
            listed = [k for row in why["regions"] for k in row[key]]
            assert sorted(listed) == sorted(k["name"] for k in plans[side]["kernels"])
        assert set(why["regions"][0]["causes"]) == set(CAUSES)
