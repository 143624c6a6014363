"""The XLA baseline strategy: each of XLA's fusion rules on a small module, then real inputs.

Every plan goes through `plan_checker` (the plan invariants, then the plan run kernel by kernel
against the reference interpreter). On the JAX modules and ONNX exports the XLA plan must also
never be predicted slower than the unfused one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.fusion.unfused import unfused
from compiler.fusion.xla import xla_fusion
from compiler.fusion.xla.fusible import MAX_OPERANDS_AND_OUTPUTS
from compiler.fusion.xla.fusions import Fusions
from compiler.fusion.xla.instruction import instruction_fusion
from compiler.fusion.xla.multi_output import multi_output_fusion
from compiler.importers import load_graph
from compiler.importers.hlo_text import import_hlo
from compiler.target import SolModel, get_device

DATA = Path(__file__).resolve().parents[1] / "data"
JAX_MODULES = sorted(DATA.glob("hlo/*.hlo"))
ONNX_EXPORTS = sorted(DATA.glob("onnx/*.onnx"))

ADD = """
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
"""


def plan_for(text: str):
    graph = import_hlo("HloModule m\n" + text, "test.hlo")
    return graph, xla_fusion(graph, SolModel(graph, get_device("h100")))


def kernel_owning(plan, node: str):
    return next(k for k in plan.kernels if node in k.nodes)


def reasons(plan, action: str) -> list[str]:
    return [d.reason for d in plan.decisions if d.action == action]


# -- the rules, one small module each ---------------------------------------------------------


def test_an_elementwise_chain_becomes_one_loop_kernel(plan_checker):
    graph, plan = plan_for("""
ENTRY main {
  p0 = f32[64,128] parameter(0)
  p1 = f32[64,128] parameter(1)
  a = f32[64,128] add(p0, p1)
  m = f32[64,128] multiply(a, p0)
  n = f32[64,128] negate(m)
  ROOT e = f32[64,128] exponential(n)
}""")
    plan_checker(graph, plan)
    assert [(k.kind, set(k.nodes)) for k in plan.kernels] == [("loop", {"a", "m", "n", "e"})]
    assert reasons(plan, "fuse").count("xla: loop fusion of elementwise producer") == 3


def test_producers_fuse_into_a_reduction_which_is_the_hero(plan_checker):
    graph, plan = plan_for(ADD + """
ENTRY main {
  p0 = f32[32,256] parameter(0)
  p1 = f32[256] parameter(1)
  b = f32[32,256] broadcast(p1), dimensions={1}
  d = f32[32,256] subtract(p0, b)
  sq = f32[32,256] multiply(d, d)
  c = f32[] constant(0)
  ROOT r = f32[32] reduce(sq, c), dimensions={1}, to_apply=add
}""")
    plan_checker(graph, plan)
    [kernel] = plan.kernels
    assert kernel.kind == "input" and kernel.dominant == "r"
    assert set(kernel.nodes) == {"b", "d", "sq", "r"}
    assert "xla: input fusion of producer into the reduction" in reasons(plan, "fuse")


def test_a_reductions_consumer_is_a_separate_kernel(plan_checker):
    graph, plan = plan_for(ADD + """
