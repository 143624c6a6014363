"""CUDA code generation: every emitted kernel compiles with nvcc and, run on the CPU emulator,
computes what the reference interpreter computes.

Hand-written modules cover each finished schedule and its edge cases (rows that are not a
power of two, shorter than a warp, longer than a block; bf16); every candidate plan of them is
emulated, not only the chosen one. Then coverage: every kernel of every strategy's plan of
every module in tests/data (the JAX modules in hlo/ and the ONNX exports in onnx/) is a library
call or is generated, built with nvcc for sm_80 and sm_90, and emulated on the module's real
inputs against the interpreter; nothing is skipped (the run report has the counts).
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from compiler.codegen.check import PRELUDE_DIR, compare, launch_emulated
from compiler.codegen.c_syntax import CodegenUnsupported
from compiler.codegen.emit import emit_kernel
from compiler.codegen.indexing import Ix, delinearize, linear_expr, linearize
from compiler.codegen.plan import COOPERATIVE_GRIDS, ROW_SCHEDULES
from compiler.codegen.schedules import choose_plan, enumerate_plans
from compiler.cost.projected import rank_plans
from compiler.importers.hlo_text import import_hlo
from compiler.ir.interpreter import evaluate_all
from compiler.kernels.grouping import FUSIBLE, node_role
from compiler.kernels.inputs import random_inputs
from compiler.kernels.plan import KernelSpec, build_plan
from compiler.target.devices import get_device
from compiler.target.sol import SolModel

DATA = Path(__file__).resolve().parents[1] / "data" / "hlo"
H100 = get_device("h100")


def _emulator():
    try:
        from compiler.toolchain.emulate import compile_for_emulation
    except ImportError as err:  # the emulator is written alongside; skip until it exists
        pytest.skip(f"CPU emulator not available: {err}")
    return compile_for_emulation


def _toolchain_found() -> bool:
    try:
        from compiler.toolchain.locate import find_toolchain
        find_toolchain()
    except Exception:  # noqa: BLE001 - any missing piece of the toolchain
        return False
    return True


def _nvcc():
    try:
        from compiler.toolchain.nvcc import build_kernels
        from compiler.toolchain.locate import find_toolchain
        find_toolchain()
    except Exception as err:  # noqa: BLE001 - any missing piece of the toolchain skips
        pytest.skip(f"nvcc not available: {err}")
    return build_kernels


def one_kernel(graph, kind: str, dominant: str):
    """The whole graph (every fusible node) as one kernel of `kind`."""
    nodes = [n.name for n in graph if node_role(n) == FUSIBLE]
    model = SolModel(graph, get_device("h100"))
    plan = build_plan(graph, [KernelSpec(nodes=nodes, kind=kind, dominant=dominant)], "test",
                      model)
    (kernel,) = plan.kernels
    return kernel


def run_emitted(graph, emitted_list, values):
    """Compile the kernels into one emulated module, run each; {kernel name: {output: array}}."""
    compile_for_emulation = _emulator()
    if not emitted_list:
        return {}
    source = "\n".join(e.source for e in emitted_list)
    module = compile_for_emulation(source, [e.name for e in emitted_list], [str(PRELUDE_DIR)])
    return {emitted.name: launch_emulated(graph, module, emitted, values)
            for emitted in emitted_list}


def check_all_plans(text: str, kind: str, dominant: str, expect_schedules: set[str]):
    graph = import_hlo(text, "test.hlo")
    kernel = one_kernel(graph, kind, dominant)
    plans = enumerate_plans(graph, kernel)
    assert expect_schedules <= {p.schedule for p in plans}
    emitted = [emit_kernel(graph, kernel, plan, f"k{i}") for i, plan in enumerate(plans)]
    values = evaluate_all(graph, random_inputs(graph, seed=1))
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        problems = compare(graph, results[e.name], values)
        assert not problems, f"{plan.key()}: {problems}\n{e.source}"
    return graph, kernel, plans, emitted


# -- indexing -------------------------------------------------------------------------------


def _locals():
    made = []

    def new_local(expr: str, bound: int) -> str:
        made.append(expr)
        return f"t{len(made)}"
    return made, new_local


def test_reshapes_of_one_linear_index_give_the_same_index_expressions():
    made, new_local = _locals()
    r = Ix.var("r", 32)
    digits = delinearize(r, [4, 8], new_local)
    assert [d.c() for d in digits] == ["r / 8", "r % 8"]
    with_unit_dim = digits + (Ix.const(0),)
    assert linearize(with_unit_dim, [4, 8, 1], new_local) == r
    assert not made


def test_addresses_chain_the_digits_of_each_loop_variable():
    made, new_local = _locals()
    row = delinearize(Ix.var("r", 32), [4, 8], new_local)
    column = delinearize(Ix.var("c", 64), [64], new_local)
    assert linear_expr(row + column, [4, 8, 64]) == "r * 64 + c"


def test_an_empty_shape_delinearizes_without_dividing_by_its_zero_stride():
    """Found by the fuzz suite: f32[170,0,3] has a row-major stride of 0 for its first dim, and
    the index of its (non-existent) elements divided by it (ZeroDivisionError in codegen)."""
    made, new_local = _locals()
    assert [d.c() for d in delinearize(Ix.var("i", 1), [170, 0, 3], new_local)] == \
        ["0", "0", "0"]
    assert [d.c() for d in delinearize(Ix.const(0), [170, 0, 3], new_local)] == ["0", "0", "0"]


EMPTY_ELEMENTWISE = """
HloModule empty
ENTRY e {
  p = f32[0,170,3] parameter(0)
  t = f32[170,0,3] transpose(p), dimensions={1,0,2}
  ROOT n = f32[170,0,3] negate(t)
}
"""

EMPTY_REDUCTION = """
HloModule empty_sum
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[170,0,3] parameter(0)
  n = f32[170,0,3] negate(p)
  z = f32[] constant(0)
  ROOT r = f32[170,3] reduce(n, z), dimensions={1}, to_apply=add
}
"""


def test_kernels_of_empty_tensors_match_the_interpreter():
    """An elementwise kernel with no element to compute, and a reduction of none (its output
    is all the initial value), each generated and emulated under every plan."""
    check_all_plans(EMPTY_ELEMENTWISE, "loop", "n", {"elementwise"})
    check_all_plans(EMPTY_REDUCTION, "input", "r", set())


# -- elementwise ----------------------------------------------------------------------------

ELEMENTWISE = """
HloModule elementwise
ENTRY main {
  x = f32[6,10] parameter(0)
  y = f32[10] parameter(1)
  n = s32[] parameter(2)
  by = f32[6,10] broadcast(y), dimensions={1}
  e = f32[6,10] exponential(x)
  s = f32[6,10] add(e, by)
  t = f32[10,6] transpose(s), dimensions={1,0}
  r = f32[10,6] reverse(t), dimensions={0}
  sl = f32[6,4] slice(x), slice={[0:6], [2:10:2]}
  z = f32[] constant(0.5)
  p = f32[6,11] pad(sl, z), padding=0_0x1_3_1
  c = f32[6,21] concatenate(p, s), dimensions={1}
  io = s32[6,21] iota(), iota_dimension=1
  nb = s32[6,21] broadcast(n), dimensions={}
  lt = pred[6,21] compare(io, nb), direction=LT
  sel = f32[6,21] select(lt, c, c)
  m = f32[6,21] maximum(sel, c)
  q = s32[6,21] convert(m)
  d = s32[6,21] divide(q, nb)
  rs = f32[60] reshape(r)
  ROOT out = (f32[6,21], s32[6,21], f32[60]) tuple(m, d, rs)
}
"""

BF16 = """
HloModule bf16
ENTRY main {
  x = bf16[7,33] parameter(0)
  y = bf16[7,33] parameter(1)
  a = bf16[7,33] multiply(x, y)
  t = bf16[7,33] tanh(a)
  l = bf16[7,33] logistic(x)
  ROOT s = bf16[7,33] add(t, l)
}
"""


def test_elementwise_kernels_match_the_interpreter_for_every_plan():
    check_all_plans(ELEMENTWISE, "loop", "m", {"elementwise"})


def test_bf16_elementwise_rounds_after_every_op_like_the_interpreter():
    _, _, plans, emitted = check_all_plans(BF16, "loop", "s", {"elementwise"})
    assert "fx_round_bf16" in emitted[0].source and "__nv_bfloat16*" in emitted[0].source


def test_every_statement_names_its_node_and_the_line_map_goes_both_ways():
    graph = import_hlo(ELEMENTWISE, "test.hlo")
    kernel = one_kernel(graph, "loop", "m")
    emitted = emit_kernel(graph, kernel, choose_plan(enumerate_plans(graph, kernel)), "k.0")
    assert emitted.name == "k_0"
    assert 'extern "C" __global__' in emitted.source
    lines = emitted.source.splitlines()
    tags = {}
    for number, nodes in emitted.line_nodes.items():
        tag = lines[number - 1].rsplit("// ", 1)[1]
        op = "load" if graph.nodes[nodes[0]].op == "parameter" else graph.nodes[nodes[0]].op
        assert tag.endswith("_" + op.replace("-", "_"))
        assert tags.setdefault(nodes[0], tag) == tag  # one tag per node
    assert len(set(tags.values())) == len(tags)
    assert set(emitted.node_lines) >= {"e", "s", "m", "d"}
    for node, numbers in emitted.node_lines.items():
        assert all(node in emitted.line_nodes[n] for n in numbers)
    assert [p.role for p in emitted.params] == ["input"] * 3 + ["output"] * 3
    assert [p.name for p in emitted.params] == ["in0", "in1", "in2", "out0", "out1", "out2"]


TWO_LAYERS = """
HloModule layers
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[8,40] parameter(0)
  zero = f32[] constant(0)
  layer0.exp = f32[8,40] exponential(x)
  layer0.sum = f32[8] reduce(layer0.exp, zero), dimensions={1}, to_apply=add
  layer0.b = f32[8,40] broadcast(layer0.sum), dimensions={0}
  layer0.y = f32[8,40] divide(layer0.exp, layer0.b)
  block1.e = f32[8,40] exponential(layer0.y)
  block1.total = f32[8] reduce(block1.e, zero), dimensions={1}, to_apply=add
  block1.bc = f32[8,40] broadcast(block1.total), dimensions={0}
  ROOT block1.out = f32[8,40] divide(block1.e, block1.bc)
}
"""


def test_kernels_of_the_same_structure_have_the_same_source_but_for_their_name():
    graph = import_hlo(TWO_LAYERS, "layers.hlo")
    model = SolModel(graph, get_device("h100"))
    specs = [KernelSpec(nodes=[f"{p}.{n}" for n in names], kind="stitch-regional",
                        dominant=f"{p}.{names[1]}")
             for p, names in (("layer0", ("exp", "sum", "b", "y")),
                              ("block1", ("e", "total", "bc", "out")))]
    first, second = build_plan(graph, specs, "test", model).kernels
    a, b = (emit_kernel(graph, k, choose_plan(enumerate_plans(graph, k)), "k")
            for k in (first, second))
    assert a.source == b.source
    assert "layer0" not in a.source and "block1" not in b.source
    assert {"x", "layer0.exp", "layer0.sum", "layer0.y"} == set(a.node_lines)
    assert {"layer0.y", "block1.e", "block1.total", "block1.out"} == set(b.node_lines)
    assert a.line_nodes.keys() == b.line_nodes.keys()  # the broadcasts are index arithmetic


# -- row reductions -------------------------------------------------------------------------


def _row_reduce(rows: int, length: int, dtype: str = "f32") -> str:
    return f"""
