"""The `stitch` strategy (AStitch's regional and global stitching, compiler/fusion/stitch.py).

Layer norm, RMS norm and softmax must each become one regional kernel; a row too long for a
block is stitched globally only while the grid fits one wave; independent stitch kernels that
share an input merge unless that closes a cycle; and every plan, on every real input, keeps
the plan invariants, computes the graph's own results kernel by kernel and is predicted no
slower than the unfused baseline.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.fusion.stitch import stitch_fusion
from compiler.fusion.unfused import unfused
from compiler.importers import import_bytes, load_graph
from compiler.importers.onnx import import_onnx
from compiler.kernels.plan import check_plan
from compiler.target import SolModel, get_device

DATA = Path(__file__).resolve().parent.parent / "data"
JAX_MODULES = sorted(p.stem for p in (DATA / "hlo").glob("*.hlo"))
ONNX_FILES = sorted((DATA / "onnx").glob("*.onnx"))


def plan_of(graph, device=None):
    model = SolModel(graph, device or get_device("h100"))
    return stitch_fusion(graph, model), model


def jax_module(name):
    """A JAX-emitted module and its saved inputs (bf16 arrays come back as raw bytes)."""
    graph = load_graph(str(DATA / "hlo" / f"{name}.hlo"))
    with np.load(DATA / "hlo" / f"{name}.inputs.npz") as archive:
        inputs = [archive[f"arg{i}"] for i in range(len(archive.files))]
    inputs = [value.view(node.shape.dtype.numpy) if value.dtype.kind == "V" else value
              for value, node in zip(inputs, graph.parameter_nodes())]
    return graph, inputs


def onnx_inputs(path):
    with np.load(DATA / "onnx" / f"{path.name.split('.')[0]}.inputs.npz") as archive:
        return [archive[f"arg{i}"] for i in range(len(archive.files))]


def hlo(text):
    return import_bytes(text.encode(), "test.hlo")[0]


def generated(plan):
    """The kernels the strategy generates code for (library calls aside)."""
    return [kernel for kernel in plan.kernels if kernel.kind != "library"]


def reasons(plan, action):
    return [f"{d.subject}: {d.reason}" for d in plan.decisions if d.action == action]


ADD = """
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
"""


def softmax_hlo(rows, length):
    """Softmax over rows of `length` elements: max and sum of the same rows."""
    return f"""HloModule softmax_{rows}x{length}
{ADD}
ENTRY main {{
  x = f32[{rows},{length}] parameter(0)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
  m = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = f32[{rows},{length}] broadcast(m), dimensions={{0}}
  d = f32[{rows},{length}] subtract(x, mb)
  e = f32[{rows},{length}] exponential(d)
  s = f32[{rows}] reduce(e, zero), dimensions={{1}}, to_apply=add
  sb = f32[{rows},{length}] broadcast(s), dimensions={{0}}
  ROOT y = f32[{rows},{length}] divide(e, sb)
}}
"""


# -- layer norm, RMS norm and softmax: one regional kernel each --------------------------------


@pytest.mark.parametrize("module", ["layer_norm_fwd", "softmax", "rms_norm"])
def test_a_norm_or_softmax_is_one_regional_kernel(module, plan_checker):
    graph, inputs = jax_module(module)
    plan, _ = plan_of(graph)
    plan_checker(graph, plan, inputs)
    kernels = generated(plan)
    assert [k.kind for k in kernels] == ["stitch-regional"], plan.kind_counts()
    assert graph.nodes[kernels[0].dominant].op == "reduce"


def test_the_regional_decision_gives_the_row_and_shared_memory_figures(plan_checker):
    graph, inputs = jax_module("layer_norm_fwd")
    plan, model = plan_of(graph)
    plan_checker(graph, plan, inputs)
    limit = model.device.shared_memory_per_block_bytes
    stitches = [r for r in reasons(plan, "fuse") if "regional stitch" in r]
    assert stitches, plan.decisions
    assert all("row 32 f32 = 128 B" in r and f"<= {limit} B shared memory per block" in r
               for r in stitches)
    assert not reasons(plan, "refuse")


def test_an_onnx_layer_normalization_is_one_regional_kernel(plan_checker):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8, 64])
    rng = np.random.default_rng(1)
    weights = [numpy_helper.from_array(rng.standard_normal(64).astype(np.float32), name)
               for name in ("gamma", "beta")]
    node = helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1,
                            epsilon=1e-5)
    model = helper.make_model(helper.make_graph([node], "ln", [x], [y], weights),
                              opset_imports=[helper.make_opsetid("", 17)])
    graph = import_onnx(model.SerializeToString(), "ln.onnx")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    assert [k.kind for k in generated(plan)] == ["stitch-regional"]


@pytest.mark.parametrize("path", [p for p in ONNX_FILES if p.name.startswith("mlp_layernorm")],
                         ids=lambda p: p.stem)
def test_each_layer_norm_of_a_torch_export_is_one_regional_kernel(path, plan_checker):
    graph = import_onnx(path.read_bytes(), path.name)
    plan, _ = plan_of(graph)
    plan_checker(graph, plan, onnx_inputs(path))
    owner = plan.owner()
    kinds = {k.name: k.kind for k in plan.kernels}
    layer_norms: dict[str, set[str]] = {}
    for node in graph:
        if node.extra.get("onnx_op") == "LayerNormalization" and node.name in owner:
            layer_norms.setdefault(node.extra["onnx_node"], set()).add(owner[node.name])
    assert len(layer_norms) == 2
    for kernels in layer_norms.values():
        assert len(kernels) == 1 and kinds[kernels.pop()] == "stitch-regional"
    # Linear -> LayerNorm -> GELU -> Linear -> LayerNorm: the GELU joins the first norm.
    assert len(generated(plan)) == 2


def test_a_regional_kernel_may_write_a_row_statistic_and_the_normalised_rows(plan_checker):
    graph = hlo(f"""HloModule centre_rows
{ADD}
ENTRY main {{
  x = f32[16,48] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(48)
  s = f32[16] reduce(x, zero), dimensions={{1}}, to_apply=add
  nb = f32[16] broadcast(n), dimensions={{}}
  mean = f32[16] divide(s, nb)
  mb = f32[16,48] broadcast(mean), dimensions={{0}}
  centred = f32[16,48] subtract(x, mb)
  ROOT out = (f32[16], f32[16,48]) tuple(mean, centred)
}}
""")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    [kernel] = plan.kernels
    assert kernel.kind == "stitch-regional"
    assert [str(graph.nodes[o].shape) for o in kernel.outputs] == ["f32[16]", "f32[16,48]"]


# -- layer norm backward -------------------------------------------------------------------------


def test_layer_norm_backward_needs_fewer_kernels_than_unfused(plan_checker):
    graph, inputs = jax_module("layer_norm_bwd")
    plan, model = plan_of(graph)
    plan_checker(graph, plan, inputs)
    assert len(plan.kernels) < len(unfused(graph, model).kernels)
    # Its dgamma/dbeta column sums and the row sums of dx share one kernel: a global stitch,
    # which fits one wave at these sizes.
    assert [k.kind for k in plan.kernels] == ["stitch-global"]
    assert any("strided" in r and "1 block <= 528 resident" in r
               for r in reasons(plan, "fuse"))


def test_layer_norm_backward_needs_fewer_kernels_than_xla(plan_checker):
    xla = pytest.importorskip("compiler.fusion.xla", reason="the xla strategy is not written yet")
    graph, inputs = jax_module("layer_norm_bwd")
    plan, model = plan_of(graph)
    plan_checker(graph, plan, inputs)
    assert len(plan.kernels) < len(xla.xla_fusion(graph, model).kernels)


# -- global stitching and its deadlock guard -------------------------------------------------------


def test_a_row_longer_than_a_block_is_stitched_globally_when_the_grid_fits_one_wave(
        plan_checker):
    graph = hlo(softmax_hlo(1, 16384))
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    assert [k.kind for k in plan.kernels] == ["stitch-global"]
    assert any("m: row 16384 > 8192 elements per block (1024 threads x 8)" in r
               and "4 blocks <= 528 resident (132 SMs x 4)" in r for r in reasons(plan, "fuse"))


def test_a_big_grid_of_long_rows_is_still_one_global_kernel_within_one_wave():
    graph = hlo(softmax_hlo(64, 16384))  # 1M elements / (512 threads x 8) = 256 blocks
    plan, _ = plan_of(graph)
    check_plan(graph, plan)
    assert [k.kind for k in plan.kernels] == ["stitch-global"]
    assert any("256 blocks <= 528 resident" in r for r in reasons(plan, "fuse"))


def test_a_global_stitch_beyond_one_wave_is_refused_as_a_deadlock():
    graph = hlo(softmax_hlo(1024, 16384))  # 16M elements = 4096 blocks of 512 x 8
    plan, _ = plan_of(graph)
    check_plan(graph, plan)
    refusals = reasons(plan, "refuse")
    assert any("global stitch refused: needs 4096 blocks > 528 resident: would deadlock" in r
               for r in refusals), refusals
    assert "stitch-global" not in plan.kind_counts()
    assert len(generated(plan)) > 1  # the reductions' consumers get kernels of their own


def test_a_column_sum_consumed_in_the_kernel_is_stitched_globally(plan_checker):
    graph = hlo(f"""HloModule centre_columns
{ADD}
ENTRY main {{
  x = f32[8,16] parameter(0)
  zero = f32[] constant(0)
  s = f32[16] reduce(x, zero), dimensions={{0}}, to_apply=add
  sb = f32[8,16] broadcast(s), dimensions={{1}}
  ROOT y = f32[8,16] subtract(x, sb)
}}
""")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    assert [k.kind for k in plan.kernels] == ["stitch-global"]
    assert any("global stitch (s reduces strided rows (16x8 strided)): 1 block <= 528 resident"
               in r for r in reasons(plan, "fuse"))


def test_rows_that_overflow_shared_memory_are_stitched_globally(plan_checker):
    graph, inputs = jax_module("layer_norm_fwd")
    tiny = dataclasses.replace(get_device("h100"), shared_memory_per_block_bytes=1024)
    plan, _ = plan_of(graph, tiny)
    plan_checker(graph, plan, inputs)
    assert [k.kind for k in plan.kernels] == ["stitch-global"]
    assert any("regional refused" in r and "> 1024 B shared memory per block" in r
               for r in reasons(plan, "fuse"))


# -- horizontal merges ---------------------------------------------------------------------------


def test_independent_stitch_kernels_reading_one_input_merge(plan_checker):
    graph = hlo(f"""HloModule siblings
{ADD}
ENTRY main {{
  x = f32[16,64] parameter(0)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  m = f32[16] reduce(x, ninf), dimensions={{1}}, to_apply=max
  mb = f32[16,64] broadcast(m), dimensions={{0}}
  shifted = f32[16,64] subtract(x, mb)
  sq = f32[16,64] multiply(x, x)
  ss = f32[16] reduce(sq, zero), dimensions={{1}}, to_apply=add
  r = f32[16] rsqrt(ss)
  rb = f32[16,64] broadcast(r), dimensions={{0}}
  scaled = f32[16,64] multiply(x, rb)
  ROOT out = (f32[16,64], f32[16,64]) tuple(shifted, scaled)
}}
""")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    assert [k.kind for k in plan.kernels] == ["stitch-regional"]
    assert any("(both read x): horizontal regional stitch" in r for r in reasons(plan, "fuse"))


def test_a_horizontal_merge_that_would_form_a_cycle_is_refused(plan_checker):
    graph = hlo(f"""HloModule cycle
{ADD}
ENTRY main {{
  x = f32[16,32] parameter(0)
  w = f32[32,32] parameter(1)
  zero = f32[] constant(0)
  ninf = f32[] constant(-inf)
  s = f32[16] reduce(x, zero), dimensions={{1}}, to_apply=add
  sb = f32[16,32] broadcast(s), dimensions={{0}}
  c = f32[16,32] subtract(x, sb)
  d = f32[16,32] dot(c, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  e = f32[16,32] add(d, x)
  m = f32[16] reduce(e, ninf), dimensions={{1}}, to_apply=max
  mb = f32[16,32] broadcast(m), dimensions={{0}}
  ROOT f = f32[16,32] subtract(e, mb)
}}
""")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    assert sorted(k.kind for k in plan.kernels) == ["library", "stitch-regional",
                                                   "stitch-regional"]
    assert "s + m (both read x): would form cycle" in reasons(plan, "refuse")


# -- XLA's rules kept ------------------------------------------------------------------------------


def test_an_expensive_scalar_is_not_recomputed_for_every_element(plan_checker):
    graph, inputs = jax_module("adam")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan, inputs)
    owner = plan.owner()
    assert owner["pow.2"] != owner["div.16"]
    assert any("div.15 would recompute pow.2" in r for r in reasons(plan, "refuse"))


def test_no_kernel_reads_more_operands_than_xlas_fusion_budget(plan_checker):
    # An optimizer-style update: every parameter scaled by one global factor, all independent
    # but for that scalar. Merged horizontally without a budget they would be one kernel of
    # 120 operands; XLA stops a fusion at 96 operands and outputs.
    count = 60
    lines = ["ENTRY e {", "  s = f32[] parameter(0)"]
    outputs = []
    for k in range(count):
        lines += [f"  p{k} = f32[1024] parameter({2 * k + 1})",
                  f"  g{k} = f32[1024] parameter({2 * k + 2})",
                  f"  b{k} = f32[1024] broadcast(s), dimensions={{}}",
                  f"  m{k} = f32[1024] multiply(g{k}, b{k})",
                  f"  u{k} = f32[1024] subtract(p{k}, m{k})"]
        outputs.append(f"u{k}")
    shapes = ", ".join(["f32[1024]"] * count)
    lines += [f"  ROOT t = ({shapes}) tuple({', '.join(outputs)})", "}"]
    graph = hlo("\n".join(lines))
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    widest = max(len([v for v in kernel.inputs if graph.nodes[v].op != "constant"])
                 for kernel in plan.kernels)
    assert 64 < widest <= 96
    assert any("not a legal kernel: " in reason and "> 96 (XLA's fusion budget)" in reason
               for reason in reasons(plan, "refuse"))


def test_a_chain_of_squarings_of_a_parameter_is_planned(plan_checker):
    # Each x * x reads its operand twice and is cheap enough to recompute from the parameter,
    # so every kernel reading the chain recomputes it: finding what such a kernel loads once
    # walked each of the 2^60 paths through the chain.
    lines = ["ENTRY e {", "  p = f32[64] parameter(0)"]
    previous = "p"
    for k in range(60):
        lines.append(f"  s{k} = f32[64] multiply({previous}, {previous})")
        previous = f"s{k}"
    graph = hlo("\n".join(lines + [f"  ROOT r = f32[64] negate({previous})", "}"]))
    plan, _ = plan_of(graph)
    plan_checker(graph, plan)
    assert len(plan.kernels) == 1


def test_the_decision_log_is_bounded_by_the_graph(plan_checker):
    graph, inputs = jax_module("transformer_step_bf16")
    plan, _ = plan_of(graph)
    plan_checker(graph, plan, inputs)
    edges = sum(len(node.operands) for node in graph)
    assert len(plan.decisions) <= edges + len(graph)
    assert all(d.action in ("fuse", "refuse") and d.reason for d in plan.decisions)


# -- every real input ------------------------------------------------------------------------------


@pytest.mark.parametrize("module", JAX_MODULES)
def test_every_jax_module_gets_a_correct_plan_no_slower_than_unfused(module, plan_checker):
    graph, inputs = jax_module(module)
    plan, model = plan_of(graph)
    plan_checker(graph, plan, inputs)
    assert plan.total_sol_us <= unfused(graph, model).total_sol_us


@pytest.mark.parametrize("path", ONNX_FILES, ids=lambda p: p.stem)
def test_every_onnx_export_gets_a_correct_plan_no_slower_than_unfused(path, plan_checker):
    graph = import_onnx(path.read_bytes(), path.name)
    plan, model = plan_of(graph)
    plan_checker(graph, plan, onnx_inputs(path))
    assert plan.total_sol_us <= unfused(graph, model).total_sol_us