ENTRY main {
  x = f32[16,64] parameter(0)
  c = f32[] constant(0)
  s = f32[16] reduce(x, c), dimensions={1}, to_apply=add
  n = f32[] constant(64)
  nb = f32[16] broadcast(n), dimensions={}
  mean = f32[16] divide(s, nb)
  mb = f32[16,64] broadcast(mean), dimensions={0}
  ROOT centred = f32[16,64] subtract(x, mb)
}""")
    plan_checker(graph, plan)
    reduce_kernel = kernel_owning(plan, "s")
    assert reduce_kernel.nodes == ("s",) and reduce_kernel.kind == "input"
    assert kernel_owning(plan, "centred").kind == "loop"
    assert "reduce output not fused into consumer (xla rule)" in reasons(plan, "refuse")


def test_layer_norm_forward_takes_at_least_two_kernels_as_in_xla(plan_checker):
    graph = load_graph(str(DATA / "hlo" / "layer_norm_fwd.hlo"))
    plan = xla_fusion(graph, SolModel(graph, get_device("h100")))
    plan_checker(graph, plan, _jax_inputs(DATA / "hlo" / "layer_norm_fwd.hlo", graph))
    reductions = [n.name for n in graph if n.op == "reduce"]
    assert len(plan.kernels) >= 2
    assert {kernel_owning(plan, r).kind for r in reductions} == {"input"}
    # The normalisation reads the statistics from memory: it is not in a reduction's kernel.
    assert kernel_owning(plan, graph.output_names()[0]).kind == "loop"


def test_an_expensive_producer_is_not_duplicated_but_a_cheap_broadcast_is(plan_checker):
    # x and y both read e and b; they cannot share a kernel since y needs the dot of x.
    graph, plan = plan_for("""
