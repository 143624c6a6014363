"""Launch terms (compiler/target/launch.py): their formulas, their fit against what the committed
H200 campaign measured, and what they do to plans: every kernel's time is its device work plus
its runtime's launch term, plan totals add up under both runtimes, and the cost search decides
under the runtime it is given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.errors import InputError
from compiler.fusion.explore import exploration_to_dict, explore
from compiler.fusion.pricing import ProjectedPricer, plan_price
from compiler.importers import load_graph
from compiler.ir.summary import summarize
from compiler.target.devices import DEVICES, get_device
from compiler.target.launch import (RUNTIMES, TERMS, LaunchTerms, fit_alone, fit_gap,
                                    launch_for, parse_runtime, terms_for)
from compiler.target.sol import SolModel

ROOT = Path(__file__).parents[2]
HLO = ROOT / "tests" / "data" / "hlo"
CAMPAIGN = ROOT / "benchmarks" / "results" / "gpu-campaign-h200"
sys.path.insert(0, str(ROOT / "benchmarks"))


# -- the formulas ------------------------------------------------------------------------------


def test_a_graph_node_costs_its_gap_whatever_the_kernel():
    graph = launch_for("h200", "graph")
    assert graph.issue_us == 0
    for work in (0.0, 0.3, 5.0, 1e4):
        assert graph.us(work) == TERMS["h200"].graph_gap_us
        assert graph.kernel_us(work) == work + TERMS["h200"].graph_gap_us


def test_a_stream_kernel_shorter_than_the_hosts_issue_waits_for_the_host():
    terms = TERMS["h200"]
    stream = launch_for("h200", "stream")
    # A long kernel: the host keeps ahead, the GPU's gap is all it adds.
    assert stream.us(50.0) == terms.stream_gap_us
    # An empty one: the GPU waits for the host's next launch.
    assert stream.kernel_us(0.0) == terms.stream_issue_us
    assert stream.kernel_us(1.0) == max(1.0 + terms.stream_gap_us, terms.stream_issue_us)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e4), st.floats(0, 1e4), st.sampled_from(RUNTIMES),
       st.sampled_from(sorted(DEVICES)))
def test_a_kernels_time_never_falls_as_its_device_work_grows(a, b, runtime, device):
    """What makes the search's lower bound (SOL + its launch term) a bound."""
    launch = launch_for(device, runtime)
    low, high = sorted((a, b))
    assert launch.kernel_us(low) <= launch.kernel_us(high)
    assert launch.us(low) >= launch.us(high) >= 0


def test_graph_launches_are_cheaper_than_stream_launches_on_every_device():
    for name, terms in TERMS.items():
        assert terms.graph_gap_us < terms.stream_gap_us <= terms.stream_issue_us, name
        assert 0 < terms.graph_gap_us and terms.alone_us < 10, name
        assert set(terms.sources) == {"alone_us", "stream_gap_us", "stream_issue_us",
                                      "graph_gap_us"}, name


def test_an_unknown_runtime_is_refused_naming_the_known_ones():
    assert parse_runtime(" Stream ") == "stream"
    with pytest.raises(InputError, match="graph, stream"):
        parse_runtime("cudagraphs")


def test_devices_without_measurements_say_whose_figures_they_take():
    assert "nothing measured on h100" in terms_for("h100").sources["alone_us"]
    assert "nothing measured" not in terms_for(get_device("h200")).sources["alone_us"]


# -- the fit ----------------------------------------------------------------------------------


def test_the_fit_recovers_known_launch_figures_from_synthetic_timings():
    """Kernels timed alone measure their work + 3.4 µs (a little noise); plans back to back
    take each kernel's work + a 1.1 µs gap: the fit gives both back."""
    alone, gap = 3.4, 1.1
    kernels = [(work + alone + noise, work)
               for work, noise in [(0.1, 0.02), (0.3, -0.01), (0.2, 0.0), (40.0, 9.0)]]
    works = [[20.0, 5.0, 0.5], [8.0, 8.0], [1.0] * 30]
    plans = [(len(w), sum(x + alone for x in w), sum(w) + alone + (len(w) - 1) * gap)
             for w in works]
    fitted_alone, used = fit_alone(kernels)
    assert used == 3                     # the 40-µs kernel is not a tiny one
    assert fitted_alone == pytest.approx(alone, abs=0.011)
    fitted_gap, plans_used = fit_gap(plans, alone)
    assert plans_used == 3 and fitted_gap == pytest.approx(gap, abs=1e-9)
    with pytest.raises(ValueError, match="two or more kernels"):
        fit_gap([(1, 5.0, 5.0)], alone)
    with pytest.raises(ValueError, match="device work"):
        fit_alone([(50.0, 45.0)])


def test_the_h200_table_is_what_the_committed_campaign_measured():
    """benchmarks/launch_calibration.py over the committed H200 plans gives the figures
    launch.py holds (rounded to 0.01 µs): change the table only with a new fit."""
    from launch_calibration import calibrate

    result = calibrate(CAMPAIGN)
    fitted, table = result["fitted"], terms_for("h200")
    assert result["device"] == "h200"
    assert fitted["alone_us"]["value"] == pytest.approx(table.alone_us, abs=0.005)
    assert fitted["stream_gap_us"]["value"] == pytest.approx(table.stream_gap_us, abs=0.005)
    assert "501 lone kernels" in fitted["alone_us"]["from"]
    assert "17 plans" in fitted["stream_gap_us"]["from"]