HloModule rows
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
max {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT m = {dtype}[] maximum(a, b)
}}
ENTRY main {{
  x = {dtype}[{rows},{length}] parameter(0)
  w = f32[{rows},{length}] convert(x)
  sq = f32[{rows},{length}] multiply(w, w)
  zero = f32[] constant(0)
  ss = f32[{rows}] reduce(sq, zero), dimensions={{1}}, to_apply=add
  ninf = {dtype}[] constant(-inf)
  mx = {dtype}[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max
  one = f32[] constant(1)
  ones = f32[{rows}] broadcast(one), dimensions={{}}
  ep = f32[{rows}] add(ss, ones)
  ROOT out = (f32[{rows}], {dtype}[{rows}], f32[{rows},{length}]) tuple(ep, mx, sq)
}}
"""


@pytest.mark.parametrize("rows, length, dtype", [
    (6, 100, "f32"),     # rows not a power of two
    (37, 5, "f32"),      # rows shorter than a warp: several rows per warp
    (3, 3000, "f32"),    # rows longer than any block: a loop within the block
    (9, 77, "bf16"),     # bf16 input, f32 accumulation
    (1, 1, "f32"),
])
def test_row_reductions_match_the_interpreter_for_every_plan(rows, length, dtype):
    expected = {"row-reduce-warp", "row-reduce-block"}
    if length < 32:
        expected.add("row-reduce-multirow")
    check_all_plans(_row_reduce(rows, length, dtype), "input", "ss", expected)


ROW_MAX = """
HloModule row_max
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(a, b)
}
ENTRY main {
  x = f32[64,256] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max
  inf = f32[] constant(inf)
  mn = f32[64] reduce(x, inf), dimensions={1}, to_apply=min
  ROOT out = (f32[64], f32[64]) tuple(mx, mn)
}
"""


def test_row_maxima_and_minima_propagate_nan_like_the_interpreter_for_every_plan():
    graph = import_hlo(ROW_MAX, "t.hlo")
    kernel = one_kernel(graph, "input", "mx")
    x = np.random.default_rng(3).normal(size=(64, 256)).astype(np.float32)
    x[5, 0] = x[9, 255] = x[20, 77] = np.nan     # first, last and a middle element
    x[30, :] = np.nan
    values = evaluate_all(graph, [x])
    plans = enumerate_plans(graph, kernel)
    emitted = [emit_kernel(graph, kernel, plan, f"k{i}") for i, plan in enumerate(plans)]
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        assert not compare(graph, results[e.name], values), plan.key()
        got = results[e.name]["mx"]
        assert np.isnan(got[[5, 9, 20, 30]]).all() and not np.isnan(got[:5]).any()


def test_a_row_max_loop_has_no_branch_between_its_loads():
    """nvcc does not move a load above a branch: a NaN test that branches on each loaded
    value would leave one load in flight per thread. The PTX of the unrolled loop reads the
    row's elements back to back."""
    build_kernels = _nvcc()
    graph = import_hlo(ROW_MAX, "t.hlo")
    kernel = one_kernel(graph, "input", "mx")
    plan = next(p for p in enumerate_plans(graph, kernel) if p.schedule == "row-reduce-warp")
    emitted = emit_kernel(graph, kernel, plan, "row_max")
    (result,) = build_kernels({"row_max": emitted.source}, "sm_90", [str(PRELUDE_DIR)]).values()
    assert result.ok, result.error
    loads = [m.start() for m in re.finditer(r"ld\.global", result.ptx)]
    assert len(loads) >= 2
    assert "bra" not in result.ptx[loads[0]:loads[1]], result.ptx