ENTRY main {
  p0 = f32[64,64] parameter(0)
  p1 = f32[64] parameter(1)
  w = f32[64,64] parameter(2)
  b = f32[64,64] broadcast(p1), dimensions={1}
  e = f32[64,64] exponential(p0)
  x = f32[64,64] multiply(e, b)
  d = f32[64,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y0 = f32[64,64] add(e, b)
  ROOT y = f32[64,64] add(y0, d)
}""")
    plan_checker(graph, plan)
    assert len(plan.kernels) == 3
    assert sum("e" in k.computed for k in plan.kernels) == 1  # computed once, then read
    assert "b" not in plan.owner()  # no kernel of its own: recomputed where it is read
    assert "b" in kernel_owning(plan, "x").recomputed and "b" in kernel_owning(plan, "y").recomputed
    assert "expensive producer would be duplicated (xla: instruction_fusion IsExpensive)" \
        in reasons(plan, "refuse")
    assert "xla: cheap producer duplicated into consumer (not IsExpensive)" \
        in reasons(plan, "fuse")


SIBLING_REDUCTIONS = ADD + """
ENTRY main {
  p0 = f32[32,256] parameter(0)
  c = f32[] constant(0)
  s = f32[32] reduce(p0, c), dimensions={1}, to_apply=add
  sq = f32[32,256] multiply(p0, p0)
  s2 = f32[32] reduce(sq, c), dimensions={1}, to_apply=add
  ROOT t = (f32[32], f32[32]) tuple(s, s2)
}"""


def test_sibling_reductions_over_the_same_input_become_one_multi_output_fusion(plan_checker):
    graph, plan = plan_for(SIBLING_REDUCTIONS)
    plan_checker(graph, plan)
    [kernel] = plan.kernels
    assert kernel.kind == "input" and set(kernel.outputs) == {"s", "s2"}
    assert "xla: sibling multi-output fusion (both read p0)" in reasons(plan, "fuse")


def test_each_pass_runs_alone_on_the_fusions_the_one_before_made():
    graph = import_hlo("HloModule m\n" + SIBLING_REDUCTIONS, "test.hlo")
    fusions = Fusions(graph, SolModel(graph, get_device("h100")))
    instruction_fusion(fusions)
    fusions.build_group_graph()
    assert sorted(sorted(fusions.members[g]) for g in fusions.gg.groups()) == [["s"], ["s2", "sq"]]
    multi_output_fusion(fusions)
    assert [sorted(fusions.members[g]) for g in fusions.gg.groups()] == [["s", "s2", "sq"]]
    assert fusions.decisions[-1].reason == "xla: sibling multi-output fusion (both read p0)"


def test_sibling_reductions_of_different_shapes_stay_apart(plan_checker):
    graph, plan = plan_for(ADD + """
ENTRY main {
  p0 = f32[32,256] parameter(0)
  c = f32[] constant(0)
  rows = f32[32] reduce(p0, c), dimensions={1}, to_apply=add
  cols = f32[256] reduce(p0, c), dimensions={0}, to_apply=add
  ROOT t = (f32[32], f32[256]) tuple(rows, cols)
}""")
    plan_checker(graph, plan)
    assert len(plan.kernels) == 2
    assert "xla: tiled reductions with different shapes" in reasons(plan, "refuse")


def test_a_loop_fusion_used_elsewhere_joins_its_consumer_reduction_and_is_written(plan_checker):
    graph, plan = plan_for(ADD + """
ENTRY main {
  p0 = f32[32,256] parameter(0)
  e = f32[32,256] exponential(p0)
  c = f32[] constant(0)
  s = f32[32] reduce(e, c), dimensions={1}, to_apply=add
  ROOT t = (f32[32], f32[32,256]) tuple(s, e)
}""")
    plan_checker(graph, plan)
    [kernel] = plan.kernels
    assert kernel.kind == "input" and set(kernel.outputs) == {"e", "s"}
    assert any(r.startswith("xla: producer-consumer multi-output fusion")
               for r in reasons(plan, "fuse"))


def test_small_independent_loop_fusions_are_fused_horizontally(plan_checker):
    graph, plan = plan_for("""
ENTRY main {
  p0 = f32[16,16] parameter(0)
  p1 = f32[16,16] parameter(1)
  p2 = f32[16,16] parameter(2)
  p3 = f32[16,16] parameter(3)
  p4 = f32[100] parameter(4)
  p5 = f32[7,3] parameter(5)
  a = f32[16,16] add(p0, p1)
  na = f32[16,16] negate(a)
  b = f32[16,16] multiply(p2, p3)
  nb = f32[16,16] negate(b)
  c = f32[100] exponential(p4)
  d = f32[7,3] exponential(p5)
  ROOT t = (f32[16,16], f32[16,16], f32[100], f32[7,3]) tuple(na, nb, c, d)
}""")
    plan_checker(graph, plan)
    assert sorted((k.kind, sorted(k.nodes)) for k in plan.kernels) == [
        ("horizontal", ["a", "b", "na", "nb"]), ("horizontal", ["c", "d"])]
    fused = reasons(plan, "fuse")
    # Equal shapes make one loop; different shapes of one element type a sliced input fusion.
    assert "xla: horizontal loop fusion of 2 independent fusions feeding t" in fused
    assert "xla: horizontal sliced input fusion of 2 independent fusions feeding t" in fused


def test_a_fusion_that_would_form_a_cycle_is_refused_and_logged(plan_checker):
    # e feeds the reduction directly and through the dot: putting e in the reduction's kernel
    # would make that kernel run both before and after the dot.
    graph, plan = plan_for(ADD + """
ENTRY main {
  p0 = f32[64,64] parameter(0)
  e = f32[64,64] exponential(p0)
  d = f32[64,64] dot(e, p0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  m = f32[64,64] multiply(e, d)
  c = f32[] constant(0)
  ROOT r = f32[64] reduce(m, c), dimensions={1}, to_apply=add
}""")
    plan_checker(graph, plan)
    assert any(d.action == "refuse" and d.reason == "would form cycle"
               and d.subject.startswith("e -> ") for d in plan.decisions)
    assert len({kernel_owning(plan, n).name for n in ("e", "d", "r")}) == 3


def test_library_ops_stay_alone_and_read_reshaped_operands_in_place(plan_checker):
    graph, plan = plan_for("""
ENTRY main {
  p0 = f32[32,64] parameter(0)
  p1 = f32[32,64] parameter(1)
  w = f32[4096] parameter(2)
  a = f32[32,64] add(p0, p1)
  rw = f32[64,64] reshape(w)
  d = f32[32,64] dot(a, rw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT e = f32[32,64] exponential(d)
}""")
    plan_checker(graph, plan)
    library = kernel_owning(plan, "d")
    assert library.kind == "library" and library.nodes == ("d",)
    assert library.recomputed == ("rw",)
    assert kernel_owning(plan, "a").nodes == ("a",)
    assert kernel_owning(plan, "e").nodes == ("e",)
    assert "xla: dot is a library call, not fusible" in reasons(plan, "refuse")


def test_a_transposing_producer_is_not_fused_into_a_reduction(plan_checker):
    graph, plan = plan_for(ADD + """
ENTRY main {
  p0 = f32[64,32] parameter(0)
  t = f32[32,64] transpose(p0), dimensions={1,0}
  c = f32[] constant(0)
  ROOT r = f32[32] reduce(t, c), dimensions={1}, to_apply=add
}""")
    plan_checker(graph, plan)
    assert kernel_owning(plan, "t").nodes == ("t",)
    assert any("read coalescing" in r for r in reasons(plan, "refuse"))


def test_a_fusion_over_the_operand_budget_is_refused(plan_checker):
    count = MAX_OPERANDS_AND_OUTPUTS + 10
    lines = [f"  p{i} = f32[8] parameter({i})" for i in range(count)]
    lines.append("  a1 = f32[8] add(p0, p1)")
    lines += [f"  a{i} = f32[8] add(a{i - 1}, p{i})" for i in range(2, count)]
    lines[-1] = "  ROOT" + lines[-1][1:]
    graph, plan = plan_for("ENTRY main {\n" + "\n".join(lines) + "\n}")
    plan_checker(graph, plan)
    assert len(plan.kernels) >= 2
    assert all(len(k.inputs) + len(k.outputs) <= MAX_OPERANDS_AND_OUTPUTS for k in plan.kernels)
    assert any("FusionFitsInBudget" in r for r in reasons(plan, "refuse"))


# -- real inputs ------------------------------------------------------------------------------


def _jax_inputs(path: Path, graph) -> list:
    stored = np.load(path.with_suffix(".inputs.npz"))
    values = []
    for i, node in enumerate(graph.parameter_nodes()):
        value = stored[f"arg{i}"]
        if value.dtype.kind == "V":  # .npz keeps ml_dtypes arrays (bf16) as raw bytes
            value = value.view(node.shape.dtype.numpy)
        values.append(value)
    return values


def _onnx_inputs(path: Path) -> list:
    stored = np.load(path.parent / (path.name.split(".")[0] + ".inputs.npz"))
    return [stored[f"arg{i}"] for i in range(len(stored.files))]


def _assert_not_slower_than_unfused(graph, plan) -> None:
    baseline = unfused(graph, SolModel(graph, get_device("h100")))
    assert plan.total_sol_us <= baseline.total_sol_us * (1 + 1e-12), \
        f"xla {plan.total_sol_us:.2f} us > unfused {baseline.total_sol_us:.2f} us"


@pytest.mark.parametrize("path", JAX_MODULES, ids=lambda p: p.stem)
def test_jax_modules_plan_correctly_and_no_slower_than_unfused(path, plan_checker):
    graph = load_graph(str(path))
    plan = xla_fusion(graph, SolModel(graph, get_device("h100")))
    plan_checker(graph, plan, _jax_inputs(path, graph))
    _assert_not_slower_than_unfused(graph, plan)


@pytest.mark.parametrize("path", ONNX_EXPORTS, ids=lambda p: p.name)
def test_onnx_exports_plan_correctly_and_no_slower_than_unfused(path, plan_checker):
    graph = load_graph(str(path))
    plan = xla_fusion(graph, SolModel(graph, get_device("h100")))
    plan_checker(graph, plan, _onnx_inputs(path))
    _assert_not_slower_than_unfused(graph, plan)


def test_the_test_data_is_there():
    assert len(JAX_MODULES) >= 12 and len(ONNX_EXPORTS) >= 8
