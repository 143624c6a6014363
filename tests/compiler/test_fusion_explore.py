"""What must hold across the strategies, on the real modules: the ordering of predicted times,
stitch's single kernels, and the kernel counts of all four (printed in the run's summary)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.errors import InputError
from compiler.fusion.explore import explore, parse_strategies
from compiler.importers import load_graph

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
MODULES = sorted((DATA / "hlo").glob("*.hlo")) + sorted((DATA / "onnx").glob("*.onnx"))
# Layer norm and softmax forward, the cases AStitch's regional stitching is for.
SINGLE_KERNEL = ["layer_norm_fwd.hlo", "softmax.hlo", "rms_norm.hlo"]

_COUNTS: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def kernel_count_report(run_report):
    yield
    run_report.append("kernels per strategy (unfused / xla / stitch / cost), projected µs on "
                      "h100 as a CUDA graph:")
    run_report.extend(_COUNTS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_cost_is_never_slower_than_xla_and_xla_never_slower_than_unfused(path):
    graph = load_graph(str(path))
    plans = explore(graph, "h100")
    # The cost search's objective (projected times, launches included) never loses to the
    # rules; XLA's rules never move more DRAM bytes than running op by op, nor take longer.
    projected = {name: plan.total_projected_us for name, plan in plans.items()}
    assert projected["cost"] <= projected["xla"] * (1 + 1e-9)
    assert projected["xla"] <= projected["unfused"] * (1 + 1e-9)
    assert plans["xla"].dram_bytes <= plans["unfused"].dram_bytes
    counts = " / ".join(str(len(plans[s].kernels)) for s in ("unfused", "xla", "stitch", "cost"))
    times = " / ".join(f"{projected[s]:.1f}" for s in ("unfused", "xla", "stitch", "cost"))
    _COUNTS.append(f"  {path.name:42s} {counts:22s} {times}")


@pytest.mark.parametrize("name", SINGLE_KERNEL)
def test_stitch_makes_a_normalisation_forward_one_kernel(name):
    graph = load_graph(str(DATA / "hlo" / name))
    plan = explore(graph, "h100", ["stitch"])["stitch"]
    assert [k.kind for k in plan.kernels] == ["stitch-regional"]


def test_strategies_are_parsed_and_checked():
    assert parse_strategies("all") == ["unfused", "xla", "stitch", "cost"]
    assert parse_strategies("xla, cost") == ["xla", "cost"]
    with pytest.raises(InputError, match="unknown strategy fancy"):
        parse_strategies("xla,fancy")


def test_explore_json_keeps_the_documented_shape():
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "explore", str(DATA / "hlo" / "softmax.hlo"),
         "--json", "--device", "a100"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["device"] == "a100" and data["graph"]["nodes"] > 0
    assert set(data["strategies"]) == {"unfused", "xla", "stitch", "cost"}
    for plan in data["strategies"].values():
        assert plan["explore_ms"] >= 0
        assert plan["total"]["sol_us"] > 0
        # Projected now (the sum of the kernels' times, each above its launch overhead and
        # SOL time); measured only where a GPU worker ran it.
        assert plan["total"]["measured_us"] is None
        kernels_proj = [k["proj_us"] for k in plan["kernels"]]
        assert plan["total"]["proj_us"] == pytest.approx(sum(kernels_proj), rel=1e-3)
        for kernel in plan["kernels"]:
            assert kernel["proj_us"] >= kernel["sol_us"] - 1e-6
            assert kernel["limiter"] and kernel["measured_us"] is None
        for kernel in plan["kernels"]:
            for key in ("name", "kind", "nodes", "sol_us", "proj_us", "measured_us", "limiter",
                        "occupancy", "waves", "block_size", "grid_size", "registers",
                        "shared_bytes"):
                assert key in kernel
        assert isinstance(plan["decisions"], list)
    nodes = [n for k in data["strategies"]["stitch"]["kernels"] for n in k["nodes"]]
    assert "exp.1" in nodes or any(n.startswith("exp") for n in nodes)  # names as in the input


def test_explore_text_puts_the_strategies_side_by_side():
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "explore", str(DATA / "hlo" / "layer_norm_fwd.hlo"),
         "--strategy", "unfused,stitch"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "unfused" in result.stdout and "stitch-regional" in result.stdout
    assert "xla" not in result.stdout.split("==")[0]


def test_explore_rejects_an_unknown_device_with_the_known_ones():
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "explore", str(DATA / "hlo" / "softmax.hlo"),
         "--device", "tpu"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "h100" in result.stderr
    assert "Traceback" not in result.stderr


# -- the rule-based strategies in a forked process (explore's `concurrent`) ----------------------

CONCURRENT_MODULES = ["transformer_step_bf16.hlo", "layer_norm_bwd.hlo", "attention_block.hlo"]


def _plan_figures(plan) -> tuple:
    return ([(k.nodes, k.recomputed, k.kind, k.outputs, k.projected and k.projected.projected_us,
              k.schedule) for k in plan.kernels],
            [(d.action, d.subject, d.reason) for d in plan.decisions], plan.cost_model)


@pytest.mark.parametrize("name", CONCURRENT_MODULES)
def test_the_background_process_changes_no_plan(name):
    graph = load_graph(str(DATA / "hlo" / name))
    serial = explore(graph, "h100", concurrent=False)
    forked = explore(graph, "h100", concurrent=True)
    assert list(forked) == list(serial) == ["unfused", "xla", "stitch", "cost"]
    for strategy in serial:
        assert _plan_figures(forked[strategy]) == _plan_figures(serial[strategy]), strategy
    # A strategy listed after cost is not compared with it, in either mode.
    late = explore(graph, "h100", ["unfused", "cost", "stitch"], concurrent=True)
    alone = explore(graph, "h100", ["unfused", "cost", "stitch"], concurrent=False)
    assert _plan_figures(late["cost"]) == _plan_figures(alone["cost"])


@pytest.mark.parametrize("concurrent", [False, True], ids=["serial", "background"])
def test_each_plan_is_handed_over_priced_as_soon_as_it_is_made(concurrent):
    """`on_plan` sees each plan once, with its kernels priced: one after another in strategy
    order, or with the rule-based strategies in the background the cost plan first (made here)
    and theirs once joined."""
    graph = load_graph(str(DATA / "hlo" / "layer_norm_bwd.hlo"))
    seen = []

    def on_plan(name, plan):
        assert all(kernel.projected is not None for kernel in plan.kernels)
        seen.append((name, plan, plan.to_dict()))

    plans = explore(graph, "h100", ["unfused", "xla", "stitch", "cost"], concurrent=concurrent,
                    runtime="stream", on_plan=on_plan)
    order = ["cost", "unfused", "xla", "stitch"] if concurrent else list(plans)
    assert [name for name, _, _ in seen] == order
    for name, plan, entry in seen:
        assert plans[name] is plan and entry["runtime"] == "stream"
        assert entry == plan.to_dict()  # handed over finished: nothing changed it after


def test_a_dead_background_process_costs_nothing_but_time(monkeypatch):
    """The child is killed mid-way (here: it exits at its first strategy): the plans are made
    here instead, the same as without it."""
    import compiler.fusion.xla as xla

    parent, real = os.getpid(), xla.xla_fusion

    def dies_in_the_child(*args, **kwargs):
        if os.getpid() != parent:
            os._exit(9)
        return real(*args, **kwargs)

    graph = load_graph(str(DATA / "hlo" / "layer_norm_bwd.hlo"))
    serial = explore(graph, "h100", concurrent=False)
    monkeypatch.setattr(xla, "xla_fusion", dies_in_the_child)
    forked = explore(graph, "h100", concurrent=True)
    for strategy in serial:
        assert _plan_figures(forked[strategy]) == _plan_figures(serial[strategy]), strategy


def test_an_error_in_the_background_process_is_raised_here(monkeypatch):
    import compiler.fusion.stitch as stitch

    def refuses(*args, **kwargs):
        raise InputError("stitch refuses this graph")

    monkeypatch.setattr(stitch, "stitch_fusion", refuses)
    graph = load_graph(str(DATA / "hlo" / "layer_norm_bwd.hlo"))
    with pytest.raises(InputError, match="stitch refuses this graph"):
        explore(graph, "h100", concurrent=True)


def _assisted_pricer(name: str):
    """A projected pricer of a module's graph with a background process as its assistant (no
    rule-based strategy to run first), and the module's kernels to price."""
    from compiler.target.devices import get_device
    from compiler.target.sol import SolModel
    from compiler.fusion.explore import _RulesInBackground
    from compiler.fusion.pricing import ProjectedPricer

    graph = load_graph(str(DATA / "hlo" / name))
    model = SolModel(graph, get_device("h100"))
    kernels = [k for k in explore(graph, "h100", ["stitch"])["stitch"].kernels
               if k.kind != "library"]
    pricer = ProjectedPricer(graph, model)
    return graph, model, pricer, _RulesInBackground(graph, model, pricer, [], pricer), kernels