# -- column reductions ----------------------------------------------------------------------


def _column_reduce(shape: tuple, dims: tuple, dtype: str = "f32") -> str:
    """A bias-gradient-like kernel: sum and max of x over `dims` (not innermost), with a
    multi-output sibling of x's shape and a consumer of the sum."""
    text = ",".join(map(str, shape))
    kept = [n for d, n in enumerate(shape) if d not in dims]
    out = ",".join(map(str, kept))
    dims_text = ",".join(map(str, dims))
    return f"""
HloModule columns
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
max {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT m = {dtype}[] maximum(a, b)
}}
ENTRY main {{
  x = {dtype}[{text}] parameter(0)
  w = f32[{text}] convert(x)
  sq = f32[{text}] multiply(w, w)
  zero = f32[] constant(0)
  ss = f32[{out}] reduce(sq, zero), dimensions={{{dims_text}}}, to_apply=add
  ninf = {dtype}[] constant(-inf)
  mx = {dtype}[{out}] reduce(x, ninf), dimensions={{{dims_text}}}, to_apply=max
  two = f32[] constant(2)
  twos = f32[{out}] broadcast(two), dimensions={{}}
  ep = f32[{out}] multiply(ss, twos)
  ROOT out = (f32[{out}], {dtype}[{out}], f32[{text}]) tuple(ep, mx, sq)
}}
"""