# -- plans --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def layer_norm_bwd():
    graph = load_graph(str(HLO / "layer_norm_bwd.hlo"))
    return graph, {runtime: explore(graph, "h200", runtime=runtime) for runtime in RUNTIMES}


def test_every_kernel_is_its_device_work_and_its_runtimes_launch(layer_norm_bwd):
    graph, by_runtime = layer_norm_bwd
    for runtime, plans in by_runtime.items():
        result = exploration_to_dict(summarize(graph), "h200", plans)
        assert result["runtime"] == runtime and result["launch"]["device"] == "h200"
        for plan in result["strategies"].values():
            assert plan["runtime"] == runtime
            total = plan["total"]
            for kernel in plan["kernels"]:
                launch = launch_for("h200", runtime).us(kernel["device_us"])
                assert kernel["launch_us"] == pytest.approx(launch, abs=1e-4)
                assert kernel["launch"][runtime] == kernel["launch_us"]
                assert kernel["proj_us"] == pytest.approx(kernel["device_us"] + launch,
                                                          abs=2e-4)
                # The speed of light bounds the device work, launch aside.
                assert kernel["sol_us"] <= kernel["device_us"] + 1e-9
                assert kernel["limiter"] == ("launch" if launch > kernel["device_us"]
                                             else kernel["device_limiter"])
            assert total["device_us"] == pytest.approx(
                sum(k["device_us"] for k in plan["kernels"]), abs=1e-3)
            for name, figures in total["runtimes"].items():
                launches = sum(k["launch"][name] for k in plan["kernels"])
                assert figures["launch_us"] == pytest.approx(launches, abs=1e-3)
                assert figures["proj_us"] == pytest.approx(total["device_us"] + launches,
                                                           abs=1e-3)
            assert total["proj_us"] == total["runtimes"][runtime]["proj_us"]


def test_plans_of_the_rules_are_priced_under_both_runtimes_alike(layer_norm_bwd):
    """The rule-based strategies do not depend on the runtime: a graph run's stream totals
    are what a stream run gives them."""
    graph, by_runtime = layer_norm_bwd
    for strategy in ("unfused", "xla", "stitch"):
        graph_total = by_runtime["graph"][strategy].projected_totals()
        stream_total = by_runtime["stream"][strategy].projected_totals()
        assert graph_total["runtimes"] == stream_total["runtimes"]


def test_the_cost_search_decides_under_the_runtime_it_is_given():
    """Launches cost more in a stream, so the search merges more there: on this graph the
    stream search makes fewer kernels, which under stream launches is the cheaper plan, and
    its decisions say how much of each merge's gain is launches. (layer_norm_bwd was the
    example until the loaded latency: each kernel now pays its exposed round trips, and both
    runtimes merge it into two kernels.)"""
    graph = load_graph(str(HLO / "ops_misc.hlo"))
    graph_plan, stream_plan = (explore(graph, "h200", ["cost"], runtime=runtime)["cost"]
                               for runtime in ("graph", "stream"))
    assert len(stream_plan.kernels) < len(graph_plan.kernels)
    pricer = ProjectedPricer(graph, SolModel(graph, get_device("h200")), "stream")
    assert plan_price(stream_plan, pricer) < plan_price(graph_plan, pricer)
    fused = [d.reason for d in stream_plan.decisions if d.action == "fuse"]
    assert fused and all("of it launches, stream" in reason for reason in fused)


def test_the_cli_prices_as_the_runtime_asked_and_gives_both_totals():
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "explore", str(HLO / "softmax.hlo"), "--json",
         "--device", "h200", "--runtime", "stream"], cwd=ROOT, capture_output=True, text=True,
        timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["runtime"] == "stream"
    for plan in data["strategies"].values():
        assert plan["total"]["proj_us"] == plan["total"]["runtimes"]["stream"]["proj_us"]
        assert plan["total"]["runtimes"]["graph"]["proj_us"] < plan["total"]["proj_us"]
    refused = subprocess.run(
        [sys.executable, "-m", "compiler", "explore", str(HLO / "softmax.hlo"),
         "--runtime", "eager"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "graph" in refused.stderr


def test_launch_terms_serialise_with_their_sources():
    data = TERMS["h200"].to_dict()
    assert data["alone_us"] == TERMS["h200"].alone_us
    assert LaunchTerms(**{k: v for k, v in data.items()}) == TERMS["h200"]


# -- the probe ------------------------------------------------------------------------------


def test_the_launch_probe_builds_with_the_pip_toolchain_and_says_why_it_cannot_run(tmp_path):
    """benchmarks/launch_probe.cu compiles here (nvcc from pip, no GPU); run without a GPU it
    prints one JSON error and exits 1: the campaign step reports it, never a number."""
    from compiler.toolchain.locate import find_toolchain

    toolchain = find_toolchain()
    binary = tmp_path / "launch_probe"
    build = subprocess.run([str(toolchain.nvcc), "-O2", "-std=c++17", "-arch=sm_90", "-o",
                            str(binary), str(ROOT / "benchmarks" / "launch_probe.cu")],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    if run.returncode == 0:      # a GPU machine: the figures are there
        probe = json.loads(run.stdout)
        assert probe["graph"]["gap_us"] < probe["stream"]["gap_us"]
    else:
        assert run.returncode == 1
        assert "error" in json.loads(run.stdout)