def test_the_background_process_prices_ahead_what_this_one_would():
    graph, model, pricer, background, kernels = _assisted_pricer("transformer_step_bf16.hlo")
    from compiler.fusion.pricing import ProjectedPricer

    try:
        assert background.join() == {}
        submitted = 0
        for kernel in kernels:
            structure = pricer.signature.of(kernel)
            if pricer.needs(structure):
                while not pricer.wants_ahead():  # one at a time: wait for the last answer
                    background._receive(block=True)
                pricer.price_ahead(kernel, structure)
                submitted += 1
                assert not pricer.needs(structure)
        prices = [pricer.price(kernel) for kernel in kernels]
    finally:
        background.close()
    assert submitted > 10 and background.helped == submitted and pricer.priced == 0
    alone = ProjectedPricer(graph, model)
    assert prices == [alone.price(kernel) for kernel in kernels]


def test_kernels_a_dead_background_process_was_pricing_are_priced_here():
    graph, model, pricer, background, kernels = _assisted_pricer("layer_norm_bwd.hlo")
    from compiler.fusion.pricing import ProjectedPricer

    try:
        background.join()
        kernel = kernels[0]
        os.kill(background.pid, signal.SIGSTOP)  # it takes the kernel and never answers
        pricer.price_ahead(kernel, pricer.signature.of(kernel))
        assert pricer.waiting_for(pricer.signature.of(kernel))
        os.kill(background.pid, signal.SIGKILL)
        price = pricer.price(kernel)
    finally:
        background.close()
    assert background.helped == 0 and pricer.priced == 1
    assert price == ProjectedPricer(graph, model).price(kernel)


def test_decisions_write_microseconds_as_the_pages_columns_do():
    """Decision reasons are shown beside columns in µs: they say µs too, never "us"."""
    import re

    graph = load_graph(str(DATA / "hlo" / "layer_norm_bwd.hlo"))
    reasons = [d.reason for plan in explore(graph, "h100").values() for d in plan.decisions]
    assert any("µs" in reason for reason in reasons)
    assert not [reason for reason in reasons if re.search(r"\d us\b", reason)]