@pytest.mark.parametrize("shape, dims, dtype", [
    ((300, 77), (0,), "f32"),       # columns not a power of two
    ((4099, 3), (0,), "f32"),       # few columns, many rows
    ((2, 9, 40), (0, 1), "bf16"),   # bf16, two leading dims reduced
    ((6, 5, 7), (0, 2), "f32"),     # reduced dims interleaved with a kept one
    ((1, 1, 32), (0, 1), "f32"),    # nothing to reduce
])
def test_column_reductions_match_the_interpreter_for_every_plan(shape, dims, dtype):
    _, _, plans, emitted = check_all_plans(_column_reduce(shape, dims, dtype), "input", "ss",
                                           {"column-reduce"})
    chosen = choose_plan(plans)
    assert chosen.schedule == "column-reduce"
    column_source = next(e.source for p, e in zip(plans, emitted) if p == chosen)
    assert column_source.count("for (int j = g;") == 1  # both reductions share one loop


SOFTMAX = """
HloModule softmax
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[3,5,50] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[3,5] reduce(x, ninf), dimensions={2}, to_apply=max
  mb = f32[3,5,50] broadcast(mx), dimensions={0,1}
  d = f32[3,5,50] subtract(x, mb)
  e = f32[3,5,50] exponential(d)
  zero = f32[] constant(0)
  s = f32[3,5] reduce(e, zero), dimensions={2}, to_apply=add
  sr = f32[15,1] reshape(s)
  s2 = f32[3,5] reshape(sr)
  sb = f32[3,5,50] broadcast(s2), dimensions={0,1}
  ROOT out = f32[3,5,50] divide(e, sb)
}
"""


