"""FusionPlan invariants: check_plan catches each kind of broken plan, execute_plan the rest;
and the unfused baseline is a valid plan on every real input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.fusion.unfused import unfused
from compiler.importers import load_graph
from compiler.importers.hlo_text import import_hlo
from compiler.kernels.plan import KernelSpec, PlanError, build_plan, check_plan, execute_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

DATA = Path(__file__).parents[1] / "data"

LAYER = """
    add {
      x = f32[] parameter(0)
      y = f32[] parameter(1)
      ROOT s = f32[] add(x, y)
    }
    ENTRY e {
      p = f32[8,16] parameter(0)
      e = f32[8,16] exponential(p)
      z = f32[] constant(0)
      r = f32[8] reduce(e, z), dimensions={1}, to_apply=add
      b = f32[8,16] broadcast(r), dimensions={0}
      ROOT d = f32[8,16] divide(e, b)
    }
"""


@pytest.fixture
def layer():
    graph = import_hlo(LAYER, "softmax.hlo")
    return graph, SolModel(graph, get_device("h100"))


def test_one_kernel_for_the_whole_softmax_moves_only_input_and_output(layer):
    graph, model = layer
    plan = build_plan(graph, [KernelSpec(["e", "r", "b", "d"], "stitch-regional",
                                         dominant="r")], "test", model)
    check_plan(graph, plan)
    (kernel,) = plan.kernels
    assert kernel.inputs == ("p", "z") and kernel.outputs == ("d",)  # z: a free immediate
    assert kernel.sol.dram_bytes == 2 * 8 * 16 * 4


def test_a_split_plan_writes_what_the_second_kernel_reads(layer, plan_checker):
    graph, model = layer
    plan = build_plan(graph, [KernelSpec(["e", "r"], "input", dominant="r"),
                              KernelSpec(["d"], "loop", recomputed=["b"])], "test", model)
    first, second = plan.kernels
    assert set(first.outputs) == {"e", "r"}  # e is read again by the divide
    assert set(second.inputs) == {"e", "r"}
    plan_checker(graph, plan)


def test_overlapping_kernels_are_refused(layer):
    graph, model = layer
    with pytest.raises(PlanError, match="owned by two kernels"):
        build_plan(graph, [KernelSpec(["e", "r"], "input"), KernelSpec(["r", "b", "d"], "loop")],
                   "test", model)


def test_a_cycle_between_kernels_is_refused(layer):
    graph, model = layer
    with pytest.raises(PlanError, match="cycle"):
        build_plan(graph, [KernelSpec(["e", "b", "d"], "loop"), KernelSpec(["r"], "input")],
                   "test", model)


def test_recomputing_an_expensive_op_breaks_an_invariant(layer):
    graph, model = layer
    plan = build_plan(graph, [KernelSpec(["e", "r"], "input"),
                              KernelSpec(["b", "d"], "loop", recomputed=["e"])], "test", model)
    with pytest.raises(PlanError, match="not cheap enough to duplicate"):
        check_plan(graph, plan)


def test_a_node_in_no_kernel_breaks_an_invariant(layer):
    graph, model = layer
    plan = build_plan(graph, [KernelSpec(["e", "r"], "input"), KernelSpec(["d"], "loop")],
                      "test", model)
    with pytest.raises(PlanError, match="'b' is owned by no kernel"):
        check_plan(graph, plan)


def test_a_kernel_that_hides_an_output_fails_execution(layer):
    graph, model = layer
    plan = build_plan(graph, [KernelSpec(["e", "r"], "input"),
                              KernelSpec(["b", "d"], "loop")], "test", model)
    plan.kernels[0].outputs = ("r",)  # forget to write e, which the divide needs
    with pytest.raises(PlanError):
        check_plan(graph, plan)
    with pytest.raises(PlanError, match="no kernel wrote it"):
        execute_plan(graph, plan, [np.ones((8, 16), np.float32)])


HLO = sorted((DATA / "hlo").glob("*.hlo"))
ONNX = sorted((DATA / "onnx").glob("*.onnx"))


@pytest.mark.parametrize("path", HLO + ONNX, ids=lambda p: p.name)
def test_unfused_is_a_valid_plan_that_computes_the_graph(path, plan_checker):
    graph = load_graph(str(path))
    plan = unfused(graph, SolModel(graph, get_device("h100")))
    inputs = np.load(path.with_name(path.name.split(".")[0] + ".inputs.npz"))
    arrays = [inputs[f"arg{i}"] for i in range(len(graph.parameters))]
    plan_checker(graph, plan, arrays)
    kernel_forming = [n for n in graph if n.op not in (
        "parameter", "constant", "tuple", "get-tuple-element", "reshape", "bitcast", "broadcast")]
    assert len(plan.kernels) >= len(kernel_forming)  # one per op, plus copies of returned views


def test_unfused_gives_a_dead_view_a_kernel(plan_checker):
    graph = import_hlo("""
        ENTRY e {
          p = f32[4,4] parameter(0)
          dead = f32[16] reshape(p)
          ROOT n = f32[4,4] negate(p)
        }
    """, "dead.hlo")
    plan = unfused(graph, SolModel(graph, get_device("h100")))
    plan_checker(graph, plan)
    assert sorted(k.nodes for k in plan.kernels) == [("dead",), ("n",)]