def test_regional_stitching_of_softmax_matches_the_interpreter_for_every_plan():
    _, _, _, emitted = check_all_plans(SOFTMAX, "stitch-regional", "s", {"row-reduce-block"})
    chosen = emitted[0].source
    assert chosen.count("fx_group_allreduce") == 2  # one phase per reduction, no recompute


def test_global_stitching_shares_column_sums_across_blocks_behind_a_grid_barrier():
    """layer_norm_bwd's stitch kernel: row reductions per block, then gamma's and beta's
    gradients summed over every row after fx_grid_sync(), for every cooperative row plan (the
    phased ones are test_codegen_phased.py's)."""
    from compiler.fusion.explore import explore

    graph = import_hlo((DATA / "layer_norm_bwd.hlo").read_text(), "layer_norm_bwd.hlo")
    (kernel,) = explore(graph, "h100", ["stitch"])["stitch"].kernels
    assert kernel.kind == "stitch-global"
    plans = [p for p in enumerate_plans(graph, kernel)
             if p.cooperative and p.schedule in ROW_SCHEDULES]
    assert plans and choose_plan(enumerate_plans(graph, kernel)) in plans
    emitted = [emit_kernel(graph, kernel, plan, f"g{i}") for i, plan in enumerate(plans)]
    inputs = np.load(DATA / "layer_norm_bwd.inputs.npz")
    values = evaluate_all(graph, [inputs[f"arg{i}"] for i in range(len(graph.parameters))])
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        assert e.cooperative and e.source.count("fx_grid_sync();") == 1
        assert e.params[-1].name == "scratch" and e.params[-1].dims == (plan.scratch_bytes,)
        assert e.grid[0] <= max(COOPERATIVE_GRIDS)
        problems = compare(graph, results[e.name], values)
        assert not problems, f"{plan.key()}: {problems}"
    build_kernels = _nvcc()
    for arch in ("sm_80", "sm_90"):
        built = build_kernels({e.name: e.source for e in emitted[:3]}, arch, [str(PRELUDE_DIR)])
        assert all(r.ok for r in built.values()), {n: r.error for n, r in built.items()}


def test_library_kernels_are_not_generated():
    text = """
HloModule dot
ENTRY main {
  a = f32[4,8] parameter(0)
  b = f32[8,2] parameter(1)
  ROOT d = f32[4,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    graph = import_hlo(text, "dot.hlo")
    model = SolModel(graph, get_device("h100"))
    (kernel,) = build_plan(graph, [KernelSpec(nodes=["d"], kind="library")], "t", model).kernels
    assert enumerate_plans(graph, kernel) == []
    assert emit_kernel(graph, kernel, None, "dot").library


def test_emitted_kernels_compile_with_nvcc_for_sm80_and_sm90():
    build_kernels = _nvcc()
    sources = {}
    for i, (text, kind, dominant) in enumerate([
            (ELEMENTWISE, "loop", "m"), (BF16, "loop", "s"),
            (_row_reduce(6, 100), "input", "ss"), (_row_reduce(37, 5, "bf16"), "input", "ss"),
            (_column_reduce((300, 77), (0,)), "input", "ss"),
            (_column_reduce((2, 9, 40), (0, 1), "bf16"), "input", "ss"),
            (SOFTMAX, "stitch-regional", "s")]):
        graph = import_hlo(text, "t.hlo")
        kernel = one_kernel(graph, kind, dominant)
        for j, plan in enumerate(enumerate_plans(graph, kernel)[:4]):
            emitted = emit_kernel(graph, kernel, plan, f"k{i}_{j}")
            sources[emitted.name] = emitted.source
    for arch in ("sm_80", "sm_90"):
        results = build_kernels(sources, arch, [str(PRELUDE_DIR)])
        failed = {name: r.error for name, r in results.items() if not r.ok}
        assert not failed, failed


# -- gather and reduce-window -----------------------------------------------------------------

GATHER = """
HloModule gathers
ENTRY main {
  table = f32[10,8] parameter(0)
  ids = s32[2,3] parameter(1)
  x = f32[6,7] parameter(2)
  pairs = s32[4,3,2] parameter(3)
  columns = s32[2,5] parameter(4)
  cube = f32[3,4,5] parameter(5)
  picks = s32[3,2,1] parameter(6)
  wide = s64[5] parameter(7)
  emb = f32[2,3,8] gather(table, ids),
      offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2,
      slice_sizes={1,8}
  scaled = f32[2,3,8] multiply(emb, emb)
  take = f32[4,3] gather(x, pairs),
      offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=2,
      slice_sizes={1,1}
  rows = f32[3,5] gather(x, columns),
      offset_dims={0}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=0,
      slice_sizes={1,3}
  batched = f32[3,2,2] gather(cube, picks),
      offset_dims={2}, collapsed_slice_dims={2}, start_index_map={2}, operand_batching_dims={0},
      start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,2,1}
  far = f32[8,5] gather(table, wide),
      offset_dims={0}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1,
      slice_sizes={1,8}
  ROOT out = (f32[2,3,8], f32[4,3], f32[3,5], f32[3,2,2], f32[8,5])
      tuple(scaled, take, rows, batched, far)
}
"""


def _gather_inputs(graph) -> list:
    """Indices in range, below 0 and past the end (XLA clamps the start into the operand)."""
    rng = np.random.default_rng(3)
    shapes = [graph.nodes[p].array_shape for p in graph.parameters]
    args = []
    for shape in shapes:
        if shape.dtype.is_float:
            args.append(rng.standard_normal(shape.dims).astype(shape.dtype.numpy))
        else:
            args.append(rng.integers(-4, 14, shape.dims).astype(shape.dtype.numpy))
    args[1].reshape(-1)[:3] = [0, -3, 12]
    args[7][:] = [2, -(2**40), 2**40, 9, 2**31 + 1]
    return args


REDUCE_WINDOW = """
HloModule windows
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
min {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(a, b)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
iadd {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
badd {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT s = bf16[] add(a, b)
}
ENTRY main {
  x = f32[2,9,9,3] parameter(0)
  c = f32[4,12] parameter(1)
  n = s32[4,12] parameter(2)
  h = bf16[7,6] parameter(3)
  ninf = f32[] constant(-inf)
  pool = f32[2,5,5,3] reduce-window(x, ninf),
      window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
  zero = f32[] constant(0)
  zeros = f32[2,5,5,3] broadcast(zero), dimensions={}
  relu = f32[2,5,5,3] maximum(pool, zeros)
  half = f32[] constant(0.5)
  low = f32[2,4,4,3] reduce-window(x, half),
      window={size=1x2x3x1 stride=1x2x2x1 pad=0_0x0_0x0_0x0_0}, to_apply=min
  cumsum = f32[4,12] reduce-window(c, zero), window={size=1x12 pad=0_0x11_0}, to_apply=add
  izero = s32[] constant(0)
  icumsum = s32[4,12] reduce-window(n, izero), window={size=4x1 pad=3_0x0_0}, to_apply=iadd
  bzero = bf16[] constant(0)
  dilated = bf16[7,6] reduce-window(h, bzero),
      window={size=2x3 stride=2x1 pad=1_0x2_2 lhs_dilate=2x1 rhs_dilate=1x2}, to_apply=badd
  ROOT out = (f32[2,5,5,3], f32[2,4,4,3], f32[4,12], s32[4,12], bf16[7,6])
      tuple(relu, low, cumsum, icumsum, dilated)
}
"""


@pytest.mark.parametrize("text, inputs", [(GATHER, _gather_inputs), (REDUCE_WINDOW, None)],
                         ids=["gather", "reduce-window"])
def test_gathers_and_reduce_windows_match_the_interpreter_and_build(text, inputs):
    graph = import_hlo(text, "t.hlo")
    kernel = one_kernel(graph, "loop", graph.nodes[graph.root].operands[0])
    plans = enumerate_plans(graph, kernel)
    emitted = [emit_kernel(graph, kernel, plan, f"k{i}") for i, plan in enumerate(plans)]
    args = inputs(graph) if inputs else random_inputs(graph, seed=1)
    values = evaluate_all(graph, args)
    results = run_emitted(graph, emitted, values)
    for plan, e in zip(plans, emitted):
        problems = compare(graph, results[e.name], values)
        assert not problems, f"{plan.key()}: {problems}\n{e.source}"
    build_kernels = _nvcc()
    for arch in ("sm_80", "sm_90"):
        built = build_kernels({e.name: e.source for e in emitted[:2]}, arch, [str(PRELUDE_DIR)])
        assert all(r.ok for r in built.values()), {n: r.error for n, r in built.items()}


# -- every module of tests/data: coverage --------------------------------------------------

ONNX_DATA = DATA.parent / "onnx"
MODULE_FILES = sorted(DATA.glob("*.hlo")) + sorted(ONNX_DATA.glob("*.onnx"))


def _module_values(path: Path, graph) -> dict:
    """The interpreter's values of every node on the module's real inputs (the .inputs.npz
    beside the file; the ONNX exports of one model share theirs)."""
    inputs = np.load(path.parent / f"{path.name.split('.')[0]}.inputs.npz")
    return evaluate_all(graph, [inputs[f"arg{i}"] for i in range(len(graph.parameters))])


def _structure(emitted) -> str:
    """The source with its function's name taken out: kernels of the same structure share it."""
    return re.sub(rf"\b{emitted.name}\b", "FX_KERNEL", emitted.source)


def run_emitted_deduplicated(graph, emitted_list, values):
    """`run_emitted`, compiling each distinct structure once: every kernel still runs on its
    own inputs, launched through the function of the first kernel with its source."""
    compile_for_emulation = _emulator()
    representative: dict[str, object] = {}
    for e in emitted_list:
        representative.setdefault(_structure(e), e)
    if not representative:
        return {}
    unique = list(representative.values())
    module = compile_for_emulation("\n".join(e.source for e in unique),
                                   [e.name for e in unique], [str(PRELUDE_DIR)])
    return {e.name: launch_emulated(graph, module,
                                    dataclasses.replace(e, name=representative[_structure(e)].name),
                                    values)
            for e in emitted_list}


@pytest.mark.parametrize("path", MODULE_FILES, ids=lambda p: p.name)
def test_every_kernel_of_every_plan_is_generated_built_and_matches_the_interpreter(path,
                                                                                    run_report):
    """Coverage: for every module in tests/data and every strategy, each kernel is a library
    call or is generated, and every generated kernel matches the interpreter on the CPU
    emulator (on the module's real inputs) and builds with nvcc for sm_80 and sm_90."""
    from compiler.fusion.explore import explore
    from compiler.importers import load_graph

    graph = load_graph(str(path))
    values = _module_values(path, graph)
    counts: collections.Counter = collections.Counter()
    emitted, kinds, not_generated = [], {}, []
    for strategy, plan in explore(graph).items():
        for kernel in plan.kernels:
            if kernel.kind == "library":
                counts["library"] += 1
                continue
            # The plan `codegen` emits (the projected model's fastest) and the one `explore`
            # projects (the heuristic's), when they differ.
            candidates = enumerate_plans(graph, kernel)
            ranked = rank_plans(graph, kernel, candidates, H100)
            chosen = [ranked[0][0] if ranked else choose_plan(candidates)]
            if choose_plan(candidates) != chosen[0]:
                chosen.append(choose_plan(candidates))
            for k, codegen_plan in enumerate(chosen):
                try:
                    emitted.append(emit_kernel(graph, kernel, codegen_plan,
                                               f"{strategy}_{kernel.name}" + "_h" * k))
                except CodegenUnsupported as err:
                    not_generated.append(f"{strategy} {kernel.name} ({kernel.kind}): {err}")
                    continue
                kinds[emitted[-1].name] = f"{kernel.kind}/{codegen_plan.schedule}"
    sources = {e.name: e.source for e in emitted}
    builds = {}
    if sources and _toolchain_found():
        # nvcc for both architectures runs while g++ compiles the emulated module.
        from compiler.toolchain.nvcc import build_kernels

        pool = concurrent.futures.ThreadPoolExecutor(2)
        builds = {arch: pool.submit(build_kernels, sources, arch, [str(PRELUDE_DIR)])
                  for arch in ("sm_80", "sm_90")}
        pool.shutdown(wait=False)
    results = run_emitted_deduplicated(graph, emitted, values)
    failures = []
    for e in emitted:
        problems = compare(graph, results[e.name], values)
        if problems:
            failures.append((e.name, problems))
        else:
            counts[kinds[e.name]] += 1
    library = counts.pop("library", 0)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    distinct = len({_structure(e) for e in emitted})
    run_report.append(f"codegen {path.name}: {len(emitted)} generated ({distinct} distinct "
                      f"sources), {sum(counts.values())} emulated correctly ({summary}), "
                      f"{library} library, {len(not_generated)} not generated")
    assert not not_generated, not_generated
    assert not failures, failures
    if sources:
        _nvcc()  # skips here when there is no toolchain
    for arch, built in builds.items():
        failed = {name: r.error for name, r in built.result().items() if not r.ok}
        assert not failed, (arch, failed)


def test_the_codegen_command_builds_and_emulates_every_kernel(tmp_path):
    import json
    import subprocess
    import sys

    root = Path(__file__).parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "codegen", str(DATA / "softmax.hlo"), "--strategy",
         "xla,stitch", "--emulate", "--json", "--out", str(tmp_path)],
        cwd=root, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for strategy in ("xla", "stitch"):
        for kernel in data["strategies"][strategy]["kernels"]:
            assert kernel["codegen_error"] is None, kernel["codegen_error"]
            assert kernel["registers"] > 0 and kernel["block_size"] > 0
            assert kernel["max_abs_error"] is not None and kernel["max_abs_error"] < 1e-5
            assert kernel["candidate_plans"] and kernel["schedule"]
            assert Path(kernel["source_path"]).read_text().startswith('#include "fx_prelude.cuh"')
